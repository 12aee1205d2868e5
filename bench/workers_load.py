"""Workers under load and faults (not part of CI; tests/workers/test_worker_load.py runs a small one).

RUNS queued runs of tests/workers/programs/load.sg (three destructive charges to the counting MCP server
each, every one counted in a @persistent total the runs share) and WORKERS workers of concurrency C; the first
two workers are killed with SIGKILL at random moments KILLS times in all, each restarted at once; runs that
halt on a charge of unknown outcome are resolved from the server's ledger as an operator would, which queues
them again for a worker. Then it checks and reports: runs completed (exactly once: a completed run is never
claimed again), double fires and lost increments (both must be 0), missing charges, overlapping executions of
one run (the execution log of programs/hold.py; must be 0), recoveries, and processes left running.

    python bench/workers_load.py [--backend postgres|sqlite|both] [--isolation thread|process] [--runs 200]
                                 [--workers 4] [--concurrency 2] [--kills 6] [--seed S]

Workers run in `--isolation` mode (default `thread`, the worker's default).

PostgreSQL is a throwaway cluster (tests/pgcluster.py). Exit 1 when an invariant does not hold.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from timing import REPO

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "workers"))
sys.path.insert(0, str(REPO))

from worker_harness import check_load, drive_load, make_project, read_field, sage_env, wait_until_gone  # noqa: E402

CHARGES = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--isolation", choices=["thread", "process"], default="thread")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--seed", type=int, default=2026)
    options = parser.parse_args()
    backends = ["sqlite", "postgres"] if options.backend == "both" else [options.backend]
    results = [soak(options, backend) for backend in backends]
    print("summary: " + "; ".join(line for _, line in results))
    return 0 if all(ok for ok, _ in results) else 1


def soak(options: argparse.Namespace, backend: str) -> tuple[bool, str]:
    """One soak on one backend: whether every invariant held, and its one-line result."""
    cluster = None
    with tempfile.TemporaryDirectory(prefix="sage-workers-load-") as tmp:
        try:
            url = None
            if backend == "postgres":
                from pgcluster import start_cluster
                cluster = start_cluster()
                url = cluster.new_database()
            root = Path(tmp)
            project = make_project(root, "load")
            env = sage_env(project, root / "cache", state_url=url)
            logs = root / "logs"
            logs.mkdir()
            load = drive_load(project, env, logs, options.runs, options.workers, min(2, options.workers),
                              options.kills, random.Random(options.seed), concurrency=options.concurrency,
                              timeout=3600, isolation=options.isolation)
            report = check_load(project, env, load.names, CHARGES, read_field(project, env, "Main", "total"))
            left = wait_until_gone(project)
        finally:
            if cluster is not None:
                cluster.destroy()
    print(f"backend {backend}: {report.runs} runs, {options.workers} {options.isolation}-mode workers (concurrency "
          f"{options.concurrency}), {load.kills} SIGKILLs of workers, {load.seconds:.0f} s")
    print(f"  completed {report.completed}/{report.runs}, executions {report.executions}, recoveries "
          f"{report.recoveries}, halts resolved {load.resolved}")
    print(f"  double fires {report.double_fires}, lost increments {report.lost_increments}, missing charges "
          f"{report.missing_charges}, overlapping executions {report.overlaps}, processes left {len(left)}")
    ok = (report.completed == report.runs == options.runs and report.double_fires == 0 and report.missing_charges == 0
          and report.lost_increments == 0 and report.overlaps == 0 and not left)
    verdict = "OK" if ok else "FAILED"
    print(verdict)
    return ok, (f"{backend} {options.isolation}: completed {report.completed}/{options.runs}, double fires "
            f"{report.double_fires}, lost increments {report.lost_increments}, overlaps {report.overlaps}, "
            f"left {len(left)}, {load.kills} kills, {load.seconds:.0f} s: {verdict} (target: all completed once, "
            f"0 double fires, 0 lost, 0 overlaps, 0 left)")


if __name__ == "__main__":
    sys.exit(main())
