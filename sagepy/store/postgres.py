"""The PostgreSQL store (`[persistence] backend = "postgres"`, SPEC §14.1): `@persistent` fields, runs, journal
steps and leases in one database that many machines share, with psycopg 3 (imported only here).

Everything lives in the configured schema (default `sage`) and is keyed by the project name, so the projects
of one database never mix. The tables are created on first use, under a transaction-level advisory lock, so
that several processes starting at once on an empty database do not trip over each other's CREATEs; `meta`
holds the format version, and a newer one is refused as SQLite's is.

One connection (autocommit; explicit transactions where a write has several statements) serves every agent
thread behind a reentrant lock; a write made while this thread has a transaction open (a field `set` inside
an `update` function) joins it. Durability: a destructive step's intent, field writes and the records of runs
submitted, cancelled or answered by a person commit with `synchronous_commit = on` (the server's default);
grouped outcome records and a run's own bookkeeping (its claim, lease, status, end and output) with `off`:
lost only when the database server itself crashes, and then only the last ones, in order (the log is one
sequence), so a run is performed again or halted on, never fired twice.

Clocks: heartbeats are the server's `now()` and a lease's age is `now() - heartbeat`, so machines whose clocks
disagree still agree on who owns a run. Fencing: a journal write of a run this store holds the lease of
locks the run's row (`FOR SHARE`, so a takeover's UPDATE waits for it) and checks the token first; a lease
taken over meanwhile raises TakenOver and writes nothing. Claims: an intent is inserted, never overwritten
(`ON CONFLICT DO NOTHING`), and carries its writer's token, so that a write retried after a lost connection
recognises its own.

A lost connection is retried for up to 30 s (a restarting server, a failover), each write as a whole
transaction again: the writes are upserts, and an `update` that carries a journal record first looks for
that record, so a transaction whose COMMIT went through before the connection broke is not applied twice.
After 30 s: Unreachable. A lock held for 30 s (`lock_timeout`) is Busy. A session left idle inside a
transaction for 10 s (its process stopped) is ended by the server, so a stopped owner never keeps the locks
that a takeover waits for; when it runs again, its transaction is retried and fenced off.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping, Sequence, TypeVar

from ..core.json_text import compact_json, parse_json
from . import crash
from .base import (RELEASED, Busy, forget_lease, journal_records, NewerFormat, Pending, RunRecord, StepRecord, TakenOver,
                   Unavailable, Unreachable, COMPLETED, FAILED, STARTED)
from .buckets import PostgresBuckets
from .pauses import PostgresPauses
from .postgres_grouped import STEP_COLUMNS, UPDATE_STEP, pending_statements, steps_statement
from .postgres_queue import PostgresQueue
from .queue import CANCELLED

# The journal format this sagepy writes and reads; an older file is upgraded when opened. 2: the read of a
# secret variable is journaled as {"secret": value} (sagepy.secrecy), which format 1's sagepy would replay as
# the value itself.
FORMAT = 2
RETRY_SECONDS = 30.0
CONNECT_TIMEOUT_S = 10
_Result = TypeVar("_Result")

_RUN_COLUMNS = ("id, started_at, status, exit_code, entry, lease_pid, lease_host, "
                "extract(epoch FROM lease_heartbeat)::float8, lease_token, ended_at, "
                "extract(epoch FROM now() - lease_heartbeat)::float8")
_NEWEST_FIRST = 'ORDER BY started_at DESC, id COLLATE "C" DESC'


def _schema_statements(s: str) -> list[str]:
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {s}.fields (project text NOT NULL, agent text NOT NULL, field text NOT NULL, "
        "value text NOT NULL, PRIMARY KEY (project, agent, field))",
        f"CREATE TABLE IF NOT EXISTS {s}.runs (project text NOT NULL, id text NOT NULL, "
        "started_at double precision NOT NULL, status text NOT NULL, exit_code integer, entry text NOT NULL, "
        "lease_pid integer, lease_host text, lease_heartbeat timestamptz, lease_token text, "
        "ended_at double precision, PRIMARY KEY (project, id))",
        f"ALTER TABLE {s}.runs ADD COLUMN IF NOT EXISTS ended_at double precision",
        f"CREATE TABLE IF NOT EXISTS {s}.steps (project text NOT NULL, run_id text NOT NULL, path text NOT NULL, "
        "number integer NOT NULL, kind text NOT NULL, target text NOT NULL, args_hash text NOT NULL, "
        "safety text NOT NULL, status text NOT NULL, outcome text NOT NULL, token text, "
        "PRIMARY KEY (project, run_id, path, number))",
    ]


def first_line(exc: BaseException) -> str:
    """A driver error as one line: libpq's message without its hint lines."""
    text = str(exc).strip().splitlines()
    line = text[0].strip() if text else type(exc).__name__
    return line.removeprefix("connection failed: ")


class PostgresStore(PostgresQueue, PostgresPauses, PostgresBuckets):
    durable = True

    def __init__(self, url: str, project: str, schema: str = "sage", shown: str | None = None,
                 retry_seconds: float = RETRY_SECONDS) -> None:
        import psycopg
        from psycopg import sql
        self._psycopg = psycopg
        from ..secrecy import mask_passwords
        self.path = shown if shown is not None else mask_passwords(url)   # for messages: never the password
        self.project = project
        self._url = url
        self._retry_seconds = retry_seconds
        self._lock = threading.RLock()
        self._depth = 0
        self._journaled = 0
        self._tokens: dict[str, str] = {}   # run id -> the token of the lease this store holds
        self._conn: Any = None
        self._connect()
        self._s = sql.Identifier(schema).as_string(self._conn)
        try:
            self._open_format()
            self._open_queue()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- connection

    def _connect(self) -> None:
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name="sagepy")
            # A process stopped inside a transaction (SIGSTOP, a frozen VM) must not hold its row locks until it
            # runs again: the server ends such a session after 10 s, which lets another process take its run over.
            conn.execute("SET lock_timeout = '30s'; SET idle_in_transaction_session_timeout = '10s'")
        except psycopg.Error as exc:
            raise Unreachable(self._masked(first_line(exc))) from None
        self._conn = conn

    def _masked(self, text: str) -> str:
        from ..secrecy import mask_passwords
        return mask_passwords(text, self._url)

    def _lost(self) -> bool:
        conn = self._conn
        return conn is None or conn.closed or conn.broken

    def _open_format(self) -> None:
        errors = self._psycopg.errors
        s = self._s
        try:
            row = self._conn.execute(f"SELECT value FROM {s}.meta WHERE key = 'format'").fetchone()
        except (errors.UndefinedTable, errors.InvalidSchemaName):
            row = None
        except self._psycopg.Error as exc:
            raise self._failure(exc) from None
        if row is not None:
            if int(row[0]) > FORMAT:
                raise NewerFormat(int(row[0]), FORMAT)
            if int(row[0]) == FORMAT:
                return

        def create(conn: Any) -> None:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"sagepy schema {s}",))
            for statement in _schema_statements(s):
                conn.execute(statement)
            conn.execute(f"INSERT INTO {s}.meta (key, value) VALUES ('format', %s) ON CONFLICT (key) DO NOTHING",
                         (str(FORMAT),))
            conn.execute(f"UPDATE {s}.meta SET value = %s WHERE key = 'format' AND value::integer < %s",
                         (str(FORMAT), FORMAT))
            found = conn.execute(f"SELECT value FROM {s}.meta WHERE key = 'format'").fetchone()
            if int(found[0]) > FORMAT:
                raise NewerFormat(int(found[0]), FORMAT)
        self._write(create)

    def _failure(self, exc: BaseException) -> Exception:
        errors = self._psycopg.errors
        if isinstance(exc, (errors.LockNotAvailable, errors.DeadlockDetected)):
            return Busy(self._masked(first_line(exc)))
        return Unavailable(self._masked(first_line(exc)))

    # ---------------------------------------------------------------- transactions

    def _call(self, work: Callable[[Any], _Result], transaction: bool, journal: int = 0, fence: str | None = None,
              durable: bool = True, released_ok: bool = False) -> _Result:
        """Run `work(connection)`, in one transaction when `transaction`, again as a whole on a new connection
        while the connection is lost, for up to 30 s."""
        psycopg = self._psycopg
        with self._lock:
            if self._depth:   # a write inside an open transaction (an `update` function's `set`) joins it
                self._depth += 1
                self._journaled += journal
                try:
                    return work(self._conn)
                finally:
                    self._depth -= 1
            deadline = None
            while True:
                try:
                    if self._lost():
                        self._connect()
                    if not transaction:
                        return work(self._conn)
                    return self._transaction(work, journal, fence, durable, released_ok)
                except (psycopg.Error, Unreachable) as exc:
                    if not self._lost():
                        raise self._failure(exc) from None
                    now = time.monotonic()
                    deadline = deadline if deadline is not None else now + self._retry_seconds
                    if now >= deadline:
                        reason = str(exc) if isinstance(exc, Unreachable) else self._masked(first_line(exc))
                        raise Unreachable(reason) from None
                    time.sleep(min(0.25, deadline - now))

    def _transaction(self, work: Callable[[Any], _Result], journal: int, fence: str | None,
                     durable: bool, released_ok: bool = False) -> _Result:
        conn = self._conn
        self._depth, self._journaled = 1, journal
        try:
            with conn.transaction():
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit = off")
                if fence is not None and fence in self._tokens:
                    self._check_fence(conn, fence, released_ok)
                result = work(conn)
                records = self._journaled
                if records:
                    crash.before_commit(records)
        finally:
            self._depth, self._journaled = 0, 0
        if records:
            crash.after_commit(records)
        return result

    def _write(self, work: Callable[[Any], _Result], journal: int = 0, fence: str | None = None,
               durable: bool = True, released_ok: bool = False) -> _Result:
        return self._call(work, True, journal, fence, durable, released_ok)

    def _read(self, query: str, args: tuple = ()) -> list[tuple]:
        return self._call(lambda conn: conn.execute(query, args).fetchall(), False)

    def _round_trip(self, statements: list[tuple[str, tuple]], durable: bool) -> list[tuple[int, list[tuple]]]:
        """The statements in one transaction sent as one query text — BEGIN, the commit level, the statements,
        COMMIT — with their values bound on this side (psycopg's ClientCursor quotes them), so that it costs one
        round trip and one exchange with libpq; each statement's rows affected and rows returned. Only for
        statements that may run again as a whole after a lost connection."""
        level = "on" if durable else "off"
        text = "; ".join(["BEGIN", f"SET LOCAL synchronous_commit = {level}", *(query for query, _ in statements),
                          "COMMIT"])
        values = tuple(value for _, args in statements for value in args)

        def work(conn: Any) -> list[tuple[int, list[tuple]]]:
            cursor = self._psycopg.ClientCursor(conn)
            try:
                cursor.execute(text, values)
            except self._psycopg.Error:
                if not self._lost() and conn.info.transaction_status == self._psycopg.pq.TransactionStatus.INERROR:
                    conn.execute("ROLLBACK")   # the failed statement left the BEGIN's transaction open
                raise
            results = []
            while cursor.nextset():   # from the SET's result to the COMMIT's (the first is the BEGIN's)
                results.append((cursor.rowcount, cursor.fetchall() if cursor.description else []))
            return results[1:-1]
        return self._call(work, False)

    def _check_fence(self, conn: Any, run_id: str, released_ok: bool = False) -> None:
        """TakenOver unless this store holds the run's lease (`released_ok`: or released it, and nobody holds it
        since)."""
        row = conn.execute(f"SELECT lease_token, lease_pid, lease_host FROM {self._s}.runs "
                           "WHERE project = %s AND id = %s FOR SHARE", (self.project, run_id)).fetchone()
        mine = self._tokens[run_id]
        if released_ok and mine == RELEASED and row is not None and row[0] is None:
            return
        if row is None or row[0] != mine:   # the token stays: every later write fails too
            raise TakenOver(row[1] if row else None, row[2] if row else None)

    # ---------------------------------------------------------------- @persistent fields

    def get_field(self, agent: str, field: str) -> tuple[bool, Any]:
        rows = self._read(f"SELECT value FROM {self._s}.fields WHERE project = %s AND agent = %s AND field = %s",
                          (self.project, agent, field))
        return (True, parse_json(rows[0][0])) if rows else (False, None)

    def set_field(self, agent: str, field: str, value: Any, step: StepRecord | None = None,
                  run_id: str | None = None) -> None:
        def work(conn: Any) -> None:
            self._lock_field(conn, agent, field)
            self._put_field(conn, agent, field, value)
            if step is not None:
                self._put_step(conn, run_id, step)
        self._write(work, journal=int(step is not None), fence=run_id)

    def update_field(self, agent: str, field: str, fn: Callable[[tuple[bool, Any]], Any],
                     step: StepRecord | None = None, run_id: str | None = None) -> Any:
        def work(conn: Any) -> Any:
            if step is not None:   # a retry whose first COMMIT went through: its record is there, with the value
                done = conn.execute(f"SELECT outcome FROM {self._s}.steps WHERE project = %s AND run_id = %s "
                                    "AND path = %s AND number = %s AND token IS NOT DISTINCT FROM %s",
                                    (self.project, run_id, step.path, step.number,
                                     self._tokens.get(run_id))).fetchone()
                if done is not None:
                    self._journaled = 0
                    return parse_json(done[0])
            self._lock_field(conn, agent, field)
            rows = conn.execute(f"SELECT value FROM {self._s}.fields WHERE project = %s AND agent = %s "
                                "AND field = %s", (self.project, agent, field)).fetchall()
            new = fn((True, parse_json(rows[0][0])) if rows else (False, None))
            self._put_field(conn, agent, field, new)
            if step is not None:
                step.outcome = new
                self._put_step(conn, run_id, step)
            return new
        return self._write(work, journal=int(step is not None), fence=run_id)

    def _lock_field(self, conn: Any, agent: str, field: str) -> None:
        """The field's lock until the transaction ends: updates (and sets) of one field never interleave."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (f"sagepy field {self._s}\x1f{self.project}\x1f{agent}\x1f{field}",))

    def _put_field(self, conn: Any, agent: str, field: str, value: Any) -> None:
        conn.execute(f"INSERT INTO {self._s}.fields (project, agent, field, value) VALUES (%s, %s, %s, %s) "
                     "ON CONFLICT (project, agent, field) DO UPDATE SET value = excluded.value",
                     (self.project, agent, field, compact_json(value)))

    # ---------------------------------------------------------------- runs

    def create_run(self, run: RunRecord) -> None:
        def work(conn: Any) -> None:
            conn.execute(f"INSERT INTO {self._s}.runs (project, id, started_at, status, exit_code, entry, "
                         "lease_pid, lease_host, lease_heartbeat, lease_token) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                         "%s, CASE WHEN %s THEN now() END, %s) ON CONFLICT (project, id) DO NOTHING",
                         (self.project, run.id, run.started_at, run.status, run.exit_code, run.entry, run.lease_pid,
                          run.lease_host, run.lease_pid is not None, run.lease_token))
            found = conn.execute(f"SELECT lease_token FROM {self._s}.runs WHERE project = %s AND id = %s",
                                 (self.project, run.id)).fetchone()
            if found[0] != run.lease_token:   # not this call's insert (a retry's first try would match)
                raise Unavailable(f"run {run.id} exists")
        self._write(work)
        if run.lease_token is not None:
            self._tokens[run.id] = run.lease_token

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM {self._s}.runs WHERE project = %s AND id = %s",
                          (self.project, run_id))
        return RunRecord(*rows[0]) if rows else None

    def newest_run(self) -> RunRecord | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM {self._s}.runs WHERE project = %s {_NEWEST_FIRST} LIMIT 1",
                          (self.project,))
        return RunRecord(*rows[0]) if rows else None

    def list_runs(self) -> list[RunRecord]:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM {self._s}.runs WHERE project = %s {_NEWEST_FIRST}",
                          (self.project,))
        return [RunRecord(*row) for row in rows]

    def end_run(self, run_id: str, status: str, exit_code: int | None, pending: Pending | None = None) -> None:
        self._set_lease_free(run_id, ", status = %s, exit_code = %s, ended_at = extract(epoch FROM now())",
                             (status, exit_code), pending)

    def release_lease(self, run_id: str) -> None:
        self._set_lease_free(run_id, "", ())

    def _set_lease_free(self, run_id: str, assignments: str, values: tuple, pending: Pending | None = None) -> None:
        """The run's lease released, with what `pending` holds committed first: one round trip (its last output
        line and its end together) unless the lease was lost, which the slow path then reports."""
        query = (f"UPDATE {self._s}.runs SET lease_heartbeat = NULL, lease_token = NULL{assignments} "
                 "WHERE project = %s AND id = %s")
        args = (*values, self.project, run_id)
        if self._fast(run_id):
            statements = pending_statements(self._s, self.project, self._tokens, {run_id: pending}) if pending else []
            statements.append((query + " AND lease_token = %s", (*args, self._tokens[run_id])))
            if self._round_trip(statements, durable=False)[-1][0] == 1:
                forget_lease(self._tokens, run_id)
                return
            # the lease is lost, so nothing was written: the slow path says who holds it

        def work(conn: Any) -> None:
            if pending:
                self._put_pending(conn, run_id, pending)
            conn.execute(query, args)
        self._write(work, journal=journal_records(pending.steps) if pending else 0, fence=run_id, durable=False)
        forget_lease(self._tokens, run_id)

    def prune_runs(self, keep: int) -> list[str]:
        def work(conn: Any) -> list[str]:
            rows = conn.execute(f"SELECT id FROM {self._s}.runs WHERE project = %s AND status IN (%s, %s, %s) "
                                f"{_NEWEST_FIRST} FOR UPDATE", (self.project, COMPLETED, FAILED, CANCELLED)).fetchall()
            pruned = [row[0] for row in rows[max(0, keep):]]
            if pruned:
                self._delete_queue_rows(conn, pruned)
                conn.execute(f"DELETE FROM {self._s}.steps WHERE project = %s AND run_id = ANY(%s)",
                             (self.project, pruned))
                conn.execute(f"DELETE FROM {self._s}.runs WHERE project = %s AND id = ANY(%s)",
                             (self.project, pruned))
            return pruned
        return self._write(work)

    # ---------------------------------------------------------------- journal steps

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._read(f"SELECT {STEP_COLUMNS} FROM {self._s}.steps WHERE project = %s AND run_id = %s "
                          'ORDER BY path COLLATE "C", number', (self.project, run_id))
        return [StepRecord(*row[:7], outcome=parse_json(row[7])) for row in rows]

    def record_step(self, run_id: str, step: StepRecord) -> None:
        # an outcome need not wait for the disk (lost only with the server itself: performed again, or halted
        # on when destructive); a `started` record is an intent, and a field write commits in set_field
        durable = step.status == STARTED
        if self._fast(run_id) and self._fenced(run_id, [step], durable, replace=True):
            return
        self._write(lambda conn: self._put_step(conn, run_id, step), journal=1, fence=run_id, durable=durable)

    def record_steps(self, run_id: str, steps: list[StepRecord]) -> None:
        if not steps or (self._fast(run_id) and self._fenced(run_id, steps, False, replace=True)):
            return

        def work(conn: Any) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(self._upsert_step, [self._step_row(run_id, step) for step in steps])
        self._write(work, journal=journal_records(steps), fence=run_id, durable=False)

    def record_steps_of(self, pending: Mapping[str, Pending]) -> dict[str, TakenOver]:
        writes = {run_id: each for run_id, each in pending.items() if each}
        if not writes:
            return {}
        if crash.active() or not all(run_id in self._tokens for run_id in writes):
            return self._write(lambda conn: self._put_pending_of(conn, writes), durable=False,
                               journal=sum(journal_records(each.steps) for each in writes.values()))
        # one round trip: the runs' rows locked and read (who holds each lease), then every run's records and
        # lines, each written only while its run's lease is this store's
        owners = (f"SELECT id, lease_token, lease_pid, lease_host FROM {self._s}.runs WHERE project = %s "
                  "AND id = ANY(%s) FOR SHARE")
        results = self._round_trip([(owners, (self.project, list(writes))),
                                    *pending_statements(self._s, self.project, self._tokens, writes)], durable=False)
        found = {row[0]: row[1:] for row in results[0][1]}
        taken = {}
        for run_id in writes:
            token, pid, host = found.get(run_id, (None, None, None))
            if token != self._tokens[run_id]:
                taken[run_id] = TakenOver(pid, host)
        return taken

    def _put_pending_of(self, conn: Any, writes: Mapping[str, Pending]) -> dict[str, TakenOver]:
        taken = {}
        for run_id, each in writes.items():
            if run_id in self._tokens:
                try:
                    self._check_fence(conn, run_id)
                except TakenOver as exc:   # this run's records are not written; the others' are
                    taken[run_id] = exc
                    self._journaled -= journal_records(each.steps)
                    continue
            self._put_pending(conn, run_id, each)
        return taken

    def _put_pending(self, conn: Any, run_id: str, pending: Pending) -> None:
        for step in pending.steps:
            self._put_step(conn, run_id, step)
        for stream, line in pending.output:
            self._put_output(conn, run_id, stream, line)

    def record_intent(self, run_id: str, step: StepRecord) -> bool:
        if self._fast(run_id) and self._fenced(run_id, [step], True, replace=False):
            return True
        # a record is there already, or the lease is lost: the slow path tells which, in a transaction

        def work(conn: Any) -> bool:
            cursor = conn.execute(f"INSERT INTO {self._s}.steps (project, run_id, {STEP_COLUMNS}, token) "
                                  "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                                  "ON CONFLICT (project, run_id, path, number) DO NOTHING",
                                  self._step_row(run_id, step))
            if cursor.rowcount == 1:
                return True
            self._journaled = 0   # nothing written
            owner = conn.execute(f"SELECT token FROM {self._s}.steps WHERE project = %s AND run_id = %s AND "
                                 "path = %s AND number = %s", (self.project, run_id, step.path, step.number)).fetchone()
            # this store's own insert, committed before a lost connection made the call try again
            return owner is not None and owner[0] is not None and owner[0] == self._tokens.get(run_id)
        return self._write(work, journal=1, fence=run_id)

    def _fast(self, run_id: str) -> bool:
        """Whether a journal write may take the one-round-trip path: a run this store holds the lease of, and
        no crash hooks (they must run between a write's statements and its COMMIT)."""
        return run_id in self._tokens and not crash.active()

    def _fenced(self, run_id: str, steps: list[StepRecord], durable: bool, replace: bool) -> bool:
        """Insert (or, `replace`, upsert) the records in one transaction sent at once (`_round_trip`) — each
        record's INSERT conditional on the lease, whose row it locks FOR SHARE — so that a step's record costs
        one round trip to the server. False when not every record was written
        (the lease was lost, or an intent found a record there); nothing then needs undoing, since a lost
        lease writes nothing and the caller's slow path sorts out which it was."""
        s = self._s
        query = (f"INSERT INTO {s}.steps (project, run_id, {STEP_COLUMNS}, token) SELECT %s, %s, %s, %s::integer, "
                 f"%s, %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM {s}.runs WHERE project = %s AND id = %s "
                 "AND lease_token = %s FOR SHARE) ON CONFLICT (project, run_id, path, number) "
                 + (UPDATE_STEP if replace else "DO NOTHING"))
        token = self._tokens[run_id]
        if len(steps) > 1 and replace:   # a group: one statement over arrays, not one per record
            query, args, expected = steps_statement(s, self.project, [(run_id, token, step) for step in steps])
            statements = [(query, args)]
        else:
            statements = [(query, (*self._step_row(run_id, step), self.project, run_id, token)) for step in steps]
            expected = len(statements)
        # an upsert writes every row unless the lease is lost (the slow path then raises TakenOver)
        return sum(count for count, _ in self._round_trip(statements, durable)) == expected

    def delete_step(self, run_id: str, path: str, number: int) -> None:
        self._write(lambda conn: conn.execute(f"DELETE FROM {self._s}.steps WHERE project = %s AND run_id = %s "
                                              "AND path = %s AND number = %s", (self.project, run_id, path, number)))

    @property
    def _upsert_step(self) -> str:
        return (f"INSERT INTO {self._s}.steps (project, run_id, {STEP_COLUMNS}, token) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project, run_id, path, number) "
                + UPDATE_STEP)

    def _put_step(self, conn: Any, run_id: str | None, step: StepRecord) -> None:
        conn.execute(self._upsert_step, self._step_row(run_id, step))

    def _step_row(self, run_id: str | None, step: StepRecord) -> tuple:
        return (self.project, run_id, step.path, step.number, step.kind, step.target, step.args_hash, step.safety,
                step.status, compact_json(step.outcome), self._tokens.get(run_id) if run_id else None)

    # ---------------------------------------------------------------- leases

    def acquire_lease(self, run_id: str, pid: int, host: str, token: str,
                      is_stale: Callable[[RunRecord], bool]) -> RunRecord | None:
        def work(conn: Any) -> RunRecord | None:
            rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM {self._s}.runs WHERE project = %s AND id = %s "
                                "FOR UPDATE", (self.project, run_id)).fetchall()
            if not rows:
                raise KeyError(run_id)
            run = RunRecord(*rows[0])
            if run.lease_token == token:   # this call's own first try, before the connection was lost
                return None
            if run.lease_heartbeat is not None and not is_stale(run):
                return run
            conn.execute(f"UPDATE {self._s}.runs SET lease_pid = %s, lease_host = %s, lease_heartbeat = now(), "
                         "lease_token = %s WHERE project = %s AND id = %s", (pid, host, token, self.project, run_id))
            return None
        owner = self._write(work, durable=False)
        if owner is None:
            self._tokens[run_id] = token
        return owner

    def hold_lease(self, run_id: str, token: str) -> None:
        self._tokens[run_id] = token

    def heartbeat(self, run_id: str) -> None:
        def work(conn: Any) -> None:
            conn.execute(f"UPDATE {self._s}.runs SET lease_heartbeat = now() WHERE project = %s AND id = %s",
                         (self.project, run_id))
        # synchronous_commit off: a heartbeat lost with the server only makes a lease stale sooner
        self._write(work, fence=run_id, durable=False)

    def renew_leases(self, run_ids: Sequence[str]) -> tuple[dict[str, TakenOver], set[str]]:
        held = [run_id for run_id in run_ids if self._tokens.get(run_id)]   # not released
        s = self._s

        def work(conn: Any) -> tuple[dict[str, TakenOver], set[str]]:
            owners = {row[0]: row[1:] for row in conn.execute(
                f"SELECT id, lease_token, lease_pid, lease_host FROM {s}.runs WHERE project = %s AND id = ANY(%s) "
                "FOR SHARE", (self.project, held))}
            taken: dict[str, TakenOver] = {}
            mine = []
            for run_id in held:
                owner = owners.get(run_id)
                if owner is None or owner[0] != self._tokens[run_id]:
                    taken[run_id] = TakenOver(owner[1] if owner else None, owner[2] if owner else None)
                else:
                    mine.append(run_id)
            conn.execute(f"UPDATE {s}.runs SET lease_heartbeat = now() WHERE project = %s AND id = ANY(%s)",
                         (self.project, mine))
            cancels = {row[0] for row in conn.execute(
                f"SELECT run_id FROM {s}.run_queue WHERE project = %s AND run_id = ANY(%s) AND cancel",
                (self.project, held))}
            return taken, cancels
        if not held:
            return {}, set()
        return self._write(work, durable=False)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
