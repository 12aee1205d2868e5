"""Runs of one compiled Program from Python (SPEC §20): a `Program.run` of examples/hello.sg after the first,
against its floor — starting and joining one thread, which every run does for its entry agent — and against a
whole `sage run` process of the same program. Target: a run ≤ 2 ms.

    python bench/engine.py [--runs N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from timing import REPO, bench_env, sage_command, timed_run

sys.path.insert(0, str(REPO))

import sagepy  # noqa: E402  (the repository's sagepy, not an installed one)

HELLO = REPO / "examples" / "hello.sg"


def per_run_ms(fn, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs per round (default 1000)")
    args = parser.parse_args()
    program = sagepy.compile(HELLO)
    quiet = dict(out=lambda _: None, err=lambda _: None)
    program.run(host=sagepy.Host(**quiet))

    def one_run() -> None:
        program.run(host=sagepy.Host(**quiet))

    def one_thread() -> None:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()

    rounds = {"thread": [], "run": []}
    for _ in range(5):
        rounds["thread"].append(per_run_ms(one_thread, args.runs))
        rounds["run"].append(per_run_ms(one_run, args.runs))
    env = bench_env(Path(tempfile.mkdtemp(prefix="sage-bench-")))
    timed_run([*sage_command(), "run", str(HELLO)], env)
    process = statistics.median(timed_run([*sage_command(), "run", str(HELLO)], env)[0] * 1000 for _ in range(5))
    floor, run = statistics.median(rounds["thread"]), statistics.median(rounds["run"])
    print(f"{args.runs} runs x 5 rounds, medians:")
    print(f"{'case':<22}{'ms per run':>12}{'ratio':>9}   target")
    print(f"{'thread start + join':<22}{floor:>12.3f}{1.0:>8.1f}x")
    print(f"{'Program.run (hello)':<22}{run:>12.3f}{run / floor:>8.1f}x   <= 2 ms {'ok' if run <= 2 else 'MISSED'}")
    print(f"{'sage run (process)':<22}{process:>12.3f}{process / floor:>8.1f}x")


if __name__ == "__main__":
    main()
