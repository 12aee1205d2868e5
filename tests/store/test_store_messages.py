"""A store that cannot serve gives SPEC §4.8's and §14's messages, never an internal error: at open (the store
refuses with base.Unavailable / base.NewerFormat, and `sage run` prints one line and exits 1) and at a field
read or write (a catchable Runtime error)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sagepy.core import types as T
from sagepy.core.errors import SageRaise
from sagepy.runtime.persistence import StateStore
from sagepy.store import base
from sagepy.store.memory import MemoryStore
from sagepy.store.sqlite import FORMAT, SqliteStore

REPO = Path(__file__).resolve().parent.parent.parent
PROGRAM = """\
    agent Main {
        @persistent n: Int
        on start { self.n.set(self.n.get() + 1); print("n {self.n.get()}"); }
    }
    run Main;
    """


def project(tmp_path: Path) -> Path:
    (tmp_path / "grove.toml").write_text('[project]\nentry = "main.sg"\n[persistence]\nbackend = "sqlite"\n')
    (tmp_path / "main.sg").write_text(textwrap.dedent(PROGRAM))
    (tmp_path / ".sage").mkdir()
    return tmp_path / ".sage" / "state.db"


def sage_run(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def newer(path: Path) -> None:
    SqliteStore(str(path)).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT + 1),))
    db.commit()
    db.close()


def corrupt(path: Path) -> None:
    path.write_bytes(b"this is not an SQLite database, only some text " * 200)


def directory(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize("spoil, refusal, reason", [
    (corrupt, base.Unavailable, "file is not a database"),
    (directory, base.Unavailable, "is a directory"),
    (newer, base.NewerFormat, None),
])
def test_a_store_that_cannot_serve_is_refused_at_open(tmp_path: Path, spoil, refusal, reason) -> None:
    path = project(tmp_path)
    spoil(path)
    with pytest.raises(refusal) as raised:
        SqliteStore(str(path))
    if refusal is base.NewerFormat:
        assert raised.value.args == (FORMAT + 1, FORMAT)
    else:
        assert str(raised.value) == reason
    result = sage_run(tmp_path)
    expected = (f"error: journal format {FORMAT + 1} is newer than this sagepy supports ({FORMAT})"
                if reason is None else f"error: persistent store unavailable: {path}: {reason}")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", expected + "\n")


def test_a_newer_file_is_left_as_it_was(tmp_path: Path) -> None:
    path = project(tmp_path)
    newer(path)
    before = sqlite3.connect(path).execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    with pytest.raises(base.NewerFormat):
        SqliteStore(str(path))
    assert sqlite3.connect(path).execute("SELECT name FROM sqlite_master ORDER BY name").fetchall() == before


def test_sage_run_uses_the_store_it_opened(tmp_path: Path) -> None:
    project(tmp_path)
    assert sage_run(tmp_path).stdout == "n 1\n"
    assert sage_run(tmp_path).stdout == "n 2\n"


class FailingStore(MemoryStore):
    """A store whose file went bad after it was opened."""

    path = "/p/state.db"

    def __init__(self, failure: Exception) -> None:
        super().__init__()
        self.failure = failure

    def get_field(self, agent, field):
        raise self.failure

    def set_field(self, agent, field, value, step=None, run_id=None):
        raise self.failure

    def update_field(self, agent, field, fn, step=None, run_id=None):
        raise self.failure


@pytest.mark.parametrize("failure, message", [
    (base.Unavailable("disk I/O error"), "persistent store unavailable: /p/state.db: disk I/O error"),
    (base.Busy("database is locked"), "persistent store busy: /p/state.db"),
])
def test_a_field_read_or_write_on_a_failing_store_raises_a_catchable_runtime_error(failure, message) -> None:
    state = StateStore(FailingStore(failure))
    for attempt in (lambda: state.load("Main", "n", T.INT), lambda: state.save("Main", "n", 1),
                    lambda: state.update("Main", "n", T.INT, lambda old: old + 1)):
        with pytest.raises(SageRaise) as raised:
            attempt()
        assert (raised.value.error.kind, raised.value.error.message, raised.value.error.display()) == (
            "Runtime", message, f"Runtime error: {message}")


def test_a_file_of_format_1_is_upgraded_when_opened_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(str(path))
    store.set_field("Main", "count", 3)
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    db.commit()
    db.close()
    store = SqliteStore(str(path))
    assert store.get_field("Main", "count") == (True, 3)
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchall() == [(str(FORMAT),)]
    db.close()
