"""The queue's tables in the embedded store (SPEC §14.2; the interface is queue.QueueStore).

A mixin of SqliteStore: its methods use the store's `_write` (one `BEGIN IMMEDIATE … COMMIT`, which takes the
file's write lock before reading, so that a claim by one worker process excludes every other) and `_read`.
"""
from __future__ import annotations

import secrets
import time
from typing import Any, Callable

from ..core.text import storable_line
from .base import HALTED, RUNNING, RunRecord
from .leases import FRESH_SECONDS
from .queue import CANCELLED, CANCELLED_EXIT, INFO_COLUMNS, OWN_FRESH_SECONDS, PAUSED, QUEUED, Claim, RunInfo, info_from_row, info_row

QUEUE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS run_queue (run_id TEXT PRIMARY KEY, queue TEXT NOT NULL, version TEXT NOT NULL, "
    "args TEXT NOT NULL, recoveries INTEGER NOT NULL, by_worker INTEGER NOT NULL, cancel INTEGER NOT NULL, "
    "host TEXT)",
    "CREATE TABLE IF NOT EXISTS run_output (run_id TEXT NOT NULL, number INTEGER NOT NULL, stream TEXT NOT NULL, "
    "line TEXT NOT NULL, PRIMARY KEY (run_id, number)) WITHOUT ROWID",
)
QUEUE_TABLES = {"run_queue", "run_output"}
_RUN = ("r.id, r.started_at, r.status, r.exit_code, r.entry, r.lease_pid, r.lease_host, r.lease_heartbeat, "
        "r.lease_token, r.ended_at")
_INFO = ", ".join(f"q.{c.strip()}" for c in INFO_COLUMNS.split(","))
_RELEASED = "lease_pid = NULL, lease_host = NULL, lease_heartbeat = NULL, lease_token = NULL"


def _record(row: tuple) -> RunRecord:
    """A run as read, its lease's age on this machine's clock (the store's clock for SQLite)."""
    run = RunRecord(*row)
    if run.lease_heartbeat is not None:
        run.lease_age = time.time() - run.lease_heartbeat
    return run


class SqliteQueue:
    _db: Any   # SqliteStore's connection; `_write` and `_read` are SqliteStore's too
    _tokens: dict[str, str]   # SqliteStore's: the leases this store holds, which fence their runs' writes

    def _put_info(self, run_id: str, info: RunInfo) -> None:
        self._db.execute(f"INSERT OR REPLACE INTO run_queue (run_id, {INFO_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (run_id, *info_row(info)))

    def submit_run(self, run: RunRecord, info: RunInfo) -> None:
        with self._write():
            self._db.execute("INSERT INTO runs (id, started_at, status, exit_code, entry) VALUES (?, ?, ?, ?, ?)",
                             (run.id, run.started_at, QUEUED, None, run.entry))
            self._put_info(run.id, info)

    def set_run_info(self, run_id: str, info: RunInfo) -> None:
        with self._write():
            self._put_info(run_id, info)

    def run_info(self, run_id: str) -> RunInfo | None:
        rows = self._read(f"SELECT {INFO_COLUMNS} FROM run_queue WHERE run_id = ?", (run_id,))
        return info_from_row(rows[0]) if rows else None

    def run_infos(self) -> dict[str, RunInfo]:
        return {row[0]: info_from_row(row[1:]) for row in self._read(f"SELECT run_id, {INFO_COLUMNS} FROM run_queue")}

    def run_list(self) -> list[tuple[RunRecord, str | None, str | None]]:
        rows = self._read(f"SELECT {_RUN}, q.queue, q.host FROM runs r LEFT JOIN run_queue q ON q.run_id = r.id "
                          "ORDER BY r.started_at DESC, r.id DESC")
        return [(_record(row[:10]), row[10], row[11]) for row in rows]

    def note_owner(self, run_id: str, host: str) -> None:
        with self._write(flush=False):
            self._db.execute("UPDATE run_queue SET host = ? WHERE run_id = ?", (host, run_id))

    def claim_runs(self, queue: str, version: str | None, pid: int, host: str, is_stale: Callable[[RunRecord], bool],
                   skip: set[str], max_recoveries: int, limit: int) -> list[Claim]:
        claims: list[Claim] = []
        with self._write(flush=False):
            # Candidates only: not the runs this very process holds under a fresh lease (never claimable by it,
            # and a worker of a thousand runs would look at every one of them at every claim). A run it released
            # or ended and a person sent back to the queue (`sage runs resolve`) is a candidate again. A running
            # run is one only when its lease may be stale: none, old, or on this host (its process may have ended).
            # Read row by row: the search ends once `limit` are found.
            now = time.time()
            rows = self._db.execute(
                f"SELECT {_RUN}, {_INFO}, EXISTS (SELECT 1 FROM steps s WHERE s.run_id = r.id) FROM runs r "
                "JOIN run_queue q ON q.run_id = r.id "
                "WHERE (q.version = ? OR ?) AND ((r.status = ? AND q.queue = ?) OR (r.status = ? AND "
                "(r.lease_heartbeat IS NULL OR r.lease_host = ? OR r.lease_heartbeat < ?))) AND NOT (r.lease_pid IS ? "
                "AND r.lease_host IS ? AND r.lease_heartbeat > ?) "
                "ORDER BY r.started_at, r.id",
                (version or "", version is None, QUEUED, queue, RUNNING, host, now - FRESH_SECONDS, pid, host,
                 now - OWN_FRESH_SECONDS))
            found = []
            for row in rows:
                run = _record(row[:10])
                # not stale: held (a queued run `sage run --resume` took), or its last owner exiting
                if run.id not in skip and is_stale(run):
                    found.append((run, info_from_row(row[10:17]), bool(row[17])))
                    if len(found) == limit:
                        break
            rows.close()   # before the writes below
            for run, info, journaled in found:
                claims.append(self._claim(run, info, journaled, host, max_recoveries))
            held = [claim for claim in claims if not claim.gave_up]
            now = time.time()
            self._db.executemany("UPDATE runs SET status = ?, lease_pid = ?, lease_host = ?, lease_heartbeat = ?, "
                                 "lease_token = ? WHERE id = ?",
                                 [(RUNNING, pid, host, now, claim.run.lease_token, claim.run.id) for claim in held])
            self._db.executemany("UPDATE run_queue SET recoveries = ?, by_worker = 1, host = ? WHERE run_id = ?",
                                 [(claim.info.recoveries, host, claim.run.id) for claim in held])
            for claim in held:
                claim.run.lease_pid = pid
        for claim in claims:
            if not claim.gave_up:   # the worker's heartbeats keep the claim until the run takes it over
                self._tokens[claim.run.id] = claim.run.lease_token
        return claims

    def _claim(self, run: RunRecord, info: RunInfo, journaled: bool, host: str, max_recoveries: int) -> Claim:
        """The claim of a run found claimable, which `claim_runs` writes; or, when it was recovered too often,
        the run marked failed."""
        resumed = run.status == RUNNING
        if resumed and run.lease_heartbeat is not None:   # taken over from a crashed owner, not a released one
            if info.recoveries >= max_recoveries:
                self._db.execute(f"UPDATE runs SET status = 'failed', exit_code = 1, {_RELEASED} "
                                 "WHERE id = ?", (run.id,))
                return Claim(run, info, True, journaled, gave_up=True)
            info.recoveries += 1
        info.by_worker, info.host = True, host
        run.status, run.lease_host, run.lease_token = RUNNING, host, secrets.token_hex(16)
        return Claim(run, info, resumed, journaled)

    def forget_claim(self, run_id: str) -> None:
        self._tokens.pop(run_id, None)

    def requeue_run(self, run_id: str) -> bool:
        with self._write():
            rows = self._db.execute("SELECT by_worker FROM run_queue WHERE run_id = ?", (run_id,)).fetchall()
            if not (rows and rows[0][0]):
                return False
            self._db.execute("UPDATE runs SET status = ?, exit_code = NULL, lease_heartbeat = NULL, lease_token = NULL "
                             "WHERE id = ?", (QUEUED, run_id))
        return True

    def forget_owner(self, run_id: str, pid: int, host: str) -> None:
        with self._write(flush=False):
            self._db.execute("UPDATE runs SET lease_pid = NULL, lease_host = NULL WHERE id = ? AND lease_pid = ? "
                             "AND lease_host = ? AND lease_heartbeat IS NULL", (run_id, pid, host))

    def mark_running(self, run_id: str) -> None:
        """A queued or halted run resumed under the lease of the caller (`sage run --resume`)."""
        with self._write(flush=False):
            self._db.execute("UPDATE runs SET status = ?, exit_code = NULL WHERE id = ?", (RUNNING, run_id))

    def unclaim_run(self, run_id: str, was_queued: bool) -> None:
        with self._write():
            self._db.execute(f"UPDATE runs SET status = ?, {_RELEASED} WHERE id = ?",
                             (QUEUED if was_queued else RUNNING, run_id))

    def cancel_run(self, run_id: str, is_stale: Callable[[RunRecord], bool]) -> bool:
        with self._write():
            rows = self._db.execute(f"SELECT {_RUN} FROM runs r WHERE r.id = ?", (run_id,)).fetchall()
            run = _record(rows[0])
            if run.status in (QUEUED, HALTED, PAUSED) or (run.status == RUNNING and is_stale(run)):
                self._db.execute(f"UPDATE runs SET status = ?, exit_code = ?, ended_at = ?, {_RELEASED} WHERE id = ?",
                                 (CANCELLED, CANCELLED_EXIT, time.time(), run_id))
                return True
            self._db.execute("INSERT INTO run_queue (run_id, queue, version, args, recoveries, by_worker, cancel) "
                             "VALUES (?, 'default', '', '[]', 0, 0, 1) ON CONFLICT (run_id) DO UPDATE SET cancel = 1",
                             (run_id,))
        return False

    def append_output(self, run_id: str, stream: str, line: str) -> None:
        # written to the log, not flushed: a line is as durable as the outcome of the step before it; a deposed
        # owner's lines are not stored (a process that released the lease may still say how its run ended)
        with self._write(flush=False, fence=run_id, released_ok=True):
            self._put_output(run_id, stream, line)

    def _put_output(self, run_id: str, stream: str, line: str) -> None:
        self._db.execute("INSERT INTO run_output (run_id, number, stream, line) VALUES (?, (SELECT "
                         "COALESCE(MAX(number), 0) + 1 FROM run_output WHERE run_id = ?), ?, ?)",
                         (run_id, run_id, stream, storable_line(line)))

    def output(self, run_id: str, after: int = 0) -> list[tuple[int, str, str]]:
        return [tuple(row) for row in self._read("SELECT number, stream, line FROM run_output WHERE run_id = ? "
                                                 "AND number > ? ORDER BY number", (run_id, after))]

    def _delete_queue_rows(self, run_id: str) -> None:
        self._db.execute("DELETE FROM run_queue WHERE run_id = ?", (run_id,))
        self._db.execute("DELETE FROM run_output WHERE run_id = ?", (run_id,))
