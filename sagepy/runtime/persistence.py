"""`@persistent` agent fields (SPEC §4.8).

Values are keyed by agent name and field name, shared by every instance of the agent (last write wins) and
kept as JSON (SPEC §5) in SQLite at `[persistence] path` when grove.toml has a `[persistence]` section with
the sqlite backend, otherwise in process memory; `sage test` gives each test a fresh in-memory store. Each write
is one SQLite transaction, so a process killed between two writes leaves the last committed value, never a
torn one.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .. import types as T
from ..secrecy import private_directory


class StateStore:
    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.cache: dict[tuple[str, str], Any] = {}
        self.db = None
        if path is not None:
            import sqlite3
            directory = os.path.dirname(path)
            if directory:
                private_directory(directory)
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS sage_state (agent TEXT NOT NULL, field TEXT NOT NULL, "
                            "value TEXT NOT NULL, PRIMARY KEY (agent, field))")

    def load(self, agent: str, field: str, t: T.Type, start: Any = None) -> Any:
        """The stored value, else `start` (the value a `summon` or child spec gave the field), else the type's
        default (SPEC §4.8). A start of `None` is the default: only an `Option` field can be given `None`."""
        from ..convert import default_value, from_json
        from ..json_text import parse_json
        key = (agent, field)
        with self.lock:
            if key in self.cache:
                return self.cache[key]
            value = None
            if self.db is not None:
                row = self.db.execute("SELECT value FROM sage_state WHERE agent = ? AND field = ?", key).fetchone()
                if row is not None:
                    try:
                        value = from_json(parse_json(row[0]), t)
                    except Exception:  # a stored value of an older type: start again from the default
                        value = None
            if value is None:
                value = default_value(t) if start is None else start
            self.cache[key] = value
            return value

    def save(self, agent: str, field: str, value: Any, data: Any = None) -> None:
        """Store `value`; `data` is its JSON form (SPEC §5) when the caller has it already."""
        from ..convert import compact_json, to_json
        key = (agent, field)
        text = compact_json(to_json(value) if data is None else data)
        with self.lock:
            self.cache[key] = value
            if self.db is not None:
                self.db.execute("INSERT INTO sage_state (agent, field, value) VALUES (?, ?, ?) "
                                "ON CONFLICT (agent, field) DO UPDATE SET value = excluded.value", (*key, text))

    def get(self, agent: str, field: str) -> Any:
        with self.lock:
            return self.cache[(agent, field)]

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
