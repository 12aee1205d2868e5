"""Start-up cost of `sage run examples/hello.sg`, as a ratio to `python -c pass`.

Three commands run in turn in every round (interleaved, so machine noise hits all of them alike):
  python   `python -c pass`, the floor any Python program pays;
  warm     `sage run` with the AST cache already populated (the normal case for an unchanged program);
  cold     `sage run` with a fresh, empty SAGE_CACHE_DIR (first run: the parser must be built or loaded).
Targets: warm <= 2.0x python, cold <= 6.0x python (issue 22).

    python bench/startup.py [--runs N]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from timing import REPO, bench_env, median_ms, require_success, sage_command, timed_run

HELLO = REPO / "examples" / "hello.sg"
TARGETS = {"warm": 2.0, "cold": 6.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="rounds to time (default 10)")
    args = parser.parse_args()

    sage = sage_command()
    run_hello = [*sage, "run", str(HELLO)]
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-"))
    try:
        warm_env = bench_env(scratch / "warm-cache")
        _, first = timed_run(run_hello, warm_env)
        require_success("sage run (cache warm-up)", first)

        samples: dict[str, list[float]] = {"python": [], "warm": [], "cold": []}
        for i in range(args.runs):
            seconds, _ = timed_run([sys.executable, "-c", "pass"], warm_env)
            samples["python"].append(seconds)
            seconds, result = timed_run(run_hello, warm_env)
            require_success("sage run (warm)", result)
            samples["warm"].append(seconds)
            seconds, result = timed_run(run_hello, bench_env(scratch / f"cold-cache-{i}"))
            require_success("sage run (cold)", result)
            samples["cold"].append(seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    base = median_ms(samples["python"])
    print(f"sage command: {' '.join(sage)}")
    print(f"{args.runs} interleaved rounds, medians:")
    print(f"{'case':<8}{'median ms':>11}{'ratio':>9}{'target':>9}")
    print(f"{'python':<8}{base:>11.1f}{1.0:>8.1f}x{'':>9}")
    for case, target in TARGETS.items():
        ms = median_ms(samples[case])
        ratio = ms / base
        verdict = "ok" if ratio <= target else "over"
        print(f"{case:<8}{ms:>11.1f}{ratio:>8.1f}x{f'<= {target:g}x':>9}  {verdict}")


if __name__ == "__main__":
    main()
