"""The durable store's interface (SPEC §4.8, §14): `@persistent` fields, runs, journal steps and leases.

The runtime and the journal layer talk only to this interface; `sqlite.py` implements it for the embedded
store (`[persistence] backend = "sqlite"`), `postgres.py` for a PostgreSQL database shared by many machines
(`backend = "postgres"`, SPEC §14.1) and `memory.py` for the in-process one (no `[persistence]`, or under
`sage test`); `config.py` says which one a project uses and opens it.

Fencing (SPEC §14.1): a store that took a run's lease (`create_run` with a token, `acquire_lease`, a claim
of the queue), or holds a lease another store of the process took (`hold_lease`), makes every later journal
write of that run (`record_step`, `record_steps`, `record_steps_of`, `record_intent`, a field write with a
step, `heartbeat`, `end_run`, `release_lease`) conditional on still holding it, and raises TakenOver (or, for
the runs of `record_steps_of`, reports it) when another process took the run over meanwhile.

Values cross the interface as JSON data (SPEC §5: dict, list, str, int, float, bool, None); converting them
to and from Sage values is the caller's job, with the step's or field's type.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

# Run statuses (SPEC §14). `interrupted` is never stored: it is how `running` with a stale lease is shown.
RUNNING, COMPLETED, FAILED, HALTED, INTERRUPTED = "running", "completed", "failed", "halted", "interrupted"
PAUSED = "paused"        # waiting for a person (SPEC §17)
# Step statuses; `waiting`: an approval or a question no one has answered yet (its outcome is what it asks).
STARTED, DONE, STEP_FAILED, WAITING = "started", "done", "failed", "waiting"


# A run's model usage (SPEC §23) is one record of its own, at a pseudo agent path (no agent's path starts
# with `#`), written over as the usage grows, with the outcome of the model turn that changed it. It is no
# step of the program: crash injection does not count it (`journal_records`), `sage runs show` shows it as
# the run's `usage:` line.
USAGE_PATH, USAGE = "#usage", "usage"


def journal_records(steps: list) -> int:
    """How many of `steps` are journal records of the program's steps (what crash injection counts)."""
    return sum(1 for step in steps if step.kind != USAGE)


@dataclass
class RunRecord:
    id: str                  # YYYYMMDD-HHMMSS-xxxx
    started_at: float        # unix seconds
    status: str              # running | completed | failed | halted
    exit_code: int | None
    entry: str               # entry file, as given on the command line / resolved from grove.toml
    lease_pid: int | None = None           # the lease's owner; once released (no heartbeat), the last owner
    lease_host: str | None = None
    lease_heartbeat: float | None = None   # unix seconds of the last heartbeat
    lease_token: str | None = None         # the owner's random token: what fences its writes
    ended_at: float | None = None          # unix seconds when the run ended (completed, failed, cancelled)
    # seconds since the heartbeat on the store's clock: read, never stored, and no part of a record's equality
    lease_age: float | None = field(default=None, compare=False)


@dataclass
class StepRecord:
    """One journal record, keyed by (run id, path, number)."""
    path: str
    number: int
    kind: str
    target: str
    args_hash: str           # SHA-256 hex of the arguments' canonical JSON
    safety: str
    status: str              # started | done | failed
    outcome: Any = None      # done: the value's JSON; failed: {"kind", "message", "code"?}


@dataclass
class Pending:
    """What a run's journal holds back to commit in one transaction (grouped commits, SPEC §14): outcome records
    of read-only and idempotent steps, and lines the run printed (`stream`, `line`), each list in the order it
    was made."""
    steps: list[StepRecord] = field(default_factory=list)
    output: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.steps or self.output)


# Every method may raise Busy or Unavailable; opening a file (SqliteStore(path)) raises Unavailable or
# NewerFormat.
class Busy(Exception):
    """The store stayed locked by another process for the whole busy timeout (30 s)."""


class Unavailable(Exception):
    """The store cannot be opened or read; str() is the reason."""


class Unreachable(Unavailable):
    """A database server cannot be reached (refused, DNS, authentication), or stayed unreachable for 30 s
    during a run; str() is the reason."""


class NewerFormat(Exception):
    """The file was written by a newer journal format: args (found, supported)."""


# What a store keeps, in place of its token, for a run whose lease it released (its end, a pause, a stop): no
# lease token is empty, so every later fenced write of that run by this store — a thread of the process still
# finishing a step — fails as a deposed owner's would, rather than writing unfenced.
RELEASED = ""


def forget_lease(tokens: dict[str, str], run_id: str) -> None:
    """The store released `run_id`'s lease: from now on its fenced writes of that run fail (TakenOver)."""
    if run_id in tokens:
        tokens[run_id] = RELEASED


class TakenOver(Exception):
    """A fenced write of a run whose lease another process holds now: args (its pid, its host)."""

    def __init__(self, pid: int | None, host: str | None) -> None:
        super().__init__(pid, host)
        self.pid = pid
        self.host = host


class Store(Protocol):
    path: str | None         # the file, for messages; None for the in-memory store
    durable: bool            # whether runs can be journaled in this store

    # ---- @persistent fields (keyed by agent name and field name)
    def get_field(self, agent: str, field: str) -> tuple[bool, Any]:
        """(found, JSON value)."""
    def set_field(self, agent: str, field: str, value: Any, step: StepRecord | None = None, run_id: str | None = None) -> None:
        """Write the field, and when `step` is given its journal record, in ONE transaction."""
    def update_field(self, agent: str, field: str, fn: Callable[[tuple[bool, Any]], Any],
                     step: StepRecord | None = None, run_id: str | None = None) -> Any:
        """Atomic read-modify-write (SQLite BEGIN IMMEDIATE): fn((found, old JSON)) -> new JSON, written
        with the optional journal record in the same transaction (its outcome set to the new JSON); returns
        the new JSON. An exception from fn rolls everything back and propagates."""

    # ---- runs
    def create_run(self, run: RunRecord) -> None: ...
    def get_run(self, run_id: str) -> RunRecord | None: ...
    def newest_run(self) -> RunRecord | None: ...
    def list_runs(self) -> list[RunRecord]:
        """Newest first."""
    def end_run(self, run_id: str, status: str, exit_code: int | None, pending: Pending | None = None) -> None:
        """Sets the status and exit code and releases the lease (its heartbeat and token; the last owner's
        pid and host stay, for `sage runs` and for a deposed owner's message); `pending`: what the run's
        journal held back, committed first in the same transaction."""
    def prune_runs(self, keep: int) -> list[str]:
        """Deletes ended runs (completed, failed, cancelled) beyond the newest `keep` ended ones, with their steps;
        returns their ids, newest first."""

    # ---- journal steps
    def steps(self, run_id: str) -> list[StepRecord]:
        """Every record of the run, ordered by path then number."""
    def record_step(self, run_id: str, step: StepRecord) -> None:
        """Insert or replace the record (started -> done/failed), committed durably before returning."""
    def record_steps(self, run_id: str, steps: list[StepRecord]) -> None:
        """Insert or replace outcome records of read_only and idempotent steps, in ONE transaction that may
        commit without waiting for the disk (grouped outcome commits, SPEC §14)."""
    def record_steps_of(self, pending: Mapping[str, Pending]) -> dict[str, TakenOver]:
        """What the journals of many runs held back (outcome records as `record_steps` writes them, output lines
        as `append_output` does), in ONE transaction that may commit without waiting for the disk, each run's
        fenced by its own lease: a run taken over meanwhile gets nothing written and is returned with its
        TakenOver (the grouped commits' timer, for every run of the process at once)."""
    def record_intent(self, run_id: str, step: StepRecord) -> bool:
        """Insert the `started` record of a destructive step, durably, never replacing one: False when the
        step has a record already (another process claimed it, SPEC §14.1 "Claims")."""
    def delete_step(self, run_id: str, path: str, number: int) -> None:
        """`sage runs resolve … --not-run`."""
    def pause_run(self, run_id: str) -> list[StepRecord]:
        """In one transaction: the run's waiting steps (returned) and, when there are any, status `paused`
        (exit code 5), else runnable again as after `decide_step`; the lease is released (store/pauses.py)."""
    def decide_step(self, run_id: str, step: StepRecord) -> str | None:
        """In one transaction: when the step (path, number) is still `waiting`, replace it with `step` (the
        decision or answer) and make a `paused` run runnable again (`queued` when a worker was executing it,
        else `running` with no lease); the run's status as shown then, or None when the step was not
        waiting. An ended run (`completed`, `failed`, `cancelled`) is left as it is: its status."""

    # ---- leases (one owner per run)
    def acquire_lease(self, run_id: str, pid: int, host: str, token: str,
                      is_stale: Callable[[RunRecord], bool]) -> RunRecord | None:
        """Take the run's lease when it is free or `is_stale(run)` (the run read in the same transaction, its
        `lease_age` on the store's clock), and return None; else return the run as it is (the owner).
        KeyError for an unknown run. From then on this store fences the run's writes with `token`."""
    def hold_lease(self, run_id: str, token: str) -> None:
        """From now on this store fences the run's writes with `token`, the lease another store of this process
        took (a thread-mode worker's claim, which its run takes over as it is): nothing is read or written, so
        a lease lost meanwhile shows at the run's first write (TakenOver)."""
    def heartbeat(self, run_id: str) -> None:
        """Renew the lease on the store's clock; TakenOver when it is not this store's any more."""
    def renew_leases(self, run_ids: Sequence[str]) -> tuple[dict[str, TakenOver], set[str]]:
        """The heartbeat of many runs at once, in one transaction that need not wait for the disk: renews the
        leases this store still holds; returns the runs taken over (each with its TakenOver) and the runs a
        person asked to cancel (`sage runs cancel`). A run this store no longer holds (it ended) is left
        alone."""
    def release_lease(self, run_id: str) -> None: ...

    def close(self) -> None: ...


class NoRun(LookupError):
    """A RUN_ID names no run of the project: `run_id` as given (`last`: the project has no run yet); str() is the
    message after `error: `."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id

    def __str__(self) -> str:
        if self.run_id == "last":
            return "no durable run in this project yet"
        return f"no run {self.run_id} in this project"


def find_run(store: Store | None, run_id: str) -> RunRecord:
    """The one lookup of a RUN_ID argument (`last`: the newest run of the project) in `store` (None: a store
    not created yet, which holds no run); NoRun when there is none."""
    run = None
    if store is not None:
        run = store.newest_run() if run_id == "last" else store.get_run(run_id)
    if run is None:
        raise NoRun(run_id)
    return run


# Crash injection for the crash-sweep tests (read once per process): SAGE_CRASH_AFTER_WRITE=k exits the
# process with os._exit(77) right after the k-th committed journal write; SAGE_CRASH_BEFORE_WRITE=k exits just
# before the k-th commit. SAGE_COUNT_WRITES=FILE appends one line per committed journal write to FILE.
CRASH_AFTER_VAR = "SAGE_CRASH_AFTER_WRITE"
CRASH_BEFORE_VAR = "SAGE_CRASH_BEFORE_WRITE"
COUNT_WRITES_VAR = "SAGE_COUNT_WRITES"
CRASH_EXIT_CODE = 77
