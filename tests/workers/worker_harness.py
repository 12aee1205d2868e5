"""What the worker tests (tests/workers) and the worker benches (bench/workers.py, bench/soak_durable.py
--workers-mode) share: projects of queued runs, `sage worker` processes, halts resolved from the counting
server's ledger, and the checks of a finished load (every run completed once, every charge fired once, no
increment lost, no run executed by two processes at once, nothing left running).

A project is a fresh directory with grove.toml (`[persistence]`, `[extern]` for the execution log and
`[tools.Counter]`, the counting server of tests/durable), `src/main.sg` (a program of `programs/`), and
`src/counter.sg`. With `state_url` the project's store is that database (SAGE_STATE_URL), else its SQLite file.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DURABLE = REPO / "tests" / "durable"
PROGRAMS = HERE / "programs"
LEDGER_VAR = "COUNTING_LEDGER"
EXEC_LOG_VAR = "WORKER_EXEC_LOG"

GROVE = """\
[project]
name = "{name}"

[persistence]
backend = "sqlite"
max_recoveries = {max_recoveries}

[extern]
modules = ["src/hold.py"]

[tools.Counter]
command = {python}
args = [{server}]
env = {{ {ledger_var} = "${ledger_var}" }}
"""


def make_project(parent: Path, program: str, name: str | None = None, max_recoveries: int = 5) -> Path:
    root = parent / (name or program)
    (root / "src").mkdir(parents=True)
    (root / "exec").mkdir()
    shutil.copy(PROGRAMS / f"{program}.sg", root / "src" / "main.sg")
    shutil.copy(PROGRAMS / "hold.py", root / "src" / "hold.py")
    shutil.copy(DURABLE / "programs" / "counter.sg", root / "src" / "counter.sg")
    (root / "grove.toml").write_text(GROVE.format(name=name or program, python=json.dumps(sys.executable),
                                                  server=json.dumps(str(DURABLE / "counting_server.py")),
                                                  ledger_var=LEDGER_VAR, max_recoveries=max_recoveries),
                                     encoding="utf-8")
    return root


def ledger_path(project: Path) -> Path:
    return project / "ledger.jsonl"


def sage_env(project: Path, cache_dir: Path, state_url: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(NO_COLOR="1", SAGE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO),
               **{LEDGER_VAR: str(ledger_path(project)), EXEC_LOG_VAR: str(project / "exec")})
    if state_url is not None:
        env["SAGE_STATE_URL"] = state_url
    env.update(extra)
    return env


def sage(project: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=timeout)


def submit(project: Path, env: dict[str, str], *args: str, queue: str | None = None) -> str:
    flags = ["--queue", queue] if queue else []
    done = sage(project, env, "runs", "submit", *flags, "--", *args)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.strip()


@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Until a line of the worker's stderr contains `text`."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines()):
            assert time.monotonic() < deadline, f"worker never printed {text!r}: {self.lines()}"
            assert self.process.poll() is None or any(text in line for line in self.lines()), self.lines()
            time.sleep(0.05)

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait(timeout)


def start_worker(project: Path, env: dict[str, str], log: Path, *flags: str) -> WorkerProcess:
    with open(log, "ab") as err:
        process = subprocess.Popen([sys.executable, "-m", "sagepy", "worker", *flags], cwd=project, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    return WorkerProcess(process, log)


def runs_json(project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    listed = sage(project, env, "runs", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


# ---------------------------------------------------------------- halts and the ledger

def read_ledger(project: Path) -> list[dict[str, Any]]:
    path = ledger_path(project)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def resolve_halted(project: Path, env: dict[str, str], run_id: str) -> str:
    """Record the outcome of the destructive step the halted run stopped at, as the ledger tells it (an
    operator's `sage runs resolve`); returns the resolution."""
    from sagepy.effects.outcomes import args_hash
    shown = sage(project, env, "runs", "show", run_id, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    open_steps = [s for s in json.loads(shown.stdout) if s["status"] == "started" and s["class"] == "destructive"]
    assert len(open_steps) == 1, open_steps
    step = open_steps[0]
    tool = step["target"].split(".", 1)[1]
    fired = [e for e in read_ledger(project) if e["tool"] == tool and args_hash(e["args"]) == step["args_hash"]]
    assert len(fired) <= 1, f"{step['target']} fired {len(fired)} times"
    resolution = ["--ok", json.dumps(fired[0]["value"])] if fired else ["--not-run"]
    done = sage(project, env, "runs", "resolve", run_id, f"{step['path']}:{step['step']}", *resolution)
    assert done.returncode == 0, done.stderr
    return resolution[0]


@dataclass
class LoadReport:
    runs: int
    completed: int
    double_fires: int
    missing_charges: int
    lost_increments: int
    overlaps: int
    executions: int
    recoveries: int


def check_load(project: Path, env: dict[str, str], names: list[str], charges: int, total: Any) -> LoadReport:
    """The figures of a finished load of `programs/load.sg` runs named `names`: `total` is the shared
    @persistent counter as stored."""
    runs = runs_json(project, env)
    completed = sum(1 for r in runs if r["status"] == "completed" and r["exit_code"] == 0)
    counts: dict[str, int] = {}
    for entry in read_ledger(project):
        counts[entry["args"]["account"]] = counts.get(entry["args"]["account"], 0) + 1
    accounts = [f"{name}-{i}" for name in names for i in range(charges)]
    double = sum(max(0, counts.get(a, 0) - 1) for a in accounts)
    missing = sum(1 for a in accounts if counts.get(a, 0) == 0)
    overlaps = executions = 0
    for name in names:
        log = project / "exec" / f"{name}.log"
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        executions += len(lines)
        overlaps += sum(1 for line in lines if line.endswith("OVERLAP"))
    return LoadReport(len(runs), completed, double, missing, len(accounts) - (total or 0), overlaps, executions,
                      sum(r["recoveries"] for r in runs))


def processes_of(project: Path) -> list[int]:
    """Processes whose environment names this project's ledger: workers, runs and counting servers."""
    wanted = f"{LEDGER_VAR}={ledger_path(project)}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if wanted in environ.read().split(b"\0"):
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        if stat.read().rpartition(b")")[2].split()[0] != b"Z":
                            found.append(int(entry))
        except OSError:
            continue
    return found


def wait_until_gone(project: Path, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = processes_of(project)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def read_field(project: Path, env: dict[str, str], agent: str, name: str) -> Any:
    """A `@persistent` field's stored JSON value, from the project's store as `env` selects it."""
    from sagepy.project import find_project
    from sagepy.session import Session
    project_info, _ = find_project(str(project))
    store = Session(project_info, environ=env).open_store().backend
    try:
        return store.get_field(agent, name)[1]
    finally:
        store.close()


def submit_many(project: Path, env: dict[str, str], names: list[str]) -> list[str]:
    """Queue one run of the project's program per name (its argument) through the store, as `sage runs
    submit` does, without a process per run: the load tests queue hundreds."""
    from sagepy.project import find_project
    from sagepy.runtime.durable import new_run_id
    from sagepy.session import Session
    from sagepy.store.base import RunRecord
    from sagepy.store.queue import QUEUED, RunInfo
    from sagepy.workers.version import session_version
    project_info, _ = find_project(str(project))
    session = Session(project_info, environ=env)
    version = session_version(session, session.entry_file())
    store = session.open_store().backend
    ids = []
    try:
        for i, name in enumerate(names):
            run_id = f"{new_run_id()[:-4]}{i:04x}"
            store.submit_run(RunRecord(run_id, time.time(), QUEUED, None, "src/main.sg"),
                             RunInfo(version=version, args=[name]))
            ids.append(run_id)
    finally:
        store.close()
    return ids


@dataclass
class LoadRun:
    names: list[str]
    kills: int = 0
    resolved: int = 0
    seconds: float = 0.0


def drive_load(project: Path, env: dict[str, str], logs: Path, runs: int, workers: int, killable: int,
               kills: int, rng: Any, concurrency: int = 2, timeout: float = 900,
               isolation: str = "thread") -> LoadRun:
    """Queue `runs` runs of programs/load.sg, start `workers` workers, SIGKILL the first `killable` of them
    `kills` times in all (each restarted at once), resolve halted runs from the ledger as an operator would,
    until every run has ended; then stop the workers with SIGTERM.

    A kill waits for its moment (a random delay after the previous one) and then for a victim: a killable
    worker executing a run at that instant. Killing on that event, not at a set time, means every kill lands
    mid-run however fast the runs go (a kill scheduled by the clock alone came after the last run had ended
    once the workers got quicker)."""
    load = LoadRun([f"r{i:03d}" for i in range(runs)])
    started = time.monotonic()
    submit_many(project, env, load.names)
    flags = ["--concurrency", str(concurrency), "--poll-ms", "100", "--isolation", isolation]
    pool = [start_worker(project, env, logs / f"worker{i}.log", *flags) for i in range(workers)]
    next_kill = time.monotonic() + rng.uniform(0.2, 1.5)
    next_listing = 0.0
    deadline = time.monotonic() + timeout
    try:
        while True:
            assert time.monotonic() < deadline, "the load did not finish in time"
            if load.kills < kills and time.monotonic() >= next_kill:
                busy = executing_workers(project, env, pool[:killable])
                if busy:
                    victim = rng.choice(busy)
                    pool[victim].process.kill()
                    pool[victim].process.wait()
                    load.kills += 1
                    pool[victim] = start_worker(project, env, logs / f"worker{victim}.log", *flags)
                    next_kill = time.monotonic() + rng.uniform(0.2, 1.5)
            if time.monotonic() >= next_listing:
                listed = runs_json(project, env)
                for run in listed:
                    if run["status"] == "halted":
                        resolve_halted(project, env, run["id"])
                        load.resolved += 1
                if all(run["status"] in ("completed", "failed", "cancelled") for run in listed):
                    break
                next_listing = time.monotonic() + 0.3
            time.sleep(0.02)
    finally:
        for worker in pool:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in pool:
            try:
                worker.process.wait(20)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
    load.seconds = time.monotonic() - started
    return load


def executing_workers(project: Path, env: dict[str, str], pool: list[WorkerProcess]) -> list[int]:
    """The indexes in `pool` of the workers executing a run now: the run's live lease is the worker's (thread
    isolation) or that of a process the worker started (process isolation)."""
    store = open_store(project, env)
    try:
        holders = {run.lease_pid for run in store.list_runs()
                   if run.status == "running" and run.lease_heartbeat is not None}
    finally:
        store.close()
    holders |= {_parent_pid(pid) for pid in holders if pid is not None}
    return [i for i, worker in enumerate(pool) if worker.process.pid in holders]


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def open_store(project: Path, env: dict[str, str]) -> Any:
    from sagepy.project import find_project
    from sagepy.session import Session
    project_info, _ = find_project(str(project))
    return Session(project_info, environ=env).open_store().backend


def run_process(project: Path, env: dict[str, str], run_id: str, worker_pid: int, timeout: float = 120) -> int:
    """The pid of the run's own process once it holds the lease its worker claimed for it."""
    deadline = time.monotonic() + timeout
    while True:
        store = open_store(project, env)
        try:
            run = store.get_run(run_id)
        finally:
            store.close()
        if run.lease_pid not in (None, worker_pid) and run.lease_heartbeat is not None:
            return run.lease_pid
        assert time.monotonic() < deadline, "the run's process never took its lease"
        time.sleep(0.05)


def leased_by(project: Path, env: dict[str, str], run_id: str, pid: int, timeout: float = 120) -> None:
    """Until the run's own execution holds its lease under `pid` (a thread-mode worker's runs are its own)."""
    deadline = time.monotonic() + timeout
    while True:
        store = open_store(project, env)
        try:
            run = store.get_run(run_id)
            steps = store.steps(run_id)
        finally:
            store.close()
        if run.lease_pid == pid and run.lease_heartbeat is not None and steps:
            return
        assert time.monotonic() < deadline, "the run never started under its worker"
        time.sleep(0.05)
