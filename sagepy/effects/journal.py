"""The journal of durable runs (SPEC §14): the layer that records each step's outcome and replays it on resume.

A step is keyed by (run id, `step.path`, `step.number`). With a `done` or `failed` record the step is not
performed: its recorded outcome is returned (wire data, as the layers below return it, outcomes.py) or its error
raised. A record of another kind, target or argument hash is a divergence; a `started` record alone is
performed again when its class is read_only or idempotent and halts the run when destructive. Without a record
the step is live: a destructive step commits `started` before it runs, and every outcome is committed before
the program sees it. Sage errors raised by the step are outcomes; a stop (cancellation, shutdown, the end of
the run) is not, and neither is a failure of sagepy itself. An approval or a question that no one can answer
here is recorded `waiting` and pauses the run (SPEC §17.3); on resume a decided one is replayed and one still
waiting is asked again.

Outcomes of read-only and idempotent steps are committed in groups (grouping.py); the intent of a
destructive step is inserted, never written over (SPEC §14.1 "Claims": when another process recorded the
step first, this one halts instead of performing it). The run's lease fences every write: a run whose
lease another process took over (this one was stopped for longer than the lease lasts) stops before its
next step, writing nothing, and so does a run whose database stayed unreachable for 30 s (it stays
resumable). Before each step the journal makes sure the lease was confirmed recently (the heartbeat
thread confirms it every second; after a long pause, such as SIGSTOP, the step confirms it itself).

Process state that a replayed step would have created is made again when a live step needs it: a replayed
`mcp_connect` returns its recorded handle and connects for real only when a live `mcp_*` step uses that
handle; handles the program sees never collide with the ones a new connection gets.
"""
from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import Any, Callable

from ..core.errors import AgentCancelled, SageRaise
from ..core.values import UNIT, ErrorValue
from ..store import crash
from ..store.base import (DONE, STARTED, STEP_FAILED, USAGE, USAGE_PATH, WAITING, Busy, Pending, StepRecord, TakenOver,
                          Unavailable, Unreachable)
from ..wake import WakingEvent
from .chain import Perform
from .grouping import OutcomeGroups, groupable
from .outcomes import args_hash, decode_error, decode_value, encode_error, encode_value
from .people import NoOneToAsk
from .step import AWAIT, LLM, MCP, RECEIVE, STATE, McpStep, Step


class JournalStopped(AgentCancelled):
    """The run stopped on a halt or a divergence: every agent ends quietly, as when stopped."""


# A step confirms the lease itself when the heartbeat last did longer ago than this (the lease lasts 10 s
# from its last heartbeat, on the database's clock; this process's clock runs on while it is stopped).
CONFIRM_SECONDS = 5.0


class Journal:
    """The journal of one durable run: the records found when it started, and how the run stopped, if it did.
    It joins the effects chain when the chain is built, before the run is created or found; `begin` gives it
    the run's id and records before the program's first step."""

    def __init__(self, store: Any, runtime: Any, secret_names: frozenset[str] = frozenset()) -> None:
        self.store = store              # the base.Store of the project
        self.runtime = runtime
        self.secret_names = secret_names   # variables grove.toml names in `*_env` keys: their reads are secret
        self.run_id = ""
        self.records: dict[tuple[str, int], StepRecord] = {}
        self.horizon: dict[str, int] = {}   # agent path -> its last recorded step
        self.recorded_handles: set = set()
        self.stopped = WakingEvent()
        self.stop_code: int | None = None
        self.stop_message = ""
        self.kind = ""                  # "halted" | "diverged" | "cancelled" | "paused", once stopped
        self.lock = threading.Lock()
        # MCP handles the program holds -> the live handle, or the arguments of a replayed mcp_connect that
        # has not connected again yet
        self.handles: dict[str, Any] = {}
        self.groups: OutcomeGroups | None = None   # pending outcomes, from `begin` on
        self.grouped = False
        self.confirmed = time.monotonic()
        self.world: Any = None          # the run's world, whose model usage the journal keeps (SPEC §23)

    def begin(self, run_id: str, records: list[StepRecord]) -> None:
        """The run this journal records: its id and the records of its earlier executions (none for a new run)."""
        self.run_id = run_id
        self.records = {(r.path, r.number): r for r in records}
        for r in records:
            if r.number > self.horizon.get(r.path, 0):
                self.horizon[r.path] = r.number
        self.recorded_handles = {r.outcome for r in records
                                 if r.kind == MCP and r.target == "mcp_connect" and r.status == DONE}
        usage = self.records.get((USAGE_PATH, 1))
        if usage is not None and self.world is not None:   # a resumed run counts on from its recorded usage
            self.world.usage.restore(usage.outcome)
        self.groups = OutcomeGroups(self.store, run_id)
        # Under the crash-sweep hooks each outcome commits at once, so that a crash at the k-th journal write
        # happens at the same place of the program on every execution (what the sweep's checks rest on).
        self.grouped = not crash.active()
        self.confirmed = time.monotonic()   # when the lease was last confirmed (heartbeat or step)

    # ---------------------------------------------------------------- the lease
    def confirm_lease(self) -> None:
        """Before a step: stop the run if its lease was lost; confirm it first when that was long ago."""
        if time.monotonic() - self.confirmed < CONFIRM_SECONDS:
            return
        asked = time.monotonic()   # the heartbeat is stamped later than this: the lease lasts at least 10 s from it
        with _store_errors(self):
            self.store.heartbeat(self.run_id)
        self.confirmed = asked

    def taken_over(self, exc: TakenOver) -> None:
        self.groups.discard()
        try:
            self._stop(1, "taken over", f"error: run {self.run_id} was taken over by process {exc.pid} on {exc.host}")
        except JournalStopped:
            pass

    # ---------------------------------------------------------------- writing
    def record(self, step: Step, digest: str, safety: str, status: str, outcome: Any = None) -> StepRecord:
        """Commit a step's record: an outcome of a read-only or idempotent step joins the pending group;
        anything else commits the group first, then itself. A destructive step's intent that another
        process inserted first halts the run (the other process performs the call). A model turn's outcome
        carries the run's usage along, when it changed (SPEC §23: the record of pseudo-path `#usage`, one
        per run, written over)."""
        record = StepRecord(step.path, step.number, step.kind, step.target, digest, safety, status, outcome)
        with _store_errors(self):
            if status != STARTED and groupable(record):
                records = [record]
                if step.kind == LLM and self.world is not None:
                    usage = self.world.usage.record()
                    if usage is not None:
                        records.append(StepRecord(USAGE_PATH, 1, USAGE, USAGE, "", "read_only", DONE, usage))
                if self.grouped:
                    for each in records:
                        self.groups.add(each)
                else:
                    self.store.record_steps(self.run_id, records)
                return record
            self.groups.flush()
            if status != STARTED:
                self.store.record_step(self.run_id, record)
            elif not self.store.record_intent(self.run_id, record):
                self.halt(step, record)
        return record

    def replaying(self, step: Step) -> bool:
        """Whether `step` will be answered from its record rather than performed (the layers above the
        journal mark such steps as replayed)."""
        record = self.records.get((step.path, step.number))
        return record is not None and record.status in (DONE, STEP_FAILED) and record.kind == step.kind

    def flush(self) -> None:
        """Commit the pending outcomes: before a `state` write, a pause, a halt and the end of the run."""
        with _store_errors(self):
            self.groups.flush()

    def output(self, stream: str, line: str) -> bool:
        """Store a line the run printed (`sage runs logs`) with its pending outcomes: committed with them, within
        50 ms and never after the record of the run's next step. False when the journal takes no line (not
        started, closed, or committing each outcome at once): the caller stores it itself."""
        return self.grouped and self.groups is not None and self.groups.add_line(stream, line)

    def last_writes(self) -> Pending:
        """The end of this execution, when the run ends: what is pending, which the store commits with the run's
        end in one transaction; the timer stopped."""
        if self.groups is None:
            return Pending()
        with _store_errors(self):
            return self.groups.take_last()

    def close(self) -> None:
        """The end of this execution: commit what is pending (unless the lease was lost) and stop the timer."""
        if self.groups is None:
            return
        try:
            if self.kind != "taken over":
                self.flush()
        finally:
            self.groups.close()

    # ---------------------------------------------------------------- stopping the run
    def halt(self, step: Step, record: StepRecord) -> None:
        where = f"{step.path}:{step.number}"
        self._stop(3, "halted", f"halted: the outcome of {record.target} ({step.path} step {step.number}) is "
                   f"unknown; record it with 'sage runs resolve {self.run_id} {where} --ok JSON | --failed MESSAGE "
                   f"| --not-run' and resume")

    def pause(self, step: Step, digest: str, request: Any) -> None:
        """No one can answer the step here (SPEC §17.3): it waits, recorded with what it asks, and the run
        pauses; which steps wait, and the lines that say so, are read back when the run releases its lease."""
        self.record(step, digest, step.safety, WAITING, request)
        self._stop(5, "paused", "")

    def answered(self, step: Step) -> StepRecord | None:
        """The decision or answer `sage runs approve|deny|answer` recorded for a waiting step after this
        execution read the journal (it is taken rather than overwritten by a second pause)."""
        with _store_errors(self):
            records = self.store.steps(self.run_id)
        return next((r for r in records if r.path == step.path and r.number == step.number and r.status == DONE),
                    None)

    def diverge(self, step: Step, record: StepRecord) -> None:
        """Stop the run on a step that is not the one recorded: what differs is named (the kind or target
        shows it; when only the arguments differ, it says so)."""
        same = (record.kind, record.target) == (step.kind, step.target)
        self._stop(1, "diverged", f"error: journal divergence at {step.path} step {step.number}: recorded "
                   f"{record.kind} {record.target}, now {step.kind} {step.target}"
                   + (" with other arguments" if same else ""))

    def cancel(self) -> None:
        """`sage runs cancel` (from the lease's heartbeat): every agent stops before its next step, and the
        run ends `cancelled` with exit code 130."""
        try:
            self._stop(130, "cancelled", f"run {self.run_id} cancelled")
        except JournalStopped:
            pass

    def _stop(self, code: int, kind: str, message: str) -> None:
        with self.lock:
            first = self.stop_code is None
            if first:
                self.stop_code, self.kind, self.stop_message = code, kind, message
        if first:
            runtime = self.runtime
            with runtime.lock:
                agents = list(runtime.agents)
            for agent in agents:   # nothing more is printed: the run resumes from its last record
                agent.replay_until = sys.maxsize
            runtime.stop_all()
            self.stopped.set()
        raise JournalStopped()

    # ---------------------------------------------------------------- MCP handles
    def live_handle(self, handle: str, connect: Perform) -> str:
        """The live handle behind a handle the program holds, connecting again for a replayed mcp_connect."""
        with self.lock:
            entry = self.handles.get(handle)
        if entry is None:
            return handle
        if isinstance(entry, str):
            return entry
        live = connect(McpStep(target="mcp_connect", arguments=entry, agent=None))
        with self.lock:
            self.handles[handle] = live
        return live

    def connection(self, handle: str, open_id: Callable[[str], int | None]) -> int | None:
        """`mcp_connection(h)` (a lookup, not a step): the id of the program's handle while its connection is
        open — a replayed mcp_connect's counts as open, as in the recorded run, until it is disconnected."""
        with self.lock:
            entry = self.handles.get(handle)
        if entry is None:
            return open_id(handle)
        if isinstance(entry, str) and open_id(entry) is None:
            return None
        number = handle.rpartition(":")[2]
        return int(number) if number.isdigit() else None

    def program_handle(self, live: str) -> str:
        """The handle the program gets for a new connection: the live one unless the journal gave that name
        to a recorded connection."""
        with self.lock:
            if live not in self.recorded_handles and live not in self.handles:
                return live
            taken = self.recorded_handles | set(self.handles)
            name = next(f"mcp:{n}" for n in itertools.count(1) if f"mcp:{n}" not in taken)
            self.handles[name] = live
            return name


class JournalLayer:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def perform(self, step: Step, next: Perform) -> Any:
        journal = self.journal
        if step.path is None:   # a server's sampling request, answered for no agent in particular
            return next(step)
        if journal.stopped.is_set():
            raise JournalStopped()
        journal.confirm_lease()
        digest = args_hash(step.arguments)
        record = journal.records.get((step.path, step.number))
        if record is not None:
            if record.kind != step.kind or record.target != step.target or record.args_hash != digest:
                journal.diverge(step, record)
            if record.status == DONE:
                return self._replay(step, record, next)
            if record.status == STEP_FAILED:
                raise decode_error(step, record.outcome)
            if record.safety == "destructive":
                journal.halt(step, record)
        return self._live(step, digest, next)

    # ---------------------------------------------------------------- replay
    def _replay(self, step: Step, record: StepRecord, next: Perform) -> Any:
        kind = step.kind
        if kind == RECEIVE:
            return self._replay_receive(step, record.outcome)
        if kind == AWAIT:
            if record.outcome:   # it was in time: the awaited agent, replaying too, fixes its result again
                return step.awaited.wait_result(step.agent, None)
            return False
        if kind == MCP:
            return self._replay_mcp(step, record, next)
        return decode_value(step, record.outcome)

    def _replay_receive(self, step: Step, outcome: Any) -> tuple:
        """The recorded message, taken from the mailbox when its sender sends it again; messages that arrive
        before it wait aside for the receives after it."""
        sender_path = outcome.get("from") if isinstance(outcome, dict) else None
        number = outcome.get("send") if isinstance(outcome, dict) else None

        def recorded(item: tuple) -> bool:
            sender = item[1]
            return (sender.path if sender is not None else None) == sender_path and item[2] == number
        agent = step.agent
        return agent.mailbox.get(agent, recorded)

    def _replay_mcp(self, step: Step, record: StepRecord, next: Perform) -> Any:
        journal = self.journal
        if step.target == "mcp_connect":
            with journal.lock:
                journal.handles[record.outcome] = list(step.arguments)
            return record.outcome
        if step.target == "mcp_disconnect":
            with journal.lock:
                live = journal.handles.pop(step.arguments[0], None)
            if isinstance(live, str):   # connected again meanwhile: close it as the recorded run did
                try:
                    next(McpStep(target="mcp_disconnect", arguments=[live], agent=None, safety_class="idempotent"))
                except SageRaise:
                    pass
            return None
        return decode_value(step, record.outcome)

    # ---------------------------------------------------------------- live
    def _live(self, step: Step, digest: str, next: Perform) -> Any:
        journal = self.journal
        if step.kind == STATE and not step.target.endswith(".get"):
            return self._write_field(step, digest)
        safety = "destructive"
        try:
            safety = step.safety   # first: a remote tool's class is looked up by the handle the program holds
            if step.kind == MCP and step.target != "mcp_connect" and step.arguments:
                live = journal.live_handle(step.arguments[0], next)
                if live != step.arguments[0]:
                    step.arguments = [live, *step.arguments[1:]]
            if safety == "destructive":
                journal.record(step, digest, safety, STARTED)
            value = next(step)
        except SageRaise as exc:
            if not self._stopping(step):
                journal.record(step, digest, safety, STEP_FAILED, encode_error(exc.error))
            raise
        except NoOneToAsk as exc:   # an approval or a question that only a person can answer
            record = journal.answered(step) if (step.path, step.number) in journal.records else None
            if record is None:
                journal.pause(step, digest, exc.request)
            return decode_value(step, record.outcome)
        if step.kind == RECEIVE:
            sender = value[1]
            outcome = {"from": sender.path if sender is not None else None, "send": value[2]}
        else:
            if step.kind == MCP and step.target == "mcp_connect":
                value = journal.program_handle(value)
            outcome = encode_value(step, value, journal.secret_names)
        journal.record(step, digest, safety, DONE, outcome)
        return value

    def _write_field(self, step: Step, digest: str) -> Any:
        """`self.f.set(v)`, `self.f.update(fn)` and checkpoints: the field's new value and the step's record
        commit in one transaction (the store gives an update's record its outcome, the new value). The
        statement `checkpoint();` saves each field of the agent in turn, the record with the last one."""
        journal = self.journal
        agent_name, field, value = step.field
        record = StepRecord(step.path, step.number, step.kind, step.target, digest, step.safety, DONE, None)
        store = step.agent.runtime.store
        journal.flush()
        with _store_errors(journal, fields_only=True):
            return self._write_field_records(step, digest, record, store, agent_name, field, value)

    def _write_field_records(self, step: Step, digest: str, record: StepRecord, store: Any, agent_name: str,
                             field: str | None, value: Any) -> Any:
        journal = self.journal
        if step.target.endswith(".set"):
            store.save(agent_name, field, value, step.arguments[0], record, journal.run_id)
            return UNIT
        if not step.target.endswith(".update"):   # a checkpoint: saves the values the fields hold
            names = [field] if field is not None else [f.name for f in step.agent.agent.persistent]
            for i, name in enumerate(names):
                last = i == len(names) - 1
                store.save(agent_name, name, store.get(agent_name, name), None, record if last else None,
                           journal.run_id if last else None)
            if not names:
                journal.record(step, digest, step.safety, DONE)
            return UNIT
        try:
            return store.update(agent_name, field, step.agent.agent.persistent_types[field], value, record,
                                journal.run_id)
        except SageRaise as exc:   # a runtime fault of the function: nothing was written
            if not self._stopping(step):
                journal.record(step, digest, step.safety, STEP_FAILED, encode_error(exc.error))
            raise

    def _stopping(self, step: Step) -> bool:
        """Whether an error is the run stopping under the step rather than the step's outcome."""
        agent = step.agent
        return agent.cancelled or agent.runtime.shutting_down or self.journal.stopped.is_set()


class _store_errors:
    """A journal write that fails is SPEC §4.8's runtime error, never an internal one; a lost lease or a
    database unreachable for 30 s stops the run (it stays resumable) with SPEC §14.1's message.
    `fields_only`: a field write, whose store (runtime.persistence) words Busy and Unavailable itself."""

    def __init__(self, journal: Journal, fields_only: bool = False) -> None:
        self.journal = journal
        self.fields_only = fields_only

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        journal = self.journal
        if isinstance(exc, TakenOver):
            journal.taken_over(exc)
            raise JournalStopped() from None
        if isinstance(exc, Unreachable):
            from ..store.config import open_failure_for_store
            journal.groups.close()
            journal._stop(1, "unreachable", open_failure_for_store(journal.store, exc))
        if self.fields_only:
            return False
        path = journal.store.path
        if isinstance(exc, Busy):
            raise SageRaise(ErrorValue("Runtime", f"persistent store busy: {path}")) from None
        if isinstance(exc, Unavailable):
            raise SageRaise(ErrorValue("Runtime", f"persistent store unavailable: {path}: {exc}")) from None
        return False
