"""Grouped outcome commits (SPEC §14): the outcome records of read-only and idempotent steps wait in memory
and are committed together, one transaction for many steps, instead of one each.

A pending outcome is committed before the next destructive step's intent, before any `state` write, before
a pause or halt and before the run ends (the journal calls `flush` there), and never waits longer than
`MAX_WAIT_SECONDS`: a timer commits whatever is pending when its oldest record reaches that age. A crash can
then lose only outcomes of steps that are safe to perform again, and since groups commit in the order their
records were made, what survives a crash is always a prefix of the journal. Every agent of the run shares one
group, so that one agent's intent also commits another agent's earlier outcomes. One timer thread serves the
groups of every run of the process (a thread-mode worker's thousand runs start no thread each for it).

A commit that fails keeps its records pending, in order (a journal never has a gap). On the timer's thread
it cannot raise into the program: the failure is kept, the group's timer stops, and the next `add` or
`flush`, on an agent's thread, raises it.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Callable

from ..effect_builtins import EFFECT_BUILTINS
from ..store.base import StepRecord

MAX_WAIT_SECONDS = 0.05
# The timer commits a little before the limit: waking up and committing take time too.
_TIMER_SECONDS = 0.04


class OutcomeGroups:
    def __init__(self, commit: Callable[[list[StepRecord]], None]) -> None:
        self._commit = commit                 # store.record_steps(run_id, records), one transaction
        self._pending: list[StepRecord] = []
        self._lock = threading.Lock()         # guards _pending
        self._flushing = threading.Lock()     # one commit at a time, in the order the records were made
        self._failure: BaseException | None = None
        self._closed = False

    def add(self, record: StepRecord) -> None:
        with self._lock:
            self._raise_failure()
            first = not self._pending
            self._pending.append(record)
        if first:
            _timer.commit_later(self, time.monotonic() + _TIMER_SECONDS)

    def flush(self) -> None:
        """Commit every pending record now (on the caller's thread); raises what a commit raised."""
        with self._flushing:
            with self._lock:
                self._raise_failure()
                records, self._pending = self._pending, []
            if records:
                try:
                    self._commit(records)
                except BaseException:   # kept, in order, for the next flush: a journal never has a gap
                    with self._lock:
                        self._pending[:0] = records
                    raise

    def discard(self) -> None:
        """Forget the pending records (the run lost its lease: they must not be written) and stop the timer."""
        with self._lock:
            self._pending = []
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _due(self) -> None:
        """The timer's commit: what is pending, unless the group was closed."""
        with self._lock:
            if self._closed:
                return
        try:
            self.flush()
        except BaseException as exc:  # kept for an agent's thread: see the module's docstring
            with self._lock:
                self._failure = exc
                self._closed = True


class _Timer:
    """The one thread that commits the groups whose oldest pending record is due, soonest first."""

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
                group = heapq.heappop(self._due)[2]
            group._due()


_timer = _Timer()


# Outcomes the program uses at once and that cannot be had again (`fresh` in sagepy.effect_builtins): never
# grouped (SPEC §14).
_UNGROUPED_TARGETS = frozenset(name for name, b in EFFECT_BUILTINS.items() if b.fresh)


def groupable(record: StepRecord) -> bool:
    """Whether an outcome record may wait in a group: a read-only or idempotent step's, other than an
    approval's, an answer's (`ask`) or a line of stdin's."""
    return record.safety in ("read_only", "idempotent") and record.kind != "approval" \
        and record.target not in _UNGROUPED_TARGETS
