"""The embedded store (`[persistence] backend = "sqlite"`): one SQLite file holding `@persistent` fields, runs,
journal steps and the journal format version (SPEC §4.8, §14).

Durability: WAL with `synchronous = FULL`, so a COMMIT is on disk before it returns — for every write except
the outcome record of a step, which commits with `synchronous = NORMAL`: written to the log (a killed process
loses nothing) but flushed to the disk only with the next FULL commit or checkpoint. The log is ordered, so
after a power cut the records that survive are a prefix: a lost outcome is performed again on resume when its
step is read_only or idempotent, and halts the run (as an unknown outcome) when destructive; an intent, a
field write and everything committed before them are always on disk. So a destructive step costs one flush
(its intent), and a read-only one none (bench/durable.py); outcomes of read-only and idempotent steps come in groups (`record_steps`), one
transaction each. Every write is an
explicit `BEGIN IMMEDIATE … COMMIT` (the connection is in autocommit mode, `isolation_level=None`): the write
lock is taken before anything is read, which is what makes `update_field` and `acquire_lease` atomic across
processes. One connection serves every agent thread, behind a reentrant lock; a write made while this thread
already has a transaction open (a field `set` inside an `update` function) joins that transaction. Two stores
of one process on one file (a thread-mode worker's and its runs') share that lock: they wait for each other in
Python, at once, rather than in SQLite's busy handler, which sleeps up to 100 ms a try.

A run's own bookkeeping (its lease, owner, status, end and output lines) commits like an outcome, to the log
without a flush: it survives a killed process, and a power cut can lose only the last of it, in order — a run
then looks interrupted and is recovered, replaying its journal.

Fields stay in the `sage_state (agent, field, value)` table older sagepy versions wrote, so their files keep
their values: opening such a file adds the other tables and the format version (and a file of the first
journal version gains the `lease_token` column).

Fencing: every write of a run whose lease this store took first reads the run's token inside its
`BEGIN IMMEDIATE` transaction, so a process that lost the lease (stopped for longer than it) writes nothing.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..core.json_text import compact_json, parse_json
from ..secrecy import private_directory
from . import crash
from .base import (RELEASED, Busy, forget_lease, journal_records, NewerFormat, Pending, RunRecord, StepRecord, TakenOver,
                   Unavailable, COMPLETED, FAILED, STARTED)
from .queue import CANCELLED
from .buckets import SqliteBuckets
from .pauses import SqlitePauses
from .sqlite_queue import QUEUE_SCHEMA, QUEUE_TABLES, SqliteQueue

CHECKPOINT_PAGES = 4000
_IN_CHUNK = 500   # ids in one `IN (…)`: well under SQLite's limit of bound variables
# One lock per database file of this process (see the module's docstring): realpath -> its RLock.
_file_locks: dict[str, threading.RLock] = {}
_file_locks_guard = threading.Lock()


def _file_lock(path: str) -> threading.RLock:
    key = os.path.realpath(path)
    with _file_locks_guard:
        return _file_locks.setdefault(key, threading.RLock())
# The journal format this sagepy writes and reads; an older file is upgraded when opened. 2: the read of a
# secret variable is journaled as {"secret": value} (sagepy.secrecy), which format 1's sagepy would replay as
# the value itself.
FORMAT = 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sage_state (agent TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (agent, field))",
    "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, started_at REAL NOT NULL, status TEXT NOT NULL, "
    "exit_code INTEGER, entry TEXT NOT NULL, lease_pid INTEGER, lease_host TEXT, lease_heartbeat REAL, "
    "lease_token TEXT, ended_at REAL)",
    "CREATE TABLE IF NOT EXISTS steps (run_id TEXT NOT NULL, path TEXT NOT NULL, number INTEGER NOT NULL, "
    "kind TEXT NOT NULL, target TEXT NOT NULL, args_hash TEXT NOT NULL, safety TEXT NOT NULL, "
    "status TEXT NOT NULL, outcome TEXT NOT NULL, PRIMARY KEY (run_id, path, number)) WITHOUT ROWID",
    *QUEUE_SCHEMA,
)
_RUN_COLUMNS = ("id, started_at, status, exit_code, entry, lease_pid, lease_host, lease_heartbeat, lease_token, "
                "ended_at")
_STEP_COLUMNS = "path, number, kind, target, args_hash, safety, status, outcome"
_NEWEST_FIRST = "ORDER BY started_at DESC, id DESC"
_PUT_STEP = f"INSERT OR REPLACE INTO steps (run_id, {_STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _run(row: tuple) -> RunRecord:
    """A run as read: its lease's age on this machine's clock, the store's clock for SQLite."""
    run = RunRecord(*row)
    if run.lease_heartbeat is not None:
        run.lease_age = time.time() - run.lease_heartbeat
    return run


def _failure(exc: sqlite3.Error) -> Exception:
    """The store's exception for an SQLite error: Busy when the lock outlasted the busy timeout."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return Busy(text)
    return Unavailable(text)


class SqliteStore(SqliteQueue, SqlitePauses, SqliteBuckets):
    durable = True

    def __init__(self, path: str, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self._lock = _file_lock(path)
        self._depth = 0            # open transactions of the thread holding the lock (nested writes join)
        self._journaled = 0        # journal records the open transaction carries
        self._tokens: dict[str, str] = {}   # run id -> the token of the lease this store holds (fencing)
        if os.path.isdir(path):
            raise Unavailable("is a directory")
        try:
            directory = os.path.dirname(path)
            if directory:
                private_directory(directory)
            # a new file is its user's only, wherever `[persistence] path` puts it (SQLite gives its -wal and
            # -shm files the same mode): it journals what the program read, secrets included
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise Unavailable(exc.strerror or str(exc)) from None
        try:
            self._db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise Unavailable(str(exc)) from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._enter_wal(busy_timeout_s)
            self._db.execute("PRAGMA synchronous = FULL")
            self._flushing = True
            # a checkpoint flushes the log into the file with two fsyncs: one every ~16 MB of log, not every 4 MB
            self._db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
            self._open_format()
        except (sqlite3.Error, ValueError, NewerFormat, Busy) as exc:   # ValueError: a format that is no number
            self._db.close()
            if isinstance(exc, NewerFormat):
                raise
            raise Unavailable(str(exc)) from None

    def _enter_wal(self, busy_timeout_s: float) -> None:
        """`PRAGMA journal_mode = WAL`. Turning a new file into WAL takes its exclusive lock, and SQLite
        answers `database is locked` at once, without its busy handler, to a connection that asks while
        another one does it (several processes opening a new file together): retried within the timeout."""
        deadline = time.monotonic() + busy_timeout_s
        pause = 0.001
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _open_format(self) -> None:
        """Refuse a newer format; give an older sagepy's file (only `sage_state`) or a new one the tables.
        A file that has them all is only read, so opening does not wait for another process's write."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" in tables:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is not None and int(row[0]) > FORMAT:
                raise NewerFormat(int(row[0]), FORMAT)
            if row is not None and int(row[0]) == FORMAT and \
                    tables >= {"sage_state", "runs", "steps", *QUEUE_TABLES} and self._has_token_column() and \
                    self._has_column("ended_at"):
                return
        with self._write():
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            found = int(row[0]) if row is not None else None
            if found is not None and found > FORMAT:
                raise NewerFormat(found, FORMAT)
            for statement in _SCHEMA:
                self._db.execute(statement)
            if not self._has_token_column():
                self._db.execute("ALTER TABLE runs ADD COLUMN lease_token TEXT")
            if not self._has_column("ended_at"):
                self._db.execute("ALTER TABLE runs ADD COLUMN ended_at REAL")
            if found is None:
                self._db.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (str(FORMAT),))
            elif found < FORMAT:
                self._db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT),))

    def _has_token_column(self) -> bool:
        return self._has_column("lease_token")

    def _has_column(self, name: str) -> bool:
        return any(row[1] == name for row in self._db.execute("PRAGMA table_info(runs)"))

    # ---------------------------------------------------------------- transactions

    @contextmanager
    def _write(self, journal: int = 0, flush: bool = True, fence: str | None = None,
               released_ok: bool = False) -> Iterator[None]:
        """One `BEGIN IMMEDIATE … COMMIT`; `journal`: the journal records it carries (crash injection counts
        them); `flush`: the COMMIT waits for the disk (`synchronous = FULL`), else only for the log's write;
        `fence`: a run id whose lease, when this store took it, must still be this store's (TakenOver);
        `released_ok`: or was released by this store and is nobody's since (a run's last lines of output)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                self._journaled += journal
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                if flush != self._flushing:   # the level of the connection, which a transaction cannot change
                    self._db.execute("PRAGMA synchronous = FULL" if flush else "PRAGMA synchronous = NORMAL")
                    self._flushing = flush
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _failure(exc) from None
            self._depth, self._journaled = 1, journal
            try:
                if fence is not None and fence in self._tokens:
                    self._check_fence(fence, released_ok)
                yield
                journaled = self._journaled
                if journaled:
                    crash.before_commit(journaled)
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error):
                    raise _failure(exc) from None
                raise
            finally:
                self._depth, self._journaled = 0, 0
            if journaled:
                crash.after_commit(journaled)

    def _check_fence(self, run_id: str, released_ok: bool = False) -> None:
        row = self._db.execute("SELECT lease_token, lease_pid, lease_host FROM runs WHERE id = ?",
                               (run_id,)).fetchone()
        mine = self._tokens[run_id]
        if released_ok and mine == RELEASED and row is not None and row[0] is None:
            return
        if row is None or row[0] != mine:   # the token stays: every later write fails too
            raise TakenOver(row[1] if row else None, row[2] if row else None)

    def _rollback(self) -> None:
        try:
            self._db.execute("ROLLBACK")
        except sqlite3.Error:   # SQLite rolled back already (an I/O error does)
            pass

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise _failure(exc) from None

    # ---------------------------------------------------------------- @persistent fields

    def get_field(self, agent: str, field: str) -> tuple[bool, Any]:
        rows = self._read("SELECT value FROM sage_state WHERE agent = ? AND field = ?", (agent, field))
        return (True, parse_json(rows[0][0])) if rows else (False, None)

    def set_field(self, agent: str, field: str, value: Any, step: StepRecord | None = None,
                  run_id: str | None = None) -> None:
        with self._write(journal=int(step is not None), fence=run_id):
            self._put_field(agent, field, value)
            if step is not None:
                self._put_step(run_id, step)

    def update_field(self, agent: str, field: str, fn: Callable[[tuple[bool, Any]], Any],
                     step: StepRecord | None = None, run_id: str | None = None) -> Any:
        with self._write(journal=int(step is not None), fence=run_id):
            rows = self._db.execute("SELECT value FROM sage_state WHERE agent = ? AND field = ?",
                                    (agent, field)).fetchall()
            new = fn((True, parse_json(rows[0][0])) if rows else (False, None))
            self._put_field(agent, field, new)
            if step is not None:
                step.outcome = new
                self._put_step(run_id, step)
        return new

    def _put_field(self, agent: str, field: str, value: Any) -> None:
        self._db.execute("INSERT INTO sage_state (agent, field, value) VALUES (?, ?, ?) "
                         "ON CONFLICT (agent, field) DO UPDATE SET value = excluded.value",
                         (agent, field, compact_json(value)))

    # ---------------------------------------------------------------- runs

    def create_run(self, run: RunRecord) -> None:
        with self._write():
            self._db.execute(f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (run.id, run.started_at, run.status, run.exit_code, run.entry, run.lease_pid,
                              run.lease_host, run.lease_heartbeat, run.lease_token, run.ended_at))
        if run.lease_token is not None:
            self._tokens[run.id] = run.lease_token

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def newest_run(self) -> RunRecord | None:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs {_NEWEST_FIRST} LIMIT 1")
        return _run(rows[0]) if rows else None

    def change_marker(self) -> tuple[int, int]:
        """A value that changes whenever anything was committed to the file since it was last read: by another
        connection (`PRAGMA data_version`) or by this one (its total changes). Cheap: what a page's live
        updates look at before reading anything."""
        with self._lock:
            return self._db.execute("PRAGMA data_version").fetchone()[0], self._db.total_changes

    def list_runs(self) -> list[RunRecord]:
        return [_run(row) for row in self._read(f"SELECT {_RUN_COLUMNS} FROM runs {_NEWEST_FIRST}")]

    def end_run(self, run_id: str, status: str, exit_code: int | None, pending: Pending | None = None) -> None:
        with self._write(journal=journal_records(pending.steps) if pending else 0, flush=False, fence=run_id):
            if pending:
                self._put_pending(run_id, pending)
            self._db.execute("UPDATE runs SET status = ?, exit_code = ?, ended_at = ?, "
                             "lease_heartbeat = NULL, lease_token = NULL WHERE id = ?",
                             (status, exit_code, time.time(), run_id))
        forget_lease(self._tokens, run_id)

    def prune_runs(self, keep: int) -> list[str]:
        with self._write():
            rows = self._db.execute(f"SELECT id FROM runs WHERE status IN (?, ?, ?) {_NEWEST_FIRST}",
                                    (COMPLETED, FAILED, CANCELLED)).fetchall()
            pruned = [row[0] for row in rows[max(0, keep):]]
            for run_id in pruned:
                self._db.execute("DELETE FROM steps WHERE run_id = ?", (run_id,))
                self._delete_queue_rows(run_id)
                self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return pruned

    # ---------------------------------------------------------------- journal steps

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._read(f"SELECT {_STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY path, number", (run_id,))
        return [StepRecord(*row[:7], outcome=parse_json(row[7])) for row in rows]

    def record_step(self, run_id: str, step: StepRecord) -> None:
        with self._write(journal=1, flush=step.status == STARTED, fence=run_id):
            self._put_step(run_id, step)

    def record_steps(self, run_id: str, steps: list[StepRecord]) -> None:
        if steps:
            with self._write(journal=journal_records(steps), flush=False, fence=run_id):
                self._db.executemany(_PUT_STEP, [self._step_row(run_id, step) for step in steps])

    def record_steps_of(self, pending: Mapping[str, Pending]) -> dict[str, TakenOver]:
        taken: dict[str, TakenOver] = {}
        writes = {run_id: each for run_id, each in pending.items() if each}
        if not writes:
            return taken
        with self._write(journal=sum(journal_records(each.steps) for each in writes.values()), flush=False):
            for run_id, each in writes.items():
                if run_id in self._tokens:
                    try:
                        self._check_fence(run_id)
                    except TakenOver as exc:   # this run's records are not written; the others' are
                        taken[run_id] = exc
                        self._journaled -= journal_records(each.steps)
                        continue
                self._put_pending(run_id, each)
        return taken

    def _put_pending(self, run_id: str, pending: Pending) -> None:
        self._db.executemany(_PUT_STEP, [self._step_row(run_id, step) for step in pending.steps])
        for stream, line in pending.output:
            self._put_output(run_id, stream, line)

    def record_intent(self, run_id: str, step: StepRecord) -> bool:
        with self._write(journal=1, fence=run_id):
            cursor = self._db.execute(f"INSERT OR IGNORE INTO steps (run_id, {_STEP_COLUMNS}) "
                                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._step_row(run_id, step))
            claimed = cursor.rowcount == 1
            if not claimed:
                self._journaled -= 1   # nothing written: not a journal write
        return claimed

    def delete_step(self, run_id: str, path: str, number: int) -> None:
        with self._write():
            self._db.execute("DELETE FROM steps WHERE run_id = ? AND path = ? AND number = ?",
                             (run_id, path, number))

    def _put_step(self, run_id: str | None, step: StepRecord) -> None:
        self._db.execute(_PUT_STEP, self._step_row(run_id, step))

    @staticmethod
    def _step_row(run_id: str | None, step: StepRecord) -> tuple:
        return (run_id, step.path, step.number, step.kind, step.target, step.args_hash, step.safety, step.status,
                compact_json(step.outcome))

    # ---------------------------------------------------------------- leases

    def acquire_lease(self, run_id: str, pid: int, host: str, token: str,
                      is_stale: Callable[[RunRecord], bool]) -> RunRecord | None:
        with self._write(flush=False):
            rows = self._db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchall()
            if not rows:
                raise KeyError(run_id)
            run = _run(rows[0])
            if run.lease_heartbeat is not None and not is_stale(run):
                return run
            self._db.execute("UPDATE runs SET lease_pid = ?, lease_host = ?, lease_heartbeat = ?, lease_token = ? "
                             "WHERE id = ?", (pid, host, time.time(), token, run_id))
        self._tokens[run_id] = token
        return None

    def hold_lease(self, run_id: str, token: str) -> None:
        self._tokens[run_id] = token

    def heartbeat(self, run_id: str) -> None:
        # not flushed: a heartbeat lost with the machine's power only makes a lease stale sooner
        with self._write(flush=False, fence=run_id):
            self._db.execute("UPDATE runs SET lease_heartbeat = ? WHERE id = ?", (time.time(), run_id))

    def renew_leases(self, run_ids: Sequence[str]) -> tuple[dict[str, TakenOver], set[str]]:
        taken: dict[str, TakenOver] = {}
        cancels: set[str] = set()
        with self._write(flush=False):
            held = [run_id for run_id in run_ids if self._tokens.get(run_id)]   # not released
            for start in range(0, len(held), _IN_CHUNK):
                chunk = held[start:start + _IN_CHUNK]
                marks = ", ".join("?" * len(chunk))
                owners = {row[0]: row[1:] for row in self._db.execute(
                    f"SELECT id, lease_token, lease_pid, lease_host FROM runs WHERE id IN ({marks})", chunk)}
                mine = []
                now = time.time()
                for run_id in chunk:
                    owner = owners.get(run_id)
                    if owner is None or owner[0] != self._tokens[run_id]:
                        taken[run_id] = TakenOver(owner[1] if owner else None, owner[2] if owner else None)
                    else:
                        mine.append((now, run_id))
                self._db.executemany("UPDATE runs SET lease_heartbeat = ? WHERE id = ?", mine)
                cancels.update(row[0] for row in self._db.execute(
                    f"SELECT run_id FROM run_queue WHERE cancel != 0 AND run_id IN ({marks})", chunk))
        return taken, cancels

    def release_lease(self, run_id: str) -> None:
        with self._write(flush=False, fence=run_id):
            self._db.execute("UPDATE runs SET lease_heartbeat = NULL, "
                             "lease_token = NULL WHERE id = ?", (run_id,))
        forget_lease(self._tokens, run_id)

    def close(self) -> None:
        with self._lock:
            self._db.close()
