"""Paused runs in the durable stores (SPEC §17.3, §17.4): a run pausing for a person, and the answer that makes
it runnable again — each one transaction, mixins of SqliteStore and PostgresStore.

A run pauses when one of its steps waits (`waiting`): in the transaction that releases its lease it becomes
`paused` (exit code 5), unless every waiting step was answered meanwhile; then, like a run whose answer comes
later, it becomes `queued` when a worker was executing it (a worker resumes it), else `running` without a
lease (shown `interrupted`, for `sage run --resume`).
"""
from __future__ import annotations

from typing import Any

from .base import INTERRUPTED, PAUSED, RUNNING, WAITING, StepRecord, forget_lease
from .queue import ENDED, QUEUED

PAUSED_EXIT = 5
_STEP_COLUMNS = "path, number, kind, target, args_hash, safety, status, outcome"
_RELEASED = "lease_pid = NULL, lease_host = NULL, lease_heartbeat = NULL, lease_token = NULL"


def _record(row: tuple) -> StepRecord:
    from ..core.json_text import parse_json
    return StepRecord(*row[:7], outcome=parse_json(row[7]))


class SqlitePauses:
    _db: Any
    _tokens: dict[str, str]

    def pause_run(self, run_id: str) -> list[StepRecord]:
        """The run's waiting steps; the run `paused`, or runnable again when none waits; its lease released."""
        with self._write(journal=1, fence=run_id):   # the run's last write before it waits (crash hooks count it)
            rows = self._db.execute(f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? AND status = ? "
                                    "ORDER BY path, number", (run_id, WAITING)).fetchall()
            status = PAUSED if rows else self._runnable(run_id)
            self._db.execute(f"UPDATE runs SET status = ?, exit_code = ?, {_RELEASED} WHERE id = ?",
                             (status, PAUSED_EXIT if rows else None, run_id))
        forget_lease(self._tokens, run_id)
        return [_record(row) for row in rows]

    def decide_step(self, run_id: str, step: StepRecord) -> str | None:
        """Replace a waiting step with its answer; a paused run becomes runnable again. None when the step was
        not waiting; else the run's status as shown (`queued`, `interrupted`, or `running` while the run is
        still being paused by its process)."""
        with self._write():
            status = self._db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
            if status in ENDED:   # cancelled (or ended) meanwhile: nothing to decide any more
                return status
            row = self._db.execute("SELECT status FROM steps WHERE run_id = ? AND path = ? AND number = ?",
                                   (run_id, step.path, step.number)).fetchone()
            if row is None or row[0] != WAITING:
                return None
            self._put_step(run_id, step)
            if status != PAUSED:
                return status
            status = self._runnable(run_id)
            self._db.execute("UPDATE runs SET status = ?, exit_code = NULL WHERE id = ?", (status, run_id))
        return INTERRUPTED if status == RUNNING else status

    def _runnable(self, run_id: str) -> str:
        row = self._db.execute("SELECT by_worker FROM run_queue WHERE run_id = ?", (run_id,)).fetchone()
        return QUEUED if row and row[0] else RUNNING


class PostgresPauses:
    _s: str
    project: str
    _tokens: dict[str, str]

    def pause_run(self, run_id: str) -> list[StepRecord]:
        def work(conn: Any) -> list[tuple]:
            rows = conn.execute(f"SELECT {_STEP_COLUMNS} FROM {self._s}.steps WHERE project = %s AND run_id = %s "
                                'AND status = %s ORDER BY path COLLATE "C", number',
                                (self.project, run_id, WAITING)).fetchall()
            status = PAUSED if rows else self._runnable(conn, run_id)
            conn.execute(f"UPDATE {self._s}.runs SET status = %s, exit_code = %s, {_RELEASED} WHERE project = %s "
                         "AND id = %s", (status, PAUSED_EXIT if rows else None, self.project, run_id))
            if status == QUEUED:
                self._notify(conn)
            return rows
        rows = self._write(work, journal=1, fence=run_id)
        forget_lease(self._tokens, run_id)
        return [_record(row) for row in rows]

    def decide_step(self, run_id: str, step: StepRecord) -> str | None:
        def work(conn: Any) -> str | None:
            status = conn.execute(f"SELECT status FROM {self._s}.runs WHERE project = %s AND id = %s FOR UPDATE",
                                  (self.project, run_id)).fetchone()[0]
            if status in ENDED:   # cancelled (or ended) meanwhile: nothing to decide any more
                return status
            row = conn.execute(f"SELECT status FROM {self._s}.steps WHERE project = %s AND run_id = %s AND path = %s "
                               "AND number = %s FOR UPDATE", (self.project, run_id, step.path, step.number)).fetchone()
            if row is None or row[0] != WAITING:
                return None
            self._put_step(conn, run_id, step)
            if status != PAUSED:
                return status
            status = self._runnable(conn, run_id)
            conn.execute(f"UPDATE {self._s}.runs SET status = %s, exit_code = NULL WHERE project = %s AND id = %s",
                         (status, self.project, run_id))
            if status == QUEUED:
                self._notify(conn)
            return INTERRUPTED if status == RUNNING else status
        return self._write(work)

    def _runnable(self, conn: Any, run_id: str) -> str:
        row = conn.execute(f"SELECT by_worker FROM {self._s}.run_queue WHERE project = %s AND run_id = %s",
                           (self.project, run_id)).fetchone()
        return QUEUED if row and row[0] else RUNNING
