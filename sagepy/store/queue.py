"""The queue's side of the store (SPEC §14.2): what a durable store keeps beyond runs, steps and leases so that
runs can be submitted, claimed by workers, recovered, cancelled and their output read.

Every backend keeps it in tables of its own (`run_queue`: one row per run, with its queue, program version,
recorded arguments, recoveries and a cancel request; `run_output`: the lines a run printed), beside the
journal's tables, and offers the methods of `QueueStore`. A run created before these tables existed simply has
no row: it belongs to no queue, has no version and its arguments were `[]`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .base import PAUSED, RunRecord

QUEUED, CANCELLED = "queued", "cancelled"
DEFAULT_QUEUE = "default"
CANCELLED_EXIT = 130
# A run whose lease the claiming process itself holds, with a heartbeat younger than this (the freshness of
# store.leases less a margin), is that process's own live run: never a claim candidate.
OWN_FRESH_SECONDS = 9
# statuses after which nothing happens to a run unless a person acts (`sage runs wait` stops at them)
SETTLED = ("completed", "failed", "halted", PAUSED, CANCELLED)
ENDED = ("completed", "failed", CANCELLED)


@dataclass
class RunInfo:
    """The queue row of one run."""
    queue: str = DEFAULT_QUEUE
    version: str = ""           # the program version (12 hex digits); "" for a run older than the queue
    args: list[str] | None = None
    recoveries: int = 0         # takeovers of a stale lease
    by_worker: bool = False     # executed by a worker at least once (a re-queued run goes back to the queue)
    cancel: bool = False        # `sage runs cancel` asked the owner to stop
    host: str | None = None     # of the last owner


@dataclass
class Claim:
    """One run `claim_runs` took: the run (now `running` under the worker's lease, whose token is
    `run.lease_token`), its queue row, whether it was interrupted (`resumed`) rather than queued, whether it
    has journal records (`journaled`: a queued run queued again after a pause or a halt carries on), and
    `gave_up` when it had been recovered too often and was marked failed instead (its `recoveries` then says
    how many times)."""
    run: RunRecord
    info: RunInfo
    resumed: bool
    journaled: bool = False
    gave_up: bool = False


class QueueStore(Protocol):
    def submit_run(self, run: RunRecord, info: RunInfo) -> None:
        """Insert a `queued` run (no lease) and its queue row in one transaction."""
    def set_run_info(self, run_id: str, info: RunInfo) -> None:
        """Insert or replace the queue row of a run (`sage run` records its arguments and version)."""
    def run_info(self, run_id: str) -> RunInfo | None: ...
    def run_infos(self) -> dict[str, RunInfo]:
        """Every queue row of the project, by run id."""
    def run_list(self) -> list[tuple[RunRecord, str | None, str | None]]:
        """Every run, newest first (as `list_runs`), with its queue and the host of its queue row (None without a
        row): what a listing shows, read in one query and without the recorded arguments."""
    def note_owner(self, run_id: str, host: str) -> None:
        """Record the host of a process that took the run's lease."""

    def claim_runs(self, queue: str, version: str | None, pid: int, host: str, is_stale: Callable[[RunRecord], bool],
                   skip: set[str], max_recoveries: int, limit: int) -> list[Claim]:
        """Atomically take the oldest runs a worker may execute, at most `limit`, in one transaction: `queued`
        in `queue`, or `running` with a stale lease in any queue, for which `is_stale(run)` (the run read in
        the claim's transaction, with or without a lease; leases.lease_is_claimable) holds, of program
        `version` (None: any), and not in `skip`. Each becomes `running` under a lease of (pid, host) with a
        token of its own that this store holds (its heartbeats keep the claim fresh until the run takes the
        lease over, TakenOver from then on); a stale lease that was held (a crash, not a release) counts one
        recovery, and a run past `max_recoveries` is marked `failed` (exit 1) and returned with `gave_up`.
        Fewer than `limit` (none: nothing to claim) when no other run may be taken now."""
    def forget_claim(self, run_id: str) -> None:
        """The worker is done with its claim of the run (the run's execution ended): the store forgets the
        claim's token, so that a worker's memory does not grow with the runs it has claimed. Only for a store
        that writes nothing more of that run (a worker's own)."""
    def requeue_run(self, run_id: str) -> bool:
        """Make a halted or paused run that a worker was executing `queued` again, so that a worker resumes
        it (`sage runs resolve`, and `approve`, `deny`, `answer` once the answer is recorded): True; the last
        owner's pid and host stay (a claim waits for that process to exit). A run no
        worker executed is left as it is, for `sage run --resume`: False."""
    def forget_owner(self, run_id: str, pid: int, host: str) -> None:
        """Process `pid` of `host` is done with the run (a thread-mode worker whose run's thread ended): if
        its lease is released and still names that process, it no longer does, so that a claim need not
        wait for the process to exit."""
    def unclaim_run(self, run_id: str, was_queued: bool) -> None:
        """Give a claimed run back untouched (a worker of another program version should run it)."""
    def cancel_run(self, run_id: str, is_stale: Callable[[RunRecord], bool]) -> bool:
        """Cancel a run that has not ended: a queued, halted, paused or interrupted one at once (True); a
        running one is asked to stop (False: its owner ends it as `cancelled`)."""
    def append_output(self, run_id: str, stream: str, line: str) -> None:
        """Store one line a run printed (`stream`: "stdout" or "stderr"), after the ones before it."""
    def output(self, run_id: str, after: int = 0) -> list[tuple[int, str, str]]:
        """The stored lines numbered above `after`, in order: (number, stream, line)."""


def record_arguments(info: RunInfo | None) -> list[str]:
    """The arguments a run was recorded with (`[]` for a run older than the queue)."""
    return list(info.args) if info is not None and info.args is not None else []


def info_row(info: RunInfo) -> tuple[Any, ...]:
    """The queue row's values in column order (see the backends' `run_queue` tables)."""
    from ..core.json_text import compact_json
    return (info.queue, info.version, compact_json(info.args or []), info.recoveries, int(info.by_worker),
            int(info.cancel), info.host)


def info_from_row(row: tuple[Any, ...]) -> RunInfo:
    from ..core.json_text import parse_json
    queue, version, args, recoveries, by_worker, cancel, host = row
    return RunInfo(queue, version, parse_json(args), int(recoveries), bool(by_worker), bool(cancel), host)


INFO_COLUMNS = "queue, version, args, recoveries, by_worker, cancel, host"
