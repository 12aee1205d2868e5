"""Soak test of durable runs (not part of CI): real `sage run` processes killed with SIGKILL at random moments.

Each schedule is one durable run of tests/durable/programs/soak.sg in a fresh project: twelve destructive
`slow_charge` calls to the counting MCP server (each to its own account, so a call that fires twice shows as
a second ledger line), each followed by an increment of a `@persistent` counter. The run is started, killed
with SIGKILL after a random delay, resumed with `sage run --resume`, killed again or not (one to three kills
per schedule), and finally resumed until it ends. A resume that halts on a charge of unknown outcome is
resolved from the server's ledger (`sage runs resolve … --ok <receipt>` when it charged, `--not-run` when
not), as an operator would. Delays are drawn uniformly over the time an uncrashed run takes, so kills land in
start-up, mid-call, between a call and its record, and in the middle of field writes.

At the end of each schedule the script checks the ledger (each of the twelve charges exactly once, receipt 1)
and the counter (exactly 12), and reports: runs, crashes (kills that hit a live process), resumes, halts,
double fires and lost increments, which must both be 0; also missing charges and runs that did not end with
exit code 0. It waits for each killed run's server to exit before it reads the ledger.

With `--workers-mode` the run is queued with `sage runs submit` instead, and what is killed is a worker
(`sage worker --drain`) executing it: the run's own process dies with its worker, as on a crashed machine,
and the next worker resumes the interrupted run; a halted run resolved from the ledger is queued again for
the next worker. With `--backend postgres` every schedule's project keeps its runs in one database of a
throwaway PostgreSQL cluster (tests/pgcluster.py), each under its own project name.

    python bench/soak_durable.py [--schedules N] [--seed S] [--workers W] [--max-seconds T]
                                 [--backend sqlite|postgres] [--workers-mode]

Seeded: the same --seed gives the same kill delays (the moments they hit still vary with the machine's load).
Stops starting schedules after --max-seconds (default 1500) and reports what ran.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from timing import REPO

sys.path.insert(0, str(REPO / "tests" / "durable"))
sys.path.insert(0, str(REPO))

from durable_harness import (make_project, read_field, read_ledger, resolve_halt, run_id_in,  # noqa: E402
                             run_sage, run_status, sage_command, sage_env, wait_for_servers_to_end)

PROGRAM = "soak"
CHARGES = 12
MAX_ATTEMPTS = 12


@dataclass
class Outcome:
    crashes: int = 0
    resumes: int = 0
    halts: int = 0
    double_fires: int = 0
    missing_charges: int = 0
    lost_increments: int = 0
    extra_increments: int = 0
    bad_exit: int = 0
    left_behind: int = 0
    notes: list[str] = field(default_factory=list)


def killed_attempt(project: Path, args: list[str], env: dict[str, str], log: Path,
                   delay: float) -> tuple[bool, int, str]:
    """Start `sage ARGS`, SIGKILL it after `delay` s unless it ended first: (whether the kill hit a live
    process, exit code, stderr)."""
    err_path = log.with_suffix(".err")
    with open(log, "ab") as out, open(err_path, "wb") as err:
        process = subprocess.Popen([*sage_command(), *args], cwd=project, env=env, stdout=out, stderr=err)
        try:
            process.wait(timeout=delay)
            hit = False
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            hit = True
    return hit, process.returncode, err_path.read_text(encoding="utf-8", errors="replace")


class Schedule:
    """One durable run driven through its kills to its end."""

    def __init__(self, number: int, delays: list[float], root: Path, cache: Path, state_url: str | None = None,
                 workers_mode: bool = False) -> None:
        self.number = number
        self.delays = delays
        self.root = root
        self.workers_mode = workers_mode
        self.project = make_project(root, PROGRAM, f"schedule-{number}", state_url=state_url)
        self.env = sage_env(self.project, cache)
        self.run_id: str | None = None
        self.outcome = Outcome()
        self.attempts = 0

    def next_args(self) -> list[str]:
        """Resume the run when it exists (a kill during start-up may come before it is recorded)."""
        if self.run_id is not None and run_status(self.project, self.run_id) is not None:
            return ["run", "--resume", self.run_id]
        return ["run"]

    def submit(self) -> None:
        done = subprocess.run([*sage_command(), "runs", "submit"], cwd=self.project, env=self.env,
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            sys.exit(f"sage runs submit failed: {done.stderr}")
        self.run_id = done.stdout.strip()

    def attempt(self, delay: float | None) -> tuple[bool, int, str]:
        """One `sage run` (or, in workers mode, one `sage worker --drain`), killed after `delay` s (None:
        never); (killed, exit code, stderr)."""
        if self.workers_mode:
            return self.worker_attempt(delay)
        args = self.next_args()
        self.attempts += 1
        self.outcome.resumes += args[1:2] == ["--resume"]
        log = self.root / f"{self.number}-{self.attempts}.log"
        hit, code, stderr = self.sage(args, log, delay)
        self.outcome.crashes += hit
        self.run_id = self.run_id or run_id_in(stderr)
        self.outcome.left_behind += len(wait_for_servers_to_end(self.project))
        if not hit and code == 3 and "halted:" in stderr:
            self.outcome.halts += 1
            resolve_halt(self.project, self.env, self.run_id, stderr)
        return hit, code, stderr

    def sage(self, args: list[str], log: Path, delay: float | None) -> tuple[bool, int, str]:
        """One sage process: run to its end (delay None), or killed after `delay` seconds unless it ends
        first. (killed or not, exit code, stderr)"""
        if delay is None:
            result = run_sage(self.project, args, self.env, log)
            return False, result.code, result.stderr
        return killed_attempt(self.project, args, self.env, log, delay)

    def worker_attempt(self, delay: float | None) -> tuple[bool, int, str]:
        if self.run_id is None:
            self.submit()
        self.attempts += 1
        self.outcome.resumes += self.attempts > 1
        args = ["worker", "--drain", "--poll-ms", "50"]
        log = self.root / f"{self.number}-{self.attempts}.log"
        hit, code, stderr = self.sage(args, log, delay)
        # a kill crashes the run when the worker had started it: the run's process dies with its worker
        self.outcome.crashes += hit and any(f"run {self.run_id}: {event}" in stderr for event in ("started", "resumed"))
        self.outcome.left_behind += len(wait_for_servers_to_end(self.project))
        if run_status(self.project, self.run_id) == "halted":
            self.outcome.halts += 1
            logs = subprocess.run([*sage_command(), "runs", "logs", self.run_id], cwd=self.project, env=self.env,
                                  capture_output=True, text=True, timeout=120)
            resolve_halt(self.project, self.env, self.run_id, logs.stderr)
        return hit, code, stderr

    def ended(self) -> bool:
        return self.run_id is not None and run_status(self.project, self.run_id) in ("completed", "failed")

    def drive(self) -> Outcome:
        outcome = self.outcome
        for delay in self.delays:
            self.attempt(delay)
            if self.ended():
                break
        code, stderr = 0, ""
        while not self.ended():
            if self.attempts >= MAX_ATTEMPTS:
                outcome.notes.append(f"schedule {self.number}: no end after {MAX_ATTEMPTS} attempts")
                break
            _, code, stderr = self.attempt(None)
        if self.ended() and run_status(self.project, self.run_id) != "completed":
            outcome.bad_exit += 1
            outcome.notes.append(f"schedule {self.number}: exit {code}: {stderr.strip()[-300:]}")
        self.check()
        return outcome

    def check(self) -> None:
        outcome = self.outcome
        fired = Counter(e["args"]["account"] for e in read_ledger(self.project))
        outcome.double_fires = sum(n - 1 for n in fired.values() if n > 1)
        outcome.missing_charges = sum(1 for i in range(CHARGES) if fired[f"soak-{i}"] == 0)
        charged = read_field(self.project, "Main", "charged") or 0
        outcome.lost_increments = max(0, CHARGES - charged)
        outcome.extra_increments = max(0, charged - CHARGES)
        if outcome.double_fires or outcome.missing_charges or outcome.lost_increments or outcome.extra_increments:
            outcome.notes.append(f"schedule {self.number} (kills after {[round(d, 2) for d in self.delays]} s): "
                                 f"ledger {dict(fired)}, counter {charged}")
        if not outcome.notes:
            shutil.rmtree(self.project, ignore_errors=True)


def uncrashed_seconds(root: Path, cache: Path, state_url: str | None) -> float:
    project = make_project(root, PROGRAM, "uncrashed", state_url=state_url)
    started = time.perf_counter()
    attempt = run_sage(project, ["run"], sage_env(project, cache), root / "uncrashed.log")
    elapsed = time.perf_counter() - started
    if attempt.code != 0 or attempt.output[-1:] != [f"charged {CHARGES}"]:
        sys.exit(f"the uncrashed run failed (exit {attempt.code}):\n{attempt.stderr}")
    wait_for_servers_to_end(project)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=200, help="schedules to run (default 200)")
    parser.add_argument("--seed", type=int, default=14, help="seed of the kill delays (default 14)")
    parser.add_argument("--workers", type=int, default=2, help="schedules run at once (default 2)")
    parser.add_argument("--max-seconds", type=float, default=1500,
                        help="start no schedule after this many seconds (default 1500)")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                        help="the store of the runs (postgres: a throwaway local cluster)")
    parser.add_argument("--workers-mode", action="store_true",
                        help="queue the runs and kill the `sage worker` executing them instead of `sage run`")
    args = parser.parse_args()
    cluster = state_url = None
    if args.backend == "postgres":
        sys.path.insert(0, str(REPO / "tests"))
        from pgcluster import start_cluster
        cluster = start_cluster()
        state_url = cluster.new_database()
    try:
        run_soak(args, state_url)
    finally:
        if cluster is not None:
            cluster.destroy()


def run_soak(args: argparse.Namespace, state_url: str | None) -> None:
    rng = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="sage-soak-durable-"))
    started = time.monotonic()
    cache = scratch / "cache"
    span = uncrashed_seconds(scratch, cache, state_url)
    plans = [[rng.uniform(0.2, span) for _ in range(rng.randint(1, 3))] for _ in range(args.schedules)]
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def one(number: int) -> None:
        if time.monotonic() - started > args.max_seconds:
            return
        result = Schedule(number, plans[number], scratch, cache, state_url, args.workers_mode).drive()
        with lock:
            outcomes.append(result)

    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(one, range(args.schedules)))
    totals = {name: sum(getattr(o, name) for o in outcomes) for name in
              ("crashes", "resumes", "halts", "double_fires", "lost_increments", "extra_increments",
               "missing_charges", "bad_exit", "left_behind")}
    print(f"sage command: {' '.join(sage_command())}; backend {args.backend}; "
          f"{'workers killed' if args.workers_mode else 'sage run killed'}; seed {args.seed}; uncrashed run {span:.1f} s; "
          f"kill delays uniform in 0.2..{span:.1f} s, 1-3 kills per schedule")
    print(json.dumps({"runs": len(outcomes), **totals, "seconds": round(time.monotonic() - started)}))
    notes = [note for o in outcomes for note in o.notes]
    for note in notes:
        print("  " + note)
    if notes:
        print(f"projects of the schedules above kept in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    if notes or totals["left_behind"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
