"""What the durable-run tests (test_crash_sweep.py) and the soak script (bench/soak_durable.py) share: projects
that use the counting MCP server, `sage` runs whose output is interleaved with the store's journal-write
marks, halts resolved from the server's ledger, and the search for server processes left behind.

A project is a fresh directory with a grove.toml holding `[persistence]` (SQLite, or with `state_url` a
PostgreSQL database, the project named after its directory so that the projects of one database never mix)
and `[tools.Counter]` (the counting server, started with this interpreter), `src/main.sg` (a program of `programs/`) and `src/counter.sg` (the
tool block). Its ledger is `ledger.jsonl` in the project; COUNTING_LEDGER reaches the server through the
`$` reference of its `env` table.

Interleaving: an attempt's stdout and its SAGE_COUNT_WRITES file are the same file, opened for appending by
both, and sagepy flushes every printed line, so the file holds program lines and the store's marks (a write's
number, alone on its line) in the order they happened.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sagepy.store.base import COUNT_WRITES_VAR, CRASH_EXIT_CODE

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SERVER = HERE / "counting_server.py"
PROGRAMS = HERE / "programs"
LEDGER_VAR = "COUNTING_LEDGER"
HALT_EXIT_CODE = 3

RUN_ID = re.compile(r"^run id: (\S+)$", re.M)
HALTED = re.compile(r"^halted: the outcome of (\S+) \((\S+) step (\d+)\) is unknown", re.M)
MARK = re.compile(r"^\d+$")

GROVE = """\
[project]
name = "{name}"

[persistence]
{persistence}

[tools.Counter]
command = {python}
args = [{server}]
env = {{ {ledger_var} = "${ledger_var}" }}
"""


def make_project(parent: Path, program: str, name: str | None = None, state_url: str | None = None,
                 project_name: str | None = None) -> Path:
    """A fresh project running `programs/<program>.sg`, in parent/<name or program>; its store is
    .sage/state.db, or the PostgreSQL database of `state_url` (`project_name`: its `[project] name`, for
    two checkouts of one project)."""
    root = parent / (name or program)
    (root / "src").mkdir(parents=True)
    shutil.copy(PROGRAMS / f"{program}.sg", root / "src" / "main.sg")
    shutil.copy(PROGRAMS / "counter.sg", root / "src" / "counter.sg")
    persistence = 'backend = "sqlite"'
    if state_url is None:
        project_name = project_name or program
    else:
        project_name = project_name or f"{program}-{parent.name}-{name or program}"
        persistence = f'backend = "postgres"\nurl = {json.dumps(state_url)}'
    (root / "grove.toml").write_text(GROVE.format(name=project_name, persistence=persistence,
                                                  python=json.dumps(sys.executable), server=json.dumps(str(SERVER)),
                                                  ledger_var=LEDGER_VAR), encoding="utf-8")
    return root


def open_project_store(project: Path) -> Any:
    """The store of a project of `make_project` (SQLite or PostgreSQL, as its grove.toml says)."""
    import tomllib
    config = tomllib.loads((project / "grove.toml").read_text(encoding="utf-8"))
    persistence = config["persistence"]
    if persistence.get("backend") == "postgres":
        from sagepy.store.postgres import PostgresStore
        return PostgresStore(persistence["url"], config["project"]["name"])
    from sagepy.store.sqlite import SqliteStore
    return SqliteStore(str(project / ".sage" / "state.db"))


def ledger_path(project: Path) -> Path:
    return project / "ledger.jsonl"


def sage_env(project: Path, cache_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `sage` command in `project`: none of the caller's SAGE_* settings, this checkout
    first on the import path, a shared AST cache, and the project's ledger for the counting server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(NO_COLOR="1", SAGE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO),
               **{LEDGER_VAR: str(ledger_path(project))})
    env.update(extra)
    return env


def sage_command() -> list[str]:
    return [sys.executable, "-m", "sagepy"]


@dataclass
class Attempt:
    """One `sage run` of a durable run: its exit code, stderr, and its stdout interleaved with write marks."""
    args: list[str]
    code: int
    stderr: str
    events: list[tuple[str, str]]     # ("out", line) | ("write", number)

    @property
    def output(self) -> list[str]:
        return [text for kind, text in self.events if kind == "out"]

    @property
    def writes(self) -> int:
        return sum(1 for kind, _ in self.events if kind == "write")

    def lines_after_write(self, back: int = 1) -> int:
        """How many program lines this attempt printed after its `back`-th last committed journal write
        (1: the last one); all of them when it made fewer writes."""
        writes = lines = 0
        for kind, _ in reversed(self.events):
            if kind == "write":
                writes += 1
                if writes == back:
                    return lines
            else:
                lines += 1
        return lines

    @property
    def crashed(self) -> bool:
        return self.code == CRASH_EXIT_CODE

    @property
    def halted(self) -> bool:
        return self.code == HALT_EXIT_CODE and HALTED.search(self.stderr) is not None


def run_sage(project: Path, args: list[str], env: dict[str, str], log: Path, timeout: float = 120) -> Attempt:
    """`sage ARGS` in the project with stdout and the journal-write marks going to `log` (a new file)."""
    env = dict(env, **{COUNT_WRITES_VAR: str(log)})
    with open(log, "ab") as out:
        result = subprocess.run([*sage_command(), *args], cwd=project, env=env, stdout=out,
                                stderr=subprocess.PIPE, timeout=timeout)
    events = [("write", line) if MARK.match(line) else ("out", line)
              for line in log.read_text(encoding="utf-8").splitlines()]
    return Attempt(args, result.returncode, result.stderr.decode("utf-8", "replace"), events)


def run_id_in(stderr: str) -> str | None:
    """The id a durable run printed (`run id: …`) on stderr."""
    found = RUN_ID.search(stderr)
    return found.group(1) if found else None


# ---------------------------------------------------------------- the ledger and halts

def read_ledger(project: Path) -> list[dict[str, Any]]:
    path = ledger_path(project)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def ledger_calls(project: Path) -> list[tuple[str, str, Any]]:
    """Each destructive call of the ledger as (tool, canonical arguments, value), sorted: equal for two runs
    exactly when the same calls fired the same number of times with the same results."""
    return sorted((e["tool"], json.dumps(e["args"], sort_keys=True), e["value"]) for e in read_ledger(project))


@dataclass
class Halt:
    target: str
    path: str
    number: int
    resolution: list[str] = field(default_factory=list)


def resolve_halt(project: Path, env: dict[str, str], run_id: str, stderr: str) -> Halt:
    """Record the outcome of the step the run halted at, as its ledger tells it: `--ok <value>` when the
    server charged (a ledger line with the step's tool and argument hash), `--not-run` when it did not."""
    from sagepy.effects.outcomes import args_hash
    found = HALTED.search(stderr)
    assert found is not None, stderr
    halt = Halt(found.group(1), found.group(2), int(found.group(3)))
    shown = subprocess.run([*sage_command(), "runs", "show", run_id, "--format", "json"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    record = next(s for s in json.loads(shown.stdout) if s["path"] == halt.path and s["step"] == halt.number)
    assert (record["status"], record["class"], record["target"]) == ("started", "destructive", halt.target)
    tool = halt.target.split(".", 1)[1]
    fired = [e for e in read_ledger(project) if e["tool"] == tool and args_hash(e["args"]) == record["args_hash"]]
    assert len(fired) <= 1, f"{halt.target} fired {len(fired)} times: {fired}"
    halt.resolution = ["--ok", json.dumps(fired[0]["value"])] if fired else ["--not-run"]
    resolved = subprocess.run([*sage_command(), "runs", "resolve", run_id, f"{halt.path}:{halt.number}",
                               *halt.resolution], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert resolved.returncode == 0, resolved.stderr
    return halt


# ---------------------------------------------------------------- processes

def servers_of(project: Path) -> list[int]:
    """Counting-server processes started for this project (their environment names its ledger)."""
    wanted = f"{LEDGER_VAR}={ledger_path(project)}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if wanted in environ.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:   # gone meanwhile, or a zombie
            continue
    return found


def wait_for_servers_to_end(project: Path, timeout: float = 30.0) -> list[int]:
    """Wait until no counting server of the project runs (a crashed `sage` leaves its server to notice the
    closed stdin and exit); the ones still running after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        left = servers_of(project)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def read_field(project: Path, agent: str, name: str) -> Any:
    """A `@persistent` field's stored JSON value (None when never written)."""
    store = open_project_store(project)
    try:
        return store.get_field(agent, name)[1]
    finally:
        store.close()


def run_status(project: Path, run_id: str) -> str | None:
    store = open_project_store(project)
    try:
        run = store.get_run(run_id)
        return None if run is None else run.status
    finally:
        store.close()
