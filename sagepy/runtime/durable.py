"""Durable runs from `sage run`'s side (SPEC §14): the run record, its id, resuming, the lease, the ending.

A durable run is created (or, with `--resume`, found) in the project's store before the entry agent starts;
its journal (sagepy.effects.journal) joins the effects chain; a LeaseKeeper keeps its lease fresh while it
runs (the lease carries a random token that fences every write of this process, SPEC §14.1); at the end the
pending outcomes are committed and the record gets its status and exit code, or, when the run stopped early
(a halt, a divergence, a signal, a lost lease), stays resumable.
"""
from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..store.base import COMPLETED, FAILED, HALTED, PAUSED, RUNNING, RunRecord, TakenOver
from ..store.leases import HEARTBEAT_SECONDS, lease_is_stale
from ..store.queue import CANCELLED, CANCELLED_EXIT, QUEUED, RunInfo, record_arguments

if TYPE_CHECKING:
    from ..workers.child import WorkerClaim

NEEDS_PERSISTENCE = "error: durable runs need a [persistence] table in grove.toml"


class DurableExit(Exception):
    """A run ends before (or instead of) running the program: its exit code, the message its host is told, and
    the status of a run that had ended already (else None)."""

    def __init__(self, code: int, message: str, status: str | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.status = status


def new_run_id(now: float | None = None) -> str:
    """`YYYYMMDD-HHMMSS-xxxx`: the UTC start time and 4 random hex digits."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


def find_run(store: Any, run_id: str) -> RunRecord:
    """The run a RUN_ID argument names (`last`: the newest of the project); DurableExit when there is none."""
    from ..store.base import NoRun, find_run as find_stored_run
    try:
        return find_stored_run(store, run_id)
    except NoRun as exc:
        raise DurableExit(1, f"error: {exc}") from None


class LeaseKeeper:
    """Keeps the leases of durable runs on one store fresh: every second, one `renew_leases` for all of them,
    which also reads their cancel requests (`sage runs cancel`: the run stops before its next step). A run
    whose lease was taken over stops at once. One thread, alive while there is a run to keep: a `sage run`
    has a keeper of its own; the runs of a thread-mode worker share one (a thousand runs, one transaction a
    second)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._journals: dict[str, Any] = {}   # run id -> the run's journal (sagepy.effects.journal.Journal)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, journal: Any) -> None:
        with self._lock:
            self._journals[journal.run_id] = journal
            if self._thread is None:
                self._thread = threading.Thread(target=self._keep, name="sage-lease", daemon=True)
                self._thread.start()

    def remove(self, journal: Any) -> None:
        """The run is ending: no beat tells it anything after this returns, and none renews its lease once the
        store has released it."""
        with self._lock:
            if self._journals.get(journal.run_id) is journal:
                del self._journals[journal.run_id]

    def _keep(self) -> None:
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            with self._lock:
                journals = {run_id: j for run_id, j in self._journals.items() if not j.stopped.is_set()}
                if not self._journals:
                    self._thread = None
                    return
            if journals:
                self._beat(journals)

    def _beat(self, journals: dict[str, Any]) -> None:
        asked = time.monotonic()   # the heartbeat is stamped later than this: the lease lasts 10 s from it
        try:
            taken, cancels = self.store.renew_leases(list(journals))
        except Exception:  # a busy store this second: the lease stays fresh for 10 s, the next beat may pass
            return
        with self._lock:   # a run that is ending meanwhile (remove) is told nothing
            for run_id, journal in journals.items():
                if self._journals.get(run_id) is not journal:
                    continue
                lost = taken.get(run_id)
                if lost is not None:
                    journal.taken_over(lost)
                    continue
                journal.confirmed = asked
                if run_id in cancels:
                    journal.cancel()


class DurableRun:
    """One execution of a durable run by this process."""

    def __init__(self, store: Any, run: RunRecord | None, resumed: bool,
                 say: Callable[[str], None], claim: WorkerClaim | None = None,
                 leases: LeaseKeeper | None = None) -> None:
        self.store = store            # the project's base.Store
        self.say = say                # where the run's notices go: its host's `err`
        self.run = run                # the record being resumed (None until `start` for a new run)
        self.resumed = resumed
        self.journal: Any = None
        self.runtime: Any = None
        self.leases = leases if leases is not None else LeaseKeeper(store)   # keeps the lease while it runs
        self.version = ""             # the program version (SPEC §14.2), recorded with a new run
        self.claim = claim if resumed else None   # the claim of the worker executing this run

    @classmethod
    def prepare(cls, store: Any, resume: str | None, say: Callable[[str], None],
                claim: WorkerClaim | None = None, leases: LeaseKeeper | None = None) -> "DurableRun":
        """Before the program runs: find the run to resume and refuse one that has ended. `claim`: the worker's
        claim the run executes under (sagepy.workers.child), whose lease it may take over; `leases`: the
        keeper it shares with other runs of this process on `store` (default: one of its own)."""
        if resume is None:
            return cls(store, None, False, say, leases=leases)
        held = claim.held if claim is not None else None
        # a claim of this process's own worker hands the run over as it read it: `running`, nothing to look up
        run = held.run if held is not None else find_run(store, resume)
        if run.status in (COMPLETED, FAILED):
            code = run.exit_code if run.exit_code is not None else 0
            raise DurableExit(code, f"run {run.id} already ended with exit code {code}", run.status)
        if run.status == CANCELLED:
            raise DurableExit(CANCELLED_EXIT, f"run {run.id} was cancelled", CANCELLED)
        return cls(store, run, True, say, claim, leases)

    @property
    def run_id(self) -> str:
        return self.run.id if self.run is not None else ""

    def check_version(self, version: str) -> None:
        """Record the program's version; a worker's run whose files changed since the worker started is given
        back for a worker of its version (before its first step: nothing has run)."""
        self.version = version
        claim = self.claim
        if claim is not None and claim.version and version != claim.version:
            from ..workers.child import LEFT_EXIT
            self.store.unclaim_run(self.run.id, claim.was_queued)
            raise DurableExit(LEFT_EXIT, "")

    def start(self, entry: str, runtime: Any, journal: Any, run_id: str | None = None) -> None:
        """Take the lease (a new run is created holding it, with the id `run_id` when given), announce the run,
        give the run's records to the journal of the effects chain (sagepy.effects.journal.Journal) and start
        the heartbeat."""
        store = self.store
        pid, host, now = os.getpid(), socket.gethostname(), time.time()
        token = secrets.token_hex(16)
        if self.resumed:
            run = self.run
            claim = self.claim
            held = claim.held if claim is not None else None
            if held is not None:   # the claim's lease, taken over as it is: the claim made the run `running`,
                # recorded this host and read the queue row, and said whether there is a journal to read
                store.hold_lease(run.id, held.run.lease_token)
                info = held.info
                records = store.steps(run.id) if held.journaled else []
            else:
                info, records = self._take_lease(run, claim, pid, host, token)
            if info is not None and info.args is not None:
                runtime.program_args = record_arguments(info)
            elif info is None:   # a run journaled before arguments were recorded
                store.set_run_info(run.id, RunInfo(version=self.version, args=list(runtime.program_args), host=host))
            if claim is None:   # a worker says so itself (`run <id>: resumed`)
                self.say(f"resuming run {run.id}")
            elif claim.capture:   # a run's own process: what it prints from now on is stored with the run
                from ..workers.child import capture_output
                capture_output(store, run.id)
        else:
            if run_id is None or store.get_run(run_id) is not None:
                run_id = new_run_id(now)
                while store.get_run(run_id) is not None:
                    run_id = new_run_id(now)
            self.run = RunRecord(run_id, now, RUNNING, None, entry, pid, host, now, token)
            store.create_run(self.run)
            store.set_run_info(run_id, RunInfo(version=self.version, args=list(runtime.program_args), host=host))
            records = []
            self.say(f"run id: {run_id}")
        journal.begin(self.run.id, records)
        self.journal = journal
        self.runtime = runtime
        runtime.replay_horizon = journal.horizon
        self.leases.add(journal)
        if self.claim is not None and self.claim.taken is not None:
            self.claim.taken()

    def _take_lease(self, run: RunRecord, claim: WorkerClaim | None, pid: int, host: str,
                    token: str) -> tuple[RunInfo | None, list]:
        """Take the lease of a run being resumed (a fresh one is refused), make it `running` again and read its
        queue row and journal."""
        store = self.store

        def is_stale(owner: RunRecord) -> bool:
            return lease_is_stale(owner) or (claim is not None and claim.may_take(owner, host))
        owner = store.acquire_lease(run.id, pid, host, token, is_stale)
        if owner is not None:
            raise DurableExit(1, f"error: run {run.id} is being executed by process {owner.lease_pid} "
                                 f"on {owner.lease_host}")
        if run.status in (HALTED, QUEUED, PAUSED):   # resolved, submitted or answered since (or not): running again
            store.mark_running(run.id)
        store.note_owner(run.id, host)
        return store.run_info(run.id), store.steps(run.id)

    def finish(self, code: int, ending: str) -> None:
        """Record how this execution ended. `ending`: "completed", "failed" or "cancelled" (the run has ended),
        "halted", "paused" (waiting for a person: one line per waiting step on stderr), or "stopped" (a
        divergence or a signal: the run stays resumable, its lease released)."""
        from ..effects.journal import JournalStopped
        store = self.store
        journal = self.journal
        if journal is not None:
            self.leases.remove(journal)
        if self.runtime is not None:
            # the run's MCP servers end before its lease does: once another process may take the run, no call
            # of this one is still going on (an agent still busy past the shutdown's grace finds its writes
            # fenced: the store keeps the run's lease as released)
            self.runtime.effects.world.close()
        if journal is not None and journal.kind in ("taken over", "unreachable"):
            journal.close()   # the run is another process's now, or the database is out of reach
            return
        try:
            if ending in (COMPLETED, FAILED, HALTED, CANCELLED):
                # the outcomes and output lines still pending commit with the end: one transaction
                store.end_run(self.run.id, ending, code, journal.last_writes() if journal is not None else None)
                return
            if journal is not None:
                journal.close()
            if ending == PAUSED:
                for step in store.pause_run(self.run.id):
                    self.say(paused_line(self.run.id, step))
            else:
                store.release_lease(self.run.id)
        except JournalStopped:   # the last commit found the lease lost or the database out of reach
            self.say(journal.stop_message)
        except TakenOver as exc:   # deposed between its last step and its end: the new owner ends the run
            self.say(f"error: run {self.run.id} was taken over by process {exc.pid} on {exc.host}")
        except Exception as exc:  # the run still ended as reported; the record says `running` until resumed
            self.say(f"warning: could not record the end of run {self.run.id}: {exc}")


def paused_line(run_id: str, step: Any) -> str:
    """What a paused run says of one waiting step (SPEC §17.3)."""
    where = f"{step.path}:{step.number}"
    if step.kind == "approval":
        from ..core.json_text import compact_json
        return (f"paused: {step.target} {compact_json(step.outcome)} needs approval ({step.path} step {step.number}); "
                f"approve with 'sage runs approve {run_id} {where}' or deny with 'sage runs deny {run_id} {where} "
                f"--reason TEXT', then resume")
    return (f"paused: question for a person ({step.path} step {step.number}): {step.outcome}; answer with "
            f"'sage runs answer {run_id} {where} TEXT', then resume")

