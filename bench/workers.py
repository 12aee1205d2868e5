"""Throughput of queued runs (not part of CI): N short runs executed by 1, 2 and 4 workers on PostgreSQL, against
the same runs as sequential `sage run --no-journal` processes.

The run: a program of a few journaled steps (a clock read, an environment read, two field writes) that prints
one line. The baseline starts N `sage run --no-journal -- <i>` processes one after another; each worker
measurement queues N runs and starts W workers with `--drain` (concurrency 1 each, so that W processes run at
once), timing until the last worker exits. Reported: runs/s of each, the ratio against the baseline, and
the per-run overhead of one worker over the baseline (claiming, the child process's lease, journaling the
steps, storing the output line, recording the end), which is what a queued run costs beyond a plain run.

    python bench/workers.py [--runs 40] [--backend postgres|sqlite]

The machine's cores bound what more workers can gain: each run is a Python process of its own.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, require_success, sage_command

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "workers"))
sys.path.insert(0, str(REPO))

from worker_harness import submit_many  # noqa: E402

PROGRAM = """\
agent Main {
    @persistent seen: Int

    on start {
        let started = now_ms();
        let home = env_or("HOME", "?");
        let name = unwrap_or(first(args()), "-");
        self.seen.set(self.seen.get() + 1);
        self.seen.update(|n: Int| n + 1);
        print("run {name} at {started} in {home}");
        yield(0);
    }
}

run Main;
"""
GROVE = '[project]\nname = "throughput"\n\n[persistence]\nbackend = "sqlite"\n'


def make_project(root: Path) -> Path:
    project = root / "throughput"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    (project / "grove.toml").write_text(GROVE, encoding="utf-8")
    return project


def baseline(project: Path, env: dict[str, str], runs: int) -> float:
    started = time.perf_counter()
    for i in range(runs):
        result = subprocess.run([*sage_command(), "run", "--no-journal", "--", str(i)], cwd=project, env=env,
                                capture_output=True, text=True)
        require_success("sage run --no-journal", result)
    return time.perf_counter() - started


def with_workers(project: Path, env: dict[str, str], runs: int, workers: int) -> float:
    submit_many(project, env, [str(i) for i in range(runs)])
    started = time.perf_counter()
    pool = [subprocess.Popen([*sage_command(), "worker", "--drain", "--poll-ms", "50"], cwd=project, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    for process in pool:
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed: {err}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    options = parser.parse_args()
    cluster = None
    with tempfile.TemporaryDirectory(prefix="sage-workers-bench-") as tmp:
        try:
            root = Path(tmp)
            env = bench_env(root / "cache")
            env = {k: v for k, v in env.items() if k != "SAGE_STATE_URL"}
            if options.backend == "postgres":
                from pgcluster import start_cluster
                cluster = start_cluster()
                env["SAGE_STATE_URL"] = cluster.new_database()
            project = make_project(root)
            n = options.runs
            baseline(project, env, 2)   # warms the AST cache and the bytecode
            plain = baseline(project, env, n)
            print(f"{n} runs on {options.backend}, {os.cpu_count()} cores")
            print(f"  sequential sage run --no-journal: {n / plain:6.2f} runs/s  ({plain / n * 1000:6.0f} ms a run)")
            one = None
            for workers in (1, 2, 4):
                seconds = with_workers(project, env, n, workers)
                one = seconds if workers == 1 else one
                print(f"  {workers} worker{'s' if workers > 1 else ' '}:                      {n / seconds:6.2f} runs/s  "
                      f"({seconds / n * 1000:6.0f} ms a run, {plain / seconds:4.2f}x the baseline)")
            print(f"  per-run overhead of a queued run (1 worker - baseline): {(one - plain) / n * 1000:.0f} ms")
        finally:
            if cluster is not None:
                cluster.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
