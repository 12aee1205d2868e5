"""The run service (SPEC §14, §14.2, §17.4): the one place that finds, approves, denies, answers, resolves, cancels
and submits the durable runs of a project. `sage runs …` and the web console (`sage ui`) both call it.

Each operation works on an open store (sagepy/store/base.py with the queue's side, store/queue.py) and returns a
typed result, or raises a `Refused` naming why nothing was done (a `Refused` changes nothing). The callers word
them: `sage runs` as its messages always were, the console as its pages do. A run id is looked up once, by
`find_run` (`last`: the newest run), which raises `NoRun`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..decisions import Decision
from ..store.base import DONE, HALTED, STARTED, STEP_FAILED, WAITING, NoRun, RunRecord, StepRecord, find_run
from ..store.queue import ENDED, QUEUED, RunInfo

if TYPE_CHECKING:
    from ..diagnostics import Diagnostic
    from ..session import Session

__all__ = ["AlreadyEnded", "Answered", "Cancelled", "CheckFailed", "Decision", "NoEntry", "NoRun", "NoSuchStep",
           "NotHalted", "NotUnknown", "NotWaiting", "Pending", "Refused", "Resolution", "Resolved", "Submitted",
           "answer", "cancel", "decide", "find_run", "pending", "resolve", "submit"]


# ---------------------------------------------------------------- stop reasons

class Refused(Exception):
    """Nothing was done, for the reason the subclass and its fields name."""


class NotWaiting(Refused):
    """The step is not waiting for this decision or answer: another kind of step, no such step, or one decided
    already (`step`: its record now, when there is one — decided meanwhile by someone else, for instance)."""

    def __init__(self, run_id: str, path: str, number: int, question: bool, step: StepRecord | None) -> None:
        super().__init__(run_id, path, number)
        self.run_id, self.path, self.number = run_id, path, number
        self.question = question   # an answer to `ask` was given, rather than an approval decision
        self.step = step


class NotHalted(Refused):
    """Only the step a halted run stopped at can be resolved; the run is `status`."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(run_id, status)
        self.run_id, self.status = run_id, status


class NoSuchStep(Refused):
    def __init__(self, run_id: str, path: str, number: int) -> None:
        super().__init__(run_id, path, number)
        self.run_id, self.path, self.number = run_id, path, number


class NotUnknown(Refused):
    """The step's outcome is known already (`status`): only a `started` one can be resolved."""

    def __init__(self, run_id: str, path: str, number: int, status: str) -> None:
        super().__init__(run_id, path, number, status)
        self.run_id, self.path, self.number, self.status = run_id, path, number, status


class AlreadyEnded(Refused):
    def __init__(self, run_id: str, exit_code: int) -> None:
        super().__init__(run_id, exit_code)
        self.run_id, self.exit_code = run_id, exit_code


class NoEntry(Refused):
    """No entry file to submit: `entry` is where it was looked for."""

    def __init__(self, entry: str) -> None:
        super().__init__(entry)
        self.entry = entry


class CheckFailed(Refused):
    """The program has errors: nothing was queued."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(len(diagnostics))
        self.diagnostics = diagnostics


# ---------------------------------------------------------------- results

@dataclass(frozen=True)
class Answered:
    """A decision or answer recorded: `done` is `approved`, `denied` or `answered`; `requeued` when a worker was
    executing the run (it is `queued` again), else it waits for `sage run --resume`."""
    run_id: str
    path: str
    number: int
    done: str
    requeued: bool


@dataclass(frozen=True)
class Resolution:
    """What happened to a halted step: it returned `value` (`ok`), failed with `message`, or did not run."""
    ok: bool = False
    value: Any = None
    message: str | None = None

    @classmethod
    def returned(cls, value: Any) -> "Resolution":
        return cls(True, value)

    @classmethod
    def failed(cls, message: str) -> "Resolution":
        return cls(False, None, message)

    @classmethod
    def not_run(cls) -> "Resolution":
        return cls()


@dataclass(frozen=True)
class Resolved:
    """`done`: `done`, `failed` or `not run`; `requeued` as for Answered."""
    run_id: str
    path: str
    number: int
    done: str
    requeued: bool


@dataclass(frozen=True)
class Cancelled:
    """`at_once`: the run became `cancelled`; else its owner was told to stop before its next step."""
    run_id: str
    at_once: bool


@dataclass(frozen=True)
class Submitted:
    run_id: str
    version: str


@dataclass(frozen=True)
class Pending:
    """A step a paused run waits on: an approval of the call `label` (`question` False; `arguments` the call's) or
    a question (`question` True; `text` what it asks)."""
    run: RunRecord
    step: StepRecord
    question: bool
    label: str
    text: str
    arguments: Any = None


# ---------------------------------------------------------------- people (SPEC §17.4)

def _step(store: Any, run_id: str, path: str, number: int) -> StepRecord | None:
    return next((s for s in store.steps(run_id) if s.path == path and s.number == number), None)


def _is_waiting(step: StepRecord | None, question: bool) -> bool:
    if step is None or step.status != WAITING:
        return False
    return step.kind == "io" and step.target == "ask" if question else step.kind == "approval"


def decide(store: Any, run_id: str, path: str, number: int, decision: Decision) -> Answered:
    """Record an approval decision for the step PATH:N of the run, in the transaction that makes the paused run
    resumable again; NotWaiting when the step is not waiting for one (also when decided meanwhile)."""
    return _record(store, run_id, path, number, False, decision.outcome(),
                   "approved" if decision.approved else "denied")


def answer(store: Any, run_id: str, path: str, number: int, text: str) -> Answered:
    """Record the answer to the question (`ask`) the step PATH:N waits on; NotWaiting as for `decide`."""
    return _record(store, run_id, path, number, True, text, "answered")


def _record(store: Any, run_id: str, path: str, number: int, question: bool, outcome: Any, done: str) -> Answered:
    """AlreadyEnded for a run that has ended (or was cancelled, also while the answer was being recorded)."""
    run = find_run(store, run_id)
    if run.status in ENDED:
        raise AlreadyEnded(run.id, run.exit_code if run.exit_code is not None else 0)
    step = _step(store, run.id, path, number)
    if not _is_waiting(step, question):
        raise NotWaiting(run.id, path, number, question, step)
    assert step is not None
    step.outcome, step.status = outcome, DONE
    status = store.decide_step(run.id, step)
    if status is None:   # answered meanwhile
        raise NotWaiting(run.id, path, number, question, _step(store, run.id, path, number))
    if status in ENDED:   # cancelled meanwhile
        again = find_run(store, run.id)
        raise AlreadyEnded(run.id, again.exit_code if again.exit_code is not None else 0)
    return Answered(run.id, path, number, done, status == QUEUED)


def pending(store: Any, runs: list[RunRecord] | None = None) -> list[Pending]:
    """Every step a paused run of the project waits on, oldest run first."""
    from ..store.base import PAUSED
    found: list[Pending] = []
    for run in reversed(runs if runs is not None else store.list_runs()):
        if run.status != PAUSED:
            continue
        for step in store.steps(run.id):
            if step.status != WAITING:
                continue
            if step.kind == "approval":   # a waiting record keeps what it asks: the call's arguments
                found.append(Pending(run, step, False, step.target, "", step.outcome))
            elif step.kind == "io" and step.target == "ask":   # … or the question
                found.append(Pending(run, step, True, "ask", str(step.outcome)))
    return found


# ---------------------------------------------------------------- resolve (SPEC §14)

def resolve(store: Any, run_id: str, path: str, number: int, resolution: Resolution) -> Resolved:
    """Record what happened to the destructive step a halted run stopped at."""
    run = find_run(store, run_id)
    if run.status != HALTED:
        from ..store.leases import shown_status
        raise NotHalted(run.id, shown_status(run))
    step = _step(store, run.id, path, number)
    if step is None:
        raise NoSuchStep(run.id, path, number)
    if step.status != STARTED:
        raise NotUnknown(run.id, path, number, step.status)
    if resolution.ok:
        step.status, step.outcome = DONE, resolution.value
        store.record_step(run.id, step)
        done = "done"
    elif resolution.message is not None:
        # the message alone: on resume the journal raises it as an error of the kind the call raises
        step.status, step.outcome = STEP_FAILED, {"message": resolution.message}
        store.record_step(run.id, step)
        done = "failed"
    else:
        store.delete_step(run.id, path, number)
        done = "not run"
    return Resolved(run.id, path, number, done, store.requeue_run(run.id))


# ---------------------------------------------------------------- cancel and submit (SPEC §14.2)

def cancel(store: Any, run_id: str) -> Cancelled:
    """Cancel a run that has not ended; AlreadyEnded for one that has."""
    from ..store.leases import lease_is_stale
    run = find_run(store, run_id)
    if run.status in ENDED:
        raise AlreadyEnded(run.id, run.exit_code if run.exit_code is not None else 0)
    return Cancelled(run.id, bool(store.cancel_run(run.id, lease_is_stale)))


def submit(session: Session, store: Any, entry: str | None = None, args: list[str] | tuple[str, ...] = (),
           queue: str = "default") -> Submitted:
    """Check the program (CheckFailed: nothing queued) and queue a run of it with `args`, its program version
    and `queue`. `entry`: the file to run (default: the project's entry)."""
    from ..diagnostics import display_path
    from ..runtime.durable import new_run_id
    from ..workers.version import program_version, version_files
    entry = entry or session.entry_file()
    if not os.path.isfile(entry):
        raise NoEntry(display_path(entry))
    from ..engine import analyze
    program, diags = analyze(session, entry, test_file=False)
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise CheckFailed(errors)
    version = program_version(session.root, version_files(session, [m.path for m in program.modules]))
    now = time.time()
    run_id = new_run_id(now)
    while store.get_run(run_id) is not None:
        run_id = new_run_id(now)
    store.submit_run(RunRecord(run_id, now, QUEUED, None, display_path(entry)),
                     RunInfo(queue=queue, version=version, args=list(args)))
    return Submitted(run_id, version)

