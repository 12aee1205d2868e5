"""The queue's tables in the PostgreSQL store (SPEC §14.2; the interface is queue.QueueStore).

A mixin of PostgresStore: its methods use the store's `_write`/`_read` (a whole transaction, retried on a lost
connection), `_s` (the schema) and `project` (the key of every row). A claim is one transaction that locks
the candidate runs with `SELECT … FOR UPDATE SKIP LOCKED`, so that workers on many machines claiming at once
never take one run twice and never wait for each other. A run becoming claimable is announced with
`NOTIFY sagepy_runs, '<project>'`; `listen_for_runs` wakes a worker on it.
"""
from __future__ import annotations

import secrets
import threading
from typing import Any, Callable

from ..core.text import storable_line
from .base import HALTED, RUNNING, RunRecord
from .queue import CANCELLED, CANCELLED_EXIT, INFO_COLUMNS, OWN_FRESH_SECONDS, PAUSED, QUEUED, Claim, RunInfo, info_from_row, info_row

CHANNEL = "sagepy_runs"
LISTEN_RETRY_S = 1.0
_RUN = ("r.id, r.started_at, r.status, r.exit_code, r.entry, r.lease_pid, r.lease_host, "
        "extract(epoch FROM r.lease_heartbeat)::float8, r.lease_token, r.ended_at, "
        "extract(epoch FROM now() - r.lease_heartbeat)::float8")
_INFO = ", ".join(f"q.{c.strip()}" for c in INFO_COLUMNS.split(","))
# A claim locks and looks at this many candidates first (SKIP LOCKED passes over other workers' claims)
_FIRST_CANDIDATES = 16
_RELEASED = "lease_pid = NULL, lease_host = NULL, lease_heartbeat = NULL, lease_token = NULL"
_FRESH_SECONDS = 10   # store.leases.FRESH_SECONDS: a lease younger than this on another host is not looked at


def queue_schema_statements(s: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {s}.run_queue (project text NOT NULL, run_id text NOT NULL, queue text NOT NULL, "
        "version text NOT NULL, args text NOT NULL, recoveries integer NOT NULL, by_worker boolean NOT NULL, "
        "cancel boolean NOT NULL, host text, PRIMARY KEY (project, run_id))",
        f"CREATE TABLE IF NOT EXISTS {s}.run_output (project text NOT NULL, run_id text NOT NULL, "
        "number integer NOT NULL, stream text NOT NULL, line text NOT NULL, PRIMARY KEY (project, run_id, number))",
    ]


class PostgresQueue:
    _s: str
    project: str
    _url: str
    _tokens: dict[str, str]
    _psycopg: Any
    # `_write(work, …)` and `_read(query, args)` are PostgresStore's

    def _open_queue(self) -> None:
        """Create the queue's tables in a schema made before they existed (once, under the schema's lock)."""
        s = self._s
        if self._read("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                      (f"{s}.run_queue", f"{s}.run_output"))[0][0]:
            return

        def create(conn: Any) -> None:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"sagepy schema {s}",))
            for statement in queue_schema_statements(s):
                conn.execute(statement)
        self._write(create)

    def _notify(self, conn: Any) -> None:
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.project))

    def _put_info(self, conn: Any, run_id: str, info: RunInfo) -> None:
        queue, version, args, recoveries, by_worker, cancel, host = info_row(info)
        conn.execute(f"INSERT INTO {self._s}.run_queue (project, run_id, {INFO_COLUMNS}) VALUES (%s, %s, %s, %s, %s, "
                     "%s, %s, %s, %s) ON CONFLICT (project, run_id) DO UPDATE SET queue = excluded.queue, "
                     "version = excluded.version, args = excluded.args, recoveries = excluded.recoveries, "
                     "by_worker = excluded.by_worker, cancel = excluded.cancel, host = excluded.host",
                     (self.project, run_id, queue, version, args, recoveries, bool(by_worker), bool(cancel), host))

    def submit_run(self, run: RunRecord, info: RunInfo) -> None:
        def work(conn: Any) -> None:
            conn.execute(f"INSERT INTO {self._s}.runs (project, id, started_at, status, exit_code, entry) "
                         "VALUES (%s, %s, %s, %s, NULL, %s) ON CONFLICT (project, id) DO NOTHING",
                         (self.project, run.id, run.started_at, QUEUED, run.entry))
            self._put_info(conn, run.id, info)
            self._notify(conn)
        self._write(work)

    def set_run_info(self, run_id: str, info: RunInfo) -> None:
        self._write(lambda conn: self._put_info(conn, run_id, info))

    def run_info(self, run_id: str) -> RunInfo | None:
        rows = self._read(f"SELECT {INFO_COLUMNS} FROM {self._s}.run_queue WHERE project = %s AND run_id = %s",
                          (self.project, run_id))
        return info_from_row(rows[0]) if rows else None

    def run_list(self) -> list[tuple[RunRecord, str | None, str | None]]:
        rows = self._read(f"SELECT {_RUN}, q.queue, q.host FROM {self._s}.runs r LEFT JOIN {self._s}.run_queue q "
                          "ON q.project = r.project AND q.run_id = r.id WHERE r.project = %s "
                          'ORDER BY r.started_at DESC, r.id COLLATE "C" DESC', (self.project,))
        return [(RunRecord(*row[:11]), row[11], row[12]) for row in rows]

    def run_infos(self) -> dict[str, RunInfo]:
        rows = self._read(f"SELECT run_id, {INFO_COLUMNS} FROM {self._s}.run_queue WHERE project = %s",
                          (self.project,))
        return {row[0]: info_from_row(row[1:]) for row in rows}

    def note_owner(self, run_id: str, host: str) -> None:
        self._write(lambda conn: conn.execute(f"UPDATE {self._s}.run_queue SET host = %s WHERE project = %s AND "
                                              "run_id = %s", (host, self.project, run_id)), durable=False)

    def claim_runs(self, queue: str, version: str | None, pid: int, host: str, is_stale: Callable[[RunRecord], bool],
                   skip: set[str], max_recoveries: int, limit: int) -> list[Claim]:
        s = self._s

        def work(conn: Any, first: int | None = max(limit, _FIRST_CANDIDATES), wanted: int = limit) -> list[Claim]:
            # candidates only: queued runs of the queue and running ones whose lease may be stale (none, old,
            # or on this host, whose process may have ended); locked rows are another worker's claim
            rows = conn.execute(
                f"SELECT {_RUN}, {_INFO}, EXISTS (SELECT 1 FROM {s}.steps t WHERE t.project = r.project AND "
                f"t.run_id = r.id) FROM {s}.runs r JOIN {s}.run_queue q ON q.project = r.project "
                "AND q.run_id = r.id WHERE r.project = %s AND (q.version = %s OR %s) AND "
                "((r.status = %s AND q.queue = %s) OR (r.status = %s AND (r.lease_heartbeat IS NULL OR r.lease_host = %s "
                f"OR r.lease_heartbeat < now() - interval '{_FRESH_SECONDS} seconds'))) "
                # not the runs this very process holds under a fresh lease (never claimable by it; a worker of a
                # thousand runs would otherwise lock and look at every one of them at every claim); one it
                # released or ended and a person sent back to the queue is a candidate again
                "AND NOT (r.lease_pid IS NOT DISTINCT FROM %s AND r.lease_host IS NOT DISTINCT FROM %s AND "
                f"r.lease_heartbeat > now() - interval '{OWN_FRESH_SECONDS} seconds') "
                "AND NOT (r.id = ANY(%s)) "
                # the first few, locked; all of them only when too few of those are claimable after all
                'ORDER BY r.started_at, r.id COLLATE "C" LIMIT %s FOR UPDATE OF r SKIP LOCKED',
                (self.project, version or "", version is None, QUEUED, queue, RUNNING, host, pid, host, list(skip),
                 first)).fetchall()
            claims = []
            for row in rows:
                run = RunRecord(*row[:11])
                if is_stale(run):   # else held (a queued run `sage run --resume` took), or its last owner exiting
                    claims.append(self._claim(conn, run, info_from_row(row[11:18]), bool(row[18]), host,
                                              max_recoveries))
                    if len(claims) == wanted:
                        break
            self._hold_claims(conn, [claim for claim in claims if not claim.gave_up], pid, host)
            if len(claims) == wanted or first is None or len(rows) < first:
                return claims
            # the rows claimed here are this process's fresh leases now: the second look passes over them
            return claims + work(conn, None, wanted - len(claims))
        claims = self._write(work, durable=False)
        for claim in claims:
            if not claim.gave_up:   # the worker's heartbeats keep the claim until the run takes it over
                self._tokens[claim.run.id] = claim.run.lease_token
        return claims

    def _claim(self, conn: Any, run: RunRecord, info: RunInfo, journaled: bool, host: str,
               max_recoveries: int) -> Claim:
        """The claim of a run found claimable, which `_hold_claims` writes; or, when it was recovered too
        often, the run marked failed."""
        resumed = run.status == RUNNING
        if resumed and run.lease_heartbeat is not None:   # taken over from a crashed owner
            if info.recoveries >= max_recoveries:
                conn.execute(f"UPDATE {self._s}.runs SET status = 'failed', exit_code = 1, {_RELEASED} "
                             "WHERE project = %s AND id = %s", (self.project, run.id))
                return Claim(run, info, True, journaled, gave_up=True)
            info.recoveries += 1
        info.by_worker, info.host = True, host
        run.status, run.lease_host, run.lease_token = RUNNING, host, secrets.token_hex(16)
        return Claim(run, info, resumed, journaled)

    def _hold_claims(self, conn: Any, claims: list[Claim], pid: int, host: str) -> None:
        """Put the claimed runs under the worker's leases and note their owner: one statement per table."""
        if not claims:
            return
        s = self._s
        ids = [claim.run.id for claim in claims]
        conn.execute(f"UPDATE {s}.runs r SET status = %s, lease_pid = %s, lease_host = %s, lease_heartbeat = now(), "
                     "lease_token = u.token FROM unnest(%s::text[], %s::text[]) AS u(id, token) "
                     "WHERE r.project = %s AND r.id = u.id",
                     (RUNNING, pid, host, ids, [claim.run.lease_token for claim in claims], self.project))
        conn.execute(f"UPDATE {s}.run_queue q SET recoveries = u.recoveries, by_worker = true, host = %s FROM "
                     "unnest(%s::text[], %s::integer[]) AS u(id, recoveries) WHERE q.project = %s AND q.run_id = u.id",
                     (host, ids, [claim.info.recoveries for claim in claims], self.project))
        for claim in claims:
            claim.run.lease_pid = pid

    def forget_claim(self, run_id: str) -> None:
        self._tokens.pop(run_id, None)

    def requeue_run(self, run_id: str) -> bool:
        def work(conn: Any) -> bool:
            row = conn.execute(f"SELECT by_worker FROM {self._s}.run_queue WHERE project = %s AND run_id = %s",
                               (self.project, run_id)).fetchone()
            if not (row and row[0]):
                return False
            conn.execute(f"UPDATE {self._s}.runs SET status = %s, exit_code = NULL, lease_heartbeat = NULL, "
                         "lease_token = NULL WHERE project = %s AND id = %s", (QUEUED, self.project, run_id))
            self._notify(conn)
            return True
        return self._write(work)

    def mark_running(self, run_id: str) -> None:
        self._write(lambda conn: conn.execute(f"UPDATE {self._s}.runs SET status = %s, exit_code = NULL WHERE "
                                              "project = %s AND id = %s", (RUNNING, self.project, run_id)),
                    durable=False)

    def forget_owner(self, run_id: str, pid: int, host: str) -> None:
        def work(conn: Any) -> None:
            conn.execute(f"UPDATE {self._s}.runs SET lease_pid = NULL, lease_host = NULL WHERE project = %s AND "
                         "id = %s AND lease_pid = %s AND lease_host = %s AND lease_heartbeat IS NULL",
                         (self.project, run_id, pid, host))
        self._write(work, durable=False)

    def unclaim_run(self, run_id: str, was_queued: bool) -> None:
        def work(conn: Any) -> None:
            conn.execute(f"UPDATE {self._s}.runs SET status = %s, {_RELEASED} WHERE project = %s AND id = %s",
                         (QUEUED if was_queued else RUNNING, self.project, run_id))
            self._notify(conn)
        self._write(work)

    def cancel_run(self, run_id: str, is_stale: Callable[[RunRecord], bool]) -> bool:
        s = self._s

        def work(conn: Any) -> bool:
            row = conn.execute(f"SELECT {_RUN} FROM {s}.runs r WHERE r.project = %s AND r.id = %s FOR UPDATE",
                               (self.project, run_id)).fetchone()
            run = RunRecord(*row)
            if run.status in (QUEUED, HALTED, PAUSED) or (run.status == RUNNING and is_stale(run)):
                conn.execute(f"UPDATE {s}.runs SET status = %s, exit_code = %s, ended_at = extract(epoch FROM now()), "
                             f"{_RELEASED} WHERE project = %s "
                             "AND id = %s", (CANCELLED, CANCELLED_EXIT, self.project, run_id))
                return True
            conn.execute(f"INSERT INTO {s}.run_queue (project, run_id, queue, version, args, recoveries, by_worker, "
                         "cancel) VALUES (%s, %s, 'default', '', '[]', 0, false, true) ON CONFLICT (project, run_id) "
                         "DO UPDATE SET cancel = true", (self.project, run_id))
            return False
        return self._write(work)

    def append_output(self, run_id: str, stream: str, line: str) -> None:
        # as durable as the outcome of the step before it (synchronous_commit off); a deposed owner's lines are
        # not stored (a process that released the lease may still say how its run ended)
        self._write(lambda conn: self._put_output(conn, run_id, stream, line), durable=False, fence=run_id,
                    released_ok=True)

    def _put_output(self, conn: Any, run_id: str, stream: str, line: str) -> None:
        s = self._s
        conn.execute(f"INSERT INTO {s}.run_output (project, run_id, number, stream, line) VALUES (%s, %s, "
                     f"(SELECT COALESCE(MAX(number), 0) + 1 FROM {s}.run_output WHERE project = %s AND "
                     "run_id = %s), %s, %s)", (self.project, run_id, self.project, run_id, stream, storable_line(line)))

    def output(self, run_id: str, after: int = 0) -> list[tuple[int, str, str]]:
        rows = self._read(f"SELECT number, stream, line FROM {self._s}.run_output WHERE project = %s AND "
                          "run_id = %s AND number > %s ORDER BY number", (self.project, run_id, after))
        return [tuple(row) for row in rows]

    def _delete_queue_rows(self, conn: Any, run_ids: list[str]) -> None:
        for table in ("run_queue", "run_output"):
            conn.execute(f"DELETE FROM {self._s}.{table} WHERE project = %s AND run_id = ANY(%s)",
                         (self.project, run_ids))

    def listen_for_runs(self, wake: threading.Event) -> None:
        """Set `wake` whenever a run of this project becomes claimable (submitted, re-queued, given back), from
        a thread of its own with a connection of its own, connecting again after a lost connection."""
        psycopg = self._psycopg

        def listen() -> None:
            while True:
                try:
                    with psycopg.connect(self._url, autocommit=True, application_name="sagepy worker") as conn:
                        conn.execute(f"LISTEN {CHANNEL}")
                        wake.set()   # runs queued while this connection was not listening
                        for note in conn.notifies():
                            if note.payload == self.project:
                                wake.set()
                except psycopg.Error:
                    threading.Event().wait(LISTEN_RETRY_S)
        threading.Thread(target=listen, name="sage-worker-listen", daemon=True).start()
