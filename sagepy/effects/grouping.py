"""Grouped outcome commits (SPEC §14): the outcome records of read-only and idempotent steps wait in memory
and are committed together, one transaction for many steps, instead of one each. A worker's run keeps the
lines it prints in the same group (sagepy.engine.queued): each is stored with the outcomes made around it.

A pending outcome is committed before the next destructive step's intent, before any `state` write, before
a pause or halt and with the run's end (the journal calls `flush` there, or takes the last of it with
`take_last`), and never waits longer than `MAX_WAIT_SECONDS`: a timer commits whatever is pending when its
oldest record reaches that age. A crash can then lose only outcomes of steps that are safe to perform again,
and since groups commit in the order their records were made, what survives a crash is always a prefix of the
journal. Every agent of the run shares one group, so that one agent's intent also commits another agent's
earlier outcomes. One timer thread serves the groups of every run of the process, and when it wakes it
commits every group pending on a store in ONE transaction (`record_steps_of`): a thread-mode worker's
thousand runs start no thread each for it, and cost a transaction per tick rather than one per run.

A commit that fails keeps its records pending, in order (a journal never has a gap). On the timer's thread
it cannot raise into the program: the failure is kept, the group's timer stops, and the next `add` or
`flush`, on an agent's thread, raises it. A run whose lease another process took meanwhile gets nothing
written, by the timer's commit as by its own: the timer keeps the TakenOver for it.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Any

from ..effect_builtins import EFFECT_BUILTINS
from ..store.base import Pending, StepRecord

MAX_WAIT_SECONDS = 0.05
# The timer commits a little before the limit: waking up and committing take time too.
_TIMER_SECONDS = 0.04


class OutcomeGroups:
    """The pending writes of one run (`run_id`) on `store` (a base.Store)."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._pending = Pending()
        self._lock = threading.Lock()         # guards _pending, _failure and _closed
        self._flushing = threading.Lock()     # one commit at a time, in the order the records were made
        self._failure: BaseException | None = None
        self._closed = False

    def add(self, record: StepRecord) -> None:
        with self._lock:
            self._raise_failure()
            first = not self._pending
            self._pending.steps.append(record)
        if first:
            _timer.commit_later(self, time.monotonic() + _TIMER_SECONDS)

    def add_line(self, stream: str, line: str) -> bool:
        """A line the run printed, committed with the pending outcomes; False when the group takes no more
        (closed, or its last commit failed): the caller stores the line itself."""
        with self._lock:
            if self._closed:
                return False
            first = not self._pending
            self._pending.output.append((stream, line))
        if first:
            _timer.commit_later(self, time.monotonic() + _TIMER_SECONDS)
        return True

    def flush(self) -> None:
        """Commit every pending record now (on the caller's thread); raises what a commit raised."""
        with self._flushing:
            with self._lock:
                self._raise_failure()
                pending, self._pending = self._pending, Pending()
            if pending:
                try:
                    taken = self.store.record_steps_of({self.run_id: pending})
                except BaseException:   # kept, in order, for the next flush: a journal never has a gap
                    self._restore(pending)
                    raise
                if self.run_id in taken:
                    raise taken[self.run_id]

    def take_last(self) -> Pending:
        """Close the group and hand over what is pending, once any commit under way has ended: the caller
        commits it with the run's end, in one transaction. Raises what a commit raised."""
        with self._flushing:
            with self._lock:
                self._closed = True
                self._raise_failure()
                pending, self._pending = self._pending, Pending()
        return pending

    def discard(self) -> None:
        """Forget the pending records (the run lost its lease: they must not be written) and stop the timer."""
        with self._lock:
            self._pending = Pending()
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _restore(self, pending: Pending) -> None:
        """Put back records a commit did not write, before the ones made since."""
        with self._lock:
            self._pending = Pending(pending.steps + self._pending.steps, pending.output + self._pending.output)

    def _take_due(self) -> Pending | None:
        """What the timer commits now: what is pending, unless the group was closed."""
        with self._lock:
            if self._closed or not self._pending:
                return None
            pending, self._pending = self._pending, Pending()
            return pending

    def _failed(self, failure: BaseException, unwritten: Pending | None) -> None:
        """The timer's commit failed (`unwritten`, kept pending) or found the lease lost (None: nothing is kept):
        the failure waits for an agent's thread, and the timer stops."""
        if unwritten is not None:
            self._restore(unwritten)
        with self._lock:
            self._failure = failure
            self._closed = True


def _commit_together(store: Any, groups: list[OutcomeGroups]) -> None:
    """The timer's commit of `groups`, all on `store`: one transaction for all of them, each group's after any
    commit of its own under way (in the order its records were made). A second group of one run waits for the
    next transaction."""
    held: dict[str, tuple[OutcomeGroups, Pending]] = {}
    later = []
    try:
        for group in groups:
            if group.run_id in held:   # an earlier execution of the run, still finishing in this process
                later.append(group)
                continue
            group._flushing.acquire()
            pending = group._take_due()
            if pending is None:
                group._flushing.release()
                continue
            held[group.run_id] = (group, pending)
        if not held:
            return
        try:
            taken = store.record_steps_of({run_id: pending for run_id, (_, pending) in held.items()})
        except BaseException as exc:  # kept for an agent's thread: see the module's docstring
            for group, pending in held.values():
                group._failed(exc, pending)
            return
        for run_id, lost in taken.items():
            held[run_id][0]._failed(lost, None)
    finally:
        for group, _ in held.values():
            group._flushing.release()
    for group in later:
        _timer.commit_later(group, time.monotonic())


class _Timer:
    """The one thread that commits pending groups: when the oldest is due, it commits every group pending, of
    every run, one transaction per store."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, OutcomeGroups]] = []   # a heap: (when, order, group)
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def commit_later(self, group: OutcomeGroups, when: float) -> None:
        with self._wake:
            heapq.heappush(self._due, (when, next(self._order), group))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sage-journal-group", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(self._due[0][0] - time.monotonic() if self._due else None)
                # committing a group before its time costs nothing, and all of them together costs one
                # transaction: every pending group goes now
                due, self._due = self._due, []
            stores: dict[int, tuple[Any, list[OutcomeGroups]]] = {}
            for group in dict.fromkeys(group for _, _, group in sorted(due)):   # a group armed twice: once
                stores.setdefault(id(group.store), (group.store, []))[1].append(group)
            for store, groups in stores.values():
                _commit_together(store, groups)


_timer = _Timer()


# Outcomes the program uses at once and that cannot be had again (`fresh` in sagepy.effect_builtins): never
# grouped (SPEC §14).
_UNGROUPED_TARGETS = frozenset(name for name, b in EFFECT_BUILTINS.items() if b.fresh)


def groupable(record: StepRecord) -> bool:
    """Whether an outcome record may wait in a group: a read-only or idempotent step's, other than an
    approval's, an answer's (`ask`) or a line of stdin's."""
    return record.safety in ("read_only", "idempotent") and record.kind != "approval" \
        and record.target not in _UNGROUPED_TARGETS
