"""The in-process store: the interface of base.Store in dictionaries, for programs without `[persistence]`
(or with `backend = "memory"`) and for every test under `sage test`. Nothing outlives the process, so runs
are not journaled in it (`durable = False`); its runs and steps serve tests of the code that uses the
interface. One reentrant lock makes each method atomic, `update_field` included (a write inside its function
runs on the same thread and joins it)."""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from .base import COMPLETED, FAILED, INTERRUPTED, PAUSED, RUNNING, WAITING, Pending, RunRecord, StepRecord
from .queue import ENDED


class MemoryStore:
    path = None
    durable = False

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._fields: dict[tuple[str, str], Any] = {}
        self._runs: dict[str, RunRecord] = {}
        self._steps: dict[str, dict[tuple[str, int], StepRecord]] = {}

    # A value read is a copy, as the SQLite store's JSON text is, so that a caller changing what it got does
    # not change the store; a value written is kept as given (the caller made it for the store: to_json's
    # fresh data), since copying every write would cost a program that sets a large field in a loop.

    def get_field(self, agent: str, field: str) -> tuple[bool, Any]:
        with self._lock:
            key = (agent, field)
            return (True, copy.deepcopy(self._fields[key])) if key in self._fields else (False, None)

    def set_field(self, agent: str, field: str, value: Any, step: StepRecord | None = None,
                  run_id: str | None = None) -> None:
        with self._lock:
            self._fields[(agent, field)] = value
            if step is not None:
                self.record_step(run_id, step)

    def update_field(self, agent: str, field: str, fn: Callable[[tuple[bool, Any]], Any],
                     step: StepRecord | None = None, run_id: str | None = None) -> Any:
        with self._lock:
            new = fn(self.get_field(agent, field))
            self._fields[(agent, field)] = new
            if step is not None:
                step.outcome = new
                self.record_step(run_id, step)
            return new

    def create_run(self, run: RunRecord) -> None:
        with self._lock:
            if run.id in self._runs:
                raise ValueError(f"run {run.id} exists")
            self._runs[run.id] = replace(run)
            self._steps[run.id] = {}

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._lock:
            run = self._runs.get(run_id)
            return _read(run) if run is not None else None

    def newest_run(self) -> RunRecord | None:
        runs = self.list_runs()
        return runs[0] if runs else None

    def list_runs(self) -> list[RunRecord]:
        with self._lock:
            return [_read(run) for run in sorted(self._runs.values(), key=lambda r: (r.started_at, r.id),
                                                   reverse=True)]

    def end_run(self, run_id: str, status: str, exit_code: int | None, pending: Pending | None = None) -> None:
        with self._lock:
            if pending:
                self.record_steps(run_id, pending.steps)
            run = self._runs.get(run_id)
            if run is not None:
                run.status, run.exit_code = status, exit_code
                run.lease_heartbeat = run.lease_token = None

    def prune_runs(self, keep: int) -> list[str]:
        with self._lock:
            ended = [run.id for run in self.list_runs() if run.status in (COMPLETED, FAILED)]
            pruned = ended[max(0, keep):]
            for run_id in pruned:
                del self._runs[run_id]
                del self._steps[run_id]
            return pruned

    def steps(self, run_id: str) -> list[StepRecord]:
        with self._lock:
            records = self._steps.get(run_id, {})
            return [copy.deepcopy(records[key]) for key in sorted(records)]

    def record_step(self, run_id: str, step: StepRecord) -> None:
        with self._lock:
            self._steps.setdefault(run_id, {})[(step.path, step.number)] = copy.deepcopy(step)

    def record_steps(self, run_id: str, steps: list[StepRecord]) -> None:
        for step in steps:
            self.record_step(run_id, step)

    def record_steps_of(self, pending: Mapping[str, Pending]) -> dict[str, Any]:
        # no leases to fence with, and no output lines to keep: process memory journals no run (`durable`)
        with self._lock:
            for run_id, each in pending.items():
                self.record_steps(run_id, each.steps)
        return {}

    def record_intent(self, run_id: str, step: StepRecord) -> bool:
        with self._lock:
            records = self._steps.setdefault(run_id, {})
            if (step.path, step.number) in records:
                return False
            records[(step.path, step.number)] = copy.deepcopy(step)
            return True

    def delete_step(self, run_id: str, path: str, number: int) -> None:
        with self._lock:
            self._steps.get(run_id, {}).pop((path, number), None)

    def pause_run(self, run_id: str) -> list[StepRecord]:
        with self._lock:
            waiting = [step for step in self.steps(run_id) if step.status == WAITING]
            self.end_run(run_id, PAUSED if waiting else RUNNING, 5 if waiting else None)
            return waiting

    def decide_step(self, run_id: str, step: StepRecord) -> str | None:
        with self._lock:
            run = self._runs[run_id]
            if run.status in ENDED:
                return run.status
            found = self._steps.get(run_id, {}).get((step.path, step.number))
            if found is None or found.status != WAITING:
                return None
            self.record_step(run_id, step)
            if run.status != PAUSED:
                return run.status
            self.end_run(run_id, RUNNING, None)
            return INTERRUPTED

    def acquire_lease(self, run_id: str, pid: int, host: str, token: str,
                      is_stale: Callable[[RunRecord], bool]) -> RunRecord | None:
        with self._lock:
            run = self._runs[run_id]
            if run.lease_heartbeat is not None and not is_stale(_read(run)):
                return _read(run)
            run.lease_pid, run.lease_host, run.lease_heartbeat, run.lease_token = pid, host, time.time(), token
            return None

    def hold_lease(self, run_id: str, token: str) -> None:
        """Nothing to do: this store fences no write."""

    def heartbeat(self, run_id: str) -> None:
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None and run.lease_pid is not None:
                run.lease_heartbeat = time.time()

    def renew_leases(self, run_ids: Sequence[str]) -> tuple[dict[str, Any], set[str]]:
        for run_id in run_ids:
            self.heartbeat(run_id)
        return {}, set()

    def release_lease(self, run_id: str) -> None:
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None:
                run.lease_heartbeat = run.lease_token = None

    def close(self) -> None:
        pass


def _read(run: RunRecord) -> RunRecord:
    """A copy of the run with its lease's age on this process's clock."""
    found = replace(run)
    if found.lease_heartbeat is not None:
        found.lease_age = time.time() - found.lease_heartbeat
    return found
