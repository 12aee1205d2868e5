"""The Database tool on SQLite: URLs, queries, value text, errors, a run's in-memory database, cancellation."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from sagepy.core.errors import AgentCancelled, SageRaise
from sagepy.tools import ToolResources, call_builtin_tool

MEMORY = "sqlite::memory:"


@pytest.fixture(autouse=True)
def run():
    """The resources of one run: every call of a test is a call of the same run."""
    global RUN
    RUN = ToolResources()
    yield RUN
    RUN.close()


def db(fn: str, sql: str, cancel: threading.Event | None = None, resources: ToolResources | None = None):
    return call_builtin_tool("Database", fn, [sql], cancel=cancel, resources=resources or RUN)


def db_error(fn: str, sql: str) -> str:
    with pytest.raises(SageRaise) as info:
        db(fn, sql)
    assert info.value.error.kind == "Tool"
    return info.value.error.message


def row(columns: list, values: list) -> dict:
    return {"columns": columns, "values": values}   # a DbRow as wire data


@pytest.fixture
def memory(monkeypatch):
    """The run's in-memory database."""
    monkeypatch.setenv("SAGE_DATABASE_URL", MEMORY)


def test_execute_returns_rows_affected_and_query_returns_rows(memory):
    assert db("execute", "CREATE TABLE t (id INTEGER, name TEXT)") == 0
    assert db("execute", "INSERT INTO t VALUES (1, 'a')") == 1
    assert db("execute", "INSERT INTO t VALUES (2, 'b'), (3, 'c'), (4, 'd')") == 3
    assert db("execute", "UPDATE t SET name = 'x' WHERE id >= 3") == 2
    assert db("execute", "DELETE FROM t WHERE id = 4") == 1
    assert db("execute", "DELETE FROM t WHERE id = 99") == 0
    assert db("query", "SELECT id, name FROM t ORDER BY id") == [
        row(["id", "name"], ["1", "a"]), row(["id", "name"], ["2", "b"]), row(["id", "name"], ["3", "x"])]


def test_values_are_strings_and_null_is_the_string_null(memory):
    rows = db("query", "SELECT 42 AS i, -7, 1.5 AS f, 2.0, 1e300, 'text' AS s, NULL AS n, '' AS e, "
                       "x'00ff10' AS b, 'null' AS literal")
    assert rows == [row(["i", "-7", "f", "2.0", "1e300", "s", "n", "e", "b", "literal"],
                        ["42", "-7", "1.5", "2.0", "1e+300", "text", "null", "", "00FF10", "null"])]


def test_blob_text_matches_sqlites_hex_function(memory):
    (result,) = db("query", "SELECT x'deadbeef', hex(x'deadbeef')")
    values = result["values"]
    assert values[0] == values[1] == "DEADBEEF"


def test_query_with_no_rows_and_statements_without_columns(memory):
    db("execute", "CREATE TABLE t (id INTEGER)")
    assert db("query", "SELECT id FROM t") == []
    assert db("query", "CREATE TABLE u (id INTEGER)") == []
    assert db("query", "SELECT name FROM sqlite_master ORDER BY name") == [row(["name"], ["t"]), row(["name"], ["u"])]


def test_unicode_text_round_trips(memory):
    db("execute", "CREATE TABLE t (s TEXT)")
    db("execute", "INSERT INTO t VALUES ('héllo 😀')")
    assert db("query", "SELECT s FROM t") == [row(["s"], ["héllo 😀"])]


def test_the_in_memory_database_is_shared_by_calls_and_threads(memory):
    db("execute", "CREATE TABLE shared (v INTEGER)")
    errors = []

    def insert(n: int) -> None:
        try:
            for i in range(20):
                db("execute", f"INSERT INTO shared VALUES ({n * 100 + i})")
        except Exception as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=insert, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert db("query", "SELECT count(*) AS c, count(DISTINCT v) FROM shared") == [
        row(["c", "count(DISTINCT v)"], ["80", "80"])]


def test_sql_errors_are_tool_errors(memory):
    assert db_error("query", "SELECT * FROM t") == "Database.query: no such table: t"
    assert db_error("execute", "INSERT INTO missing VALUES (1)") == "Database.execute: no such table: missing"
    assert db_error("query", "SELEC 1") == 'Database.query: near "SELEC": syntax error'
    db("execute", "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    db("execute", "INSERT INTO t VALUES (1)")
    assert db_error("execute", "INSERT INTO t VALUES (1)") == "Database.execute: UNIQUE constraint failed: t.id"
    assert db_error("execute", "SELECT 1; SELECT 2") == (
        "Database.execute: You can only execute one statement at a time.")


def test_a_failed_statement_changes_nothing(memory):
    db("execute", "CREATE TABLE t (id INTEGER PRIMARY KEY)")
    db("execute", "INSERT INTO t VALUES (2)")
    db_error("execute", "INSERT INTO t VALUES (1), (2)")
    assert db("query", "SELECT id FROM t") == [row(["id"], ["2"])]


def test_a_file_database_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAGE_DATABASE_URL", "sqlite:data.db")
    db("execute", "CREATE TABLE t (v TEXT)")
    assert db("execute", "INSERT INTO t VALUES ('persisted'), (NULL)") == 2
    assert (tmp_path / "data.db").exists()
    # Committed: another connection sees the rows.
    with sqlite3.connect(tmp_path / "data.db") as other:
        assert other.execute("SELECT v FROM t ORDER BY v").fetchall() == [(None,), ("persisted",)]
    assert db("query", "SELECT v FROM t ORDER BY v") == [row(["v"], ["null"]), row(["v"], ["persisted"])]


def test_each_run_has_its_own_in_memory_database(memory):
    db("execute", "CREATE TABLE mine (v INTEGER)")
    db("execute", "INSERT INTO mine VALUES (1)")
    other = ToolResources()
    try:
        with pytest.raises(SageRaise) as info:
            db("query", "SELECT v FROM mine", resources=other)
        assert info.value.error.message == "Database.query: no such table: mine"
    finally:
        other.close()
    assert db("query", "SELECT v FROM mine") == [row(["v"], ["1"])]
    # a call made outside any run has a database of its own too
    with pytest.raises(SageRaise):
        call_builtin_tool("Database", "query", ["SELECT v FROM mine"])


def test_file_and_memory_databases_are_separate(tmp_path, monkeypatch, memory):
    db("execute", "CREATE TABLE only_in_memory (v INTEGER)")
    monkeypatch.setenv("SAGE_DATABASE_URL", f"sqlite:{tmp_path / 'f.db'}")
    assert db_error("query", "SELECT * FROM only_in_memory") == "Database.query: no such table: only_in_memory"
    monkeypatch.setenv("SAGE_DATABASE_URL", MEMORY)
    assert db("query", "SELECT count(*) FROM only_in_memory") == [row(["count(*)"], ["0"])]


def test_url_forms_with_slashes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAGE_DATABASE_URL", f"sqlite://{tmp_path / 'abs.db'}")
    db("execute", "CREATE TABLE a (v INTEGER)")
    assert (tmp_path / "abs.db").exists()
    monkeypatch.setenv("SAGE_DATABASE_URL", "sqlite://rel.db")
    db("execute", "CREATE TABLE r (v INTEGER)")
    assert (tmp_path / "rel.db").exists()
    monkeypatch.setenv("SAGE_DATABASE_URL", "sqlite://:memory:")
    assert db("query", "SELECT 1 AS one") == [row(["one"], ["1"])]


def test_a_file_that_cannot_be_opened_is_a_tool_error(tmp_path, monkeypatch):
    path = tmp_path / "no" / "such" / "dir.db"
    monkeypatch.setenv("SAGE_DATABASE_URL", f"sqlite:{path}")
    assert db_error("query", "SELECT 1") == f"Database.query: cannot open '{path}': unable to open database file"


@pytest.mark.parametrize("url, message", [
    ("", "Database: SAGE_DATABASE_URL is not set"),
    ("postgres://localhost/db", "Database: unsupported URL scheme 'postgres'"),
    ("mysql:x", "Database: unsupported URL scheme 'mysql'"),
    ("SQLITE:x.db", "Database: unsupported URL scheme 'SQLITE'"),
    ("data.db", "Database: invalid SAGE_DATABASE_URL 'data.db' (expected sqlite:<path> or sqlite::memory:)"),
    ("sqlite:", "Database: SAGE_DATABASE_URL 'sqlite:' names no database file"),
])
def test_bad_urls_are_tool_errors(monkeypatch, url, message):
    monkeypatch.setenv("SAGE_DATABASE_URL", url)
    assert db_error("query", "SELECT 1") == message
    assert db_error("execute", "SELECT 1") == message


def test_an_unset_url_is_a_tool_error(monkeypatch):
    monkeypatch.delenv("SAGE_DATABASE_URL", raising=False)
    assert db_error("query", "SELECT 1") == "Database: SAGE_DATABASE_URL is not set"


def counting(n: int) -> str:
    """A statement that runs about a second per million rows and returns one row `n`."""
    return f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) SELECT count(*) AS n FROM c"


def test_cancel_interrupts_a_long_statement(memory):
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    try:
        with pytest.raises(AgentCancelled):
            db("query", ENDLESS, cancel)
    finally:
        timer.cancel()
    # The shared connection is usable afterwards and no longer watches the (set) flag.
    assert db("query", counting(100_000)) == [row(["n"], ["100000"])]


def test_an_unset_cancel_flag_does_not_interrupt(memory):
    assert db("query", counting(100_000), threading.Event()) == [row(["n"], ["100000"])]


class Watched(threading.Event):
    """A cancel flag that tells when the call first looked at it (its statement runs, or it waits for the
    database), and with `set_on_look`, sets itself at that look: the call is then surely under way."""

    def __init__(self, set_on_look: int = 0) -> None:
        super().__init__()
        self.looked = threading.Event()
        self.looks = 0
        self.set_on_look = set_on_look

    def is_set(self) -> bool:
        self.looks += 1
        self.looked.set()
        if self.set_on_look and self.looks >= self.set_on_look:
            self.set()
        return super().is_set()


def test_concurrent_calls_do_not_disturb_each_others_cancel_check(memory):
    # SQLite has one progress handler per connection: a second call must not replace the first one's.
    cancel = Watched()
    outcome = {}

    def long_query() -> None:
        try:
            outcome["value"] = db("query", ENDLESS, cancel)
        except BaseException as exc:  # asserted on below
            outcome["exc"] = exc

    first = threading.Thread(target=long_query)
    first.start()
    assert cancel.looked.wait(60)   # the endless statement runs
    second_cancel = Watched()
    second = threading.Thread(target=db, args=("query", counting(10_000), second_cancel))
    second.start()
    assert second_cancel.looked.wait(60)   # the second call is under way (waiting for the database)
    cancel.set()
    first.join(60)
    second.join(60)
    assert isinstance(outcome.get("exc"), AgentCancelled), outcome


def test_cancel_while_waiting_for_the_in_memory_database(memory):
    # The busy statement holds the database until it is cancelled itself, after the waiting call's cancel has
    # fired: the second call is told to stop at its second look at its flag, while it waits for the database.
    stop_busy = Watched()
    busy_outcome: dict = {}

    def busy_query() -> None:
        try:
            db("query", ENDLESS, stop_busy)
        except BaseException as exc:  # asserted on below
            busy_outcome["exc"] = exc

    busy = threading.Thread(target=busy_query)
    busy.start()
    assert stop_busy.looked.wait(60)   # the busy statement runs and holds the database
    cancel = Watched(set_on_look=2)
    try:
        with pytest.raises(AgentCancelled):
            db("query", "SELECT 1", cancel)
    finally:
        stop_busy.set()
        busy.join(60)
    assert cancel.looks >= 2
    assert isinstance(busy_outcome.get("exc"), AgentCancelled), busy_outcome


ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.mark.parametrize("url", [MEMORY, "file"])
@pytest.mark.parametrize("fn", ["query", "execute"])
def test_an_endless_statement_ends_at_the_time_limit(fn, url, tmp_path, monkeypatch):
    """SAGE_HTTP_TIMEOUT, the built-in tools' time limit, interrupts a statement that would never end."""
    monkeypatch.setenv("SAGE_DATABASE_URL", MEMORY if url == MEMORY else f"sqlite:{tmp_path / 'x.db'}")
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "0.2")
    assert db_error(fn, ENDLESS) == f"Database.{fn}: timed out after 0.2 s (limit SAGE_HTTP_TIMEOUT)"
    monkeypatch.delenv("SAGE_HTTP_TIMEOUT")
    assert db("query", "SELECT 1") == [row(["1"], ["1"])]


def test_an_invalid_time_limit_is_a_tool_error(memory, monkeypatch):
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "soon")
    assert db_error("query", "SELECT 1") == (
        "Database.query: invalid SAGE_HTTP_TIMEOUT 'soon' (expected a positive number of seconds)")
    monkeypatch.delenv("SAGE_HTTP_TIMEOUT")


def test_waiting_for_a_locked_file_ends_at_the_time_limit(tmp_path, monkeypatch):
    """SQLite's busy wait runs no progress handler, so it is given no more than the time left."""
    from sagepy.tools import database
    path = tmp_path / "locked.db"
    monkeypatch.setenv("SAGE_DATABASE_URL", f"sqlite:{path}")
    db("execute", "CREATE TABLE t (x INTEGER)")
    waits = []
    connect = database._connect
    monkeypatch.setattr(database, "_connect", lambda p, busy: waits.append(busy) or connect(p, busy))
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "0.3")
        assert db_error("query", "SELECT * FROM t") == "Database.query: timed out after 0.3 s (limit SAGE_HTTP_TIMEOUT)"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(waits) == 1 and 0 <= waits[0] <= 0.3
