"""Token buckets of the model API's rate limits (SPEC §23 "Limits"), shared through the store, and the
runs' usage records (`usage_records`, for `sage runs list --format json`).

`take_from_bucket(name, rate, capacity, need, take)` refills bucket `name` at `rate` tokens per second since
its last change, up to `capacity`, and takes `take` tokens when it holds at least `need`; it returns 0 then,
else the seconds until it will hold `need` (taking nothing). A new bucket starts full. The level may go below
zero (a request that used more tokens than it took settles the difference with `need` = -inf).

Every backend changes a bucket in one atomic read-modify-write, so that processes sharing the store never
lose or double a token: SQLite in one `BEGIN IMMEDIATE` transaction, PostgreSQL with the row locked `FOR
UPDATE` and the database's clock (machines' clocks differ); `ProcessBuckets` keeps them in this process's
memory, for a project without a durable store. The bucket table is made on first use.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from ..core.json_text import parse_json
from .base import USAGE_PATH


def settle(level: float, stamp: float, now: float, rate: float, capacity: float, need: float,
           take: float) -> tuple[float, float]:
    """(the new level, the wait in seconds) of a bucket at `level` when last changed at `stamp`."""
    level = min(capacity, level + max(0.0, now - stamp) * rate)
    if level >= need:
        return level - take, 0.0
    return level, (need - level) / rate


class ProcessBuckets:
    """The buckets of one project in this process's memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}

    def take_from_bucket(self, name: str, rate: float, capacity: float, need: float, take: float) -> float:
        with self._lock:
            now = time.monotonic()
            level, stamp = self._buckets.get(name, (capacity, now))
            level, wait = settle(level, stamp, now, rate, capacity, need, take)
            self._buckets[name] = (level, now)
            return wait


_process_lock = threading.Lock()
_process: dict[str, ProcessBuckets] = {}


def process_buckets(project: str) -> ProcessBuckets:
    """The buckets of `project` in this process: every run of the process shares them."""
    with _process_lock:
        return _process.setdefault(project, ProcessBuckets())


class SqliteBuckets:
    """Mixin of SqliteStore: the buckets in table `rate_buckets` of the project's file."""

    _buckets_made = False

    def take_from_bucket(self, name: str, rate: float, capacity: float, need: float, take: float) -> float:
        with self._write(flush=False):   # type: ignore[attr-defined]
            db = self._db   # type: ignore[attr-defined]
            if not self._buckets_made:
                db.execute("CREATE TABLE IF NOT EXISTS rate_buckets (name TEXT PRIMARY KEY, level REAL NOT NULL, "
                           "stamp REAL NOT NULL)")
                self._buckets_made = True
            now = time.time()
            row = db.execute("SELECT level, stamp FROM rate_buckets WHERE name = ?", (name,)).fetchone()
            level, stamp = row if row is not None else (capacity, now)
            level, wait = settle(level, stamp, now, rate, capacity, need, take)
            db.execute("INSERT OR REPLACE INTO rate_buckets (name, level, stamp) VALUES (?, ?, ?)", (name, level, now))
            return wait

    def usage_records(self) -> dict[str, Any]:
        """Run id -> its usage record's outcome (SPEC §23), for every run that has one."""
        rows = self._read("SELECT run_id, outcome FROM steps WHERE path = ?", (USAGE_PATH,))   # type: ignore
        return {run_id: parse_json(outcome) for run_id, outcome in rows}


class PostgresBuckets:
    """Mixin of PostgresStore: the buckets in table `rate_buckets` of its schema, keyed by project."""

    _buckets_made = False

    def take_from_bucket(self, name: str, rate: float, capacity: float, need: float, take: float) -> float:
        s, project = self._s, self.project   # type: ignore[attr-defined]
        if not self._buckets_made:
            def make(conn: Any) -> None:
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"sagepy buckets {s}",))
                conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.rate_buckets (project text NOT NULL, name text NOT NULL, "
                             "level double precision NOT NULL, stamp double precision NOT NULL, "
                             "PRIMARY KEY (project, name))")
            self._write(make)   # type: ignore[attr-defined]
            self._buckets_made = True

        def work(conn: Any) -> float:
            conn.execute(f"INSERT INTO {s}.rate_buckets (project, name, level, stamp) VALUES "
                         "(%s, %s, %s, extract(epoch from clock_timestamp())) ON CONFLICT DO NOTHING",
                         (project, name, capacity))
            level, stamp, now = conn.execute(
                f"SELECT level, stamp, extract(epoch from clock_timestamp())::float8 FROM {s}.rate_buckets "
                "WHERE project = %s AND name = %s FOR UPDATE", (project, name)).fetchone()
            level, wait = settle(level, stamp, now, rate, capacity, need, take)
            conn.execute(f"UPDATE {s}.rate_buckets SET level = %s, stamp = %s WHERE project = %s AND name = %s",
                         (level, now, project, name))
            return wait
        return self._write(work, durable=False)   # type: ignore[attr-defined]

    def usage_records(self) -> dict[str, Any]:
        """Run id -> its usage record's outcome (SPEC §23), for every run of the project that has one."""
        rows = self._read(f"SELECT run_id, outcome FROM {self._s}.steps WHERE project = %s AND path = %s",   # type: ignore
                          (self.project, USAGE_PATH))   # type: ignore[attr-defined]
        return {run_id: parse_json(outcome) for run_id, outcome in rows}
