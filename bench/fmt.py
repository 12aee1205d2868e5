"""Cost of `sage fmt` on a 5,000-line program, as a ratio to `sage check` of the same program.

The program is bench/check.py's generated one. Four commands run in turn in every round (interleaved, so
machine noise hits all of them alike):
  check       `sage check` of the program with its AST cache already populated;
  fmt         `sage fmt --check` of it, cache populated: the input's AST comes from the cache, the output is
              printed, and (the program being laid out otherwise) its AST checked against the input's;
  check-cold  `sage check` with a fresh, empty SAGE_CACHE_DIR (the 5,000 lines are parsed);
  fmt-cold    `sage fmt --check` with a fresh cache: the input and the formatted output are both parsed.
The medians and the ratios fmt / check are printed. Before timing, the script verifies that the program checks
clean and that `sage fmt --check` reports it as one that would change (so the output is checked each time).

    python bench/fmt.py [--runs N] [--lines N]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from check import generate
from timing import bench_env, median_ms, require_success, sage_command, timed_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="rounds to time (default 10)")
    parser.add_argument("--lines", type=int, default=5000, help="size of the generated program (default 5000)")
    args = parser.parse_args()

    sage = sage_command()
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-fmt-"))
    try:
        program = scratch / "big.sg"
        program.write_text(generate(args.lines), encoding="utf-8")
        lines = program.read_text(encoding="utf-8").count("\n")
        check = [*sage, "check", str(program)]
        fmt = [*sage, "fmt", "--check", str(program)]
        warm_env = bench_env(scratch / "warm-cache")

        _, result = timed_run(check, warm_env)
        require_success("sage check of the generated program", result)
        _, result = timed_run(fmt, warm_env)
        if result.returncode != 1 or result.stdout.strip() != f"would reformat {program}":
            raise SystemExit(f"`sage fmt --check` should report the program as one to reformat:\n"
                             f"{result.stdout}{result.stderr}")

        samples: dict[str, list[float]] = {"check": [], "fmt": [], "check-cold": [], "fmt-cold": []}
        for i in range(args.runs):
            for case, command in (("check", check), ("fmt", fmt)):
                seconds, result = timed_run(command, warm_env)
                samples[case].append(seconds)
            for case, command in (("check-cold", check), ("fmt-cold", fmt)):
                seconds, result = timed_run(command, bench_env(scratch / f"{case}-cache-{i}"))
                samples[case].append(seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"sage command: {' '.join(sage)}")
    print(f"generated program: {lines} lines")
    print(f"{args.runs} interleaved rounds, medians:")
    print(f"{'case':<12}{'median ms':>11}{'ratio':>9}")
    for fmt_case, check_case in (("fmt", "check"), ("fmt-cold", "check-cold")):
        base = median_ms(samples[check_case])
        ms = median_ms(samples[fmt_case])
        print(f"{check_case:<12}{base:>11.1f}{1.0:>8.1f}x")
        print(f"{fmt_case:<12}{ms:>11.1f}{ms / base:>8.2f}x  (to {check_case})")


if __name__ == "__main__":
    main()
