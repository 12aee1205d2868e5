"""The `Database` tool (SPEC §7) on the standard library's sqlite3.

The session's `SAGE_DATABASE_URL` names the database:
- `sqlite::memory:` is one in-memory database per run, shared by every call and every agent of that run
  through a single connection guarded by a lock (`MemoryDatabase`, kept in the run's `ToolResources`: runs
  that share a process, in a thread-mode worker or a served program, never see each other's tables);
- `sqlite:<path>` is a database file, relative to the working directory (`sqlite://<path>` is accepted too,
  so `sqlite:///abs/x.db` names an absolute path as in other SQLite URL dialects). The file is created if it
  does not exist. Each call opens its own connection and closes it afterwards.
Any other scheme is an error.

Every statement is bounded by the built-in tools' time limit (`SAGE_HTTP_TIMEOUT`, default 30 s), time spent
waiting for the in-memory database included: past it the statement is interrupted (an endless recursive CTE
too) and `Database.query: timed out after N s (limit SAGE_HTTP_TIMEOUT)` raised.

Connections are in autocommit mode: every statement is committed when it completes, so `execute` never
leaves an open transaction behind (an explicit `BEGIN` lasts until `COMMIT` on the shared in-memory
connection, but ends with its call's connection for a file).

`query` returns every value as a string: text as is, integers and reals via `str()` (`42`, `1.5`), NULL as
`"null"`, and blobs as upper-case hexadecimal, the same text as SQLite's own `hex()` function.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..core.errors import AgentCancelled
from . import run_resources, setting, time_limit, timed_out, tool_error

# SQLite virtual-machine steps between two looks at the cancel flag and the deadline during a statement.
_CHECK_STEPS = 10_000
# How long a statement waits for a database file that another connection holds locked (sqlite3's default).
_BUSY_SECONDS = 5.0
# How often a call waiting for the in-memory database checks its cancel flag and deadline.
_LOCK_POLL_SECONDS = 0.05


def _database_path() -> str | None:
    """The database file named by SAGE_DATABASE_URL, or None for the in-memory database."""
    url = setting("SAGE_DATABASE_URL") or ""
    if not url:
        raise tool_error("Database", "SAGE_DATABASE_URL is not set")
    scheme, colon, rest = url.partition(":")
    if not colon:
        raise tool_error("Database", f"invalid SAGE_DATABASE_URL '{url}' (expected sqlite:<path> or sqlite::memory:)")
    if scheme != "sqlite":
        raise tool_error("Database", f"unsupported URL scheme '{scheme}'")
    if rest.startswith("//"):
        rest = rest[2:]
    if rest == ":memory:":
        return None
    if not rest:
        raise tool_error("Database", f"SAGE_DATABASE_URL '{url}' names no database file")
    return rest


def _connect(path: str, busy_seconds: float = _BUSY_SECONDS) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=busy_seconds, isolation_level=None, check_same_thread=False)


class _Limits:
    """What stops a statement: the agent's cancellation, and the time limit."""

    def __init__(self, where: str, cancel: threading.Event | None) -> None:
        self.where = where
        self.cancel = cancel
        self.seconds = time_limit(where)
        self.deadline = time.monotonic() + self.seconds

    def reached(self) -> bool:
        """Whether to stop now (SQLite's progress handler interrupts the statement when this is true)."""
        return (self.cancel is not None and self.cancel.is_set()) or time.monotonic() >= self.deadline

    def stop(self) -> BaseException:
        """The exception for a statement stopped by `reached`."""
        if self.cancel is not None and self.cancel.is_set():
            return AgentCancelled()
        return timed_out(self.where, self.seconds)


class MemoryDatabase:
    """The in-memory database of one run: its connection, made on first use, and the lock that lets one
    statement run at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: sqlite3.Connection | None = None

    def take(self, limits: _Limits) -> sqlite3.Connection:
        """Take the lock, giving up if the agent is cancelled or time runs out meanwhile; the caller
        releases it."""
        while not self.lock.acquire(timeout=_LOCK_POLL_SECONDS):
            if limits.reached():
                raise limits.stop()
        if self.connection is None:
            self.connection = _connect(":memory:")
        return self.connection

    def close(self) -> None:
        with self.lock:
            if self.connection is not None:
                self.connection.close()
                self.connection = None


@contextmanager
def _connection(where: str, limits: _Limits) -> Iterator[sqlite3.Connection]:
    path = _database_path()
    if path is None:
        # One statement at a time: besides keeping calls apart, this keeps each call's progress handler in
        # place, since SQLite has one per connection.
        memory = run_resources().keep("database.memory", MemoryDatabase)
        connection = memory.take(limits)
        try:
            yield connection
        finally:
            memory.lock.release()
        return
    try:
        # Waiting for another connection's lock runs no progress handler: it is bounded by what time is left.
        conn = _connect(path, min(_BUSY_SECONDS, max(limits.deadline - time.monotonic(), 0.0)))
    except sqlite3.Error as exc:
        raise tool_error(where, f"cannot open '{path}': {exc}") from None
    try:
        yield conn
    finally:
        conn.close()


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.hex().upper()
    return str(value)


def _run(where: str, sql: str, cancel: threading.Event | None, fetch: bool) -> Any:
    limits = _Limits(where, cancel)
    with _connection(where, limits) as conn:
        conn.set_progress_handler(limits.reached, _CHECK_STEPS)
        try:
            cursor = conn.execute(sql)
            if fetch:
                rows = cursor.fetchall()
                columns = [d[0] for d in cursor.description or ()]
                # Lists are never mutated once built, so every row can share one list of column names.
                return [{"columns": columns, "values": [_text(v) for v in row]} for row in rows]   # DbRows
            return max(cursor.rowcount, 0)
        except sqlite3.Error as exc:
            if limits.reached():
                raise limits.stop() from None
            raise tool_error(where, str(exc)) from None
        finally:
            conn.set_progress_handler(None, 0)


def query(sql: str, *, cancel: threading.Event | None = None) -> list:
    return _run("Database.query", sql, cancel, fetch=True)


def execute(sql: str, *, cancel: threading.Event | None = None) -> int:
    return _run("Database.execute", sql, cancel, fetch=False)


FUNCTIONS: dict[str, Callable[..., Any]] = {"query": query, "execute": execute}
