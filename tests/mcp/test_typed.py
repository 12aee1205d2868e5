"""Typed tool calls against the project's own server over real stdio (SPEC §8.3, §8.4, §8.10)."""
from __future__ import annotations

import os
import threading
import time

import pytest

from mcp_helpers import EXITS, HANGS, PERSON, POINT, SUITE, call_typed, suite_server
from sagepy.core.errors import SageRaise
from sagepy.effects.wire import mcp_errors
from sagepy.core.values import NONE, UNIT, Record
from sagepy.core.types import INT, STRING, UNIT as UNIT_TYPE, ListT


@pytest.fixture(scope="module")
def marker_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("markers"))


@pytest.fixture(scope="module")
def suite(module_managers, marker_dir):
    """One shared connection to the suite server (timeout 2 s), with a safety override and an env entry."""
    events: list = []
    os.environ["SAGE_MCP_TEST_SECRET"] = "from-parent"
    os.environ["SAGE_MCP_TEST_MARKERS"] = marker_dir   # reaches the server through a `$` reference in args
    manager = module_managers(
        {"Suite": suite_server("--marker-dir", "${SAGE_MCP_TEST_MARKERS}", timeout_ms=2000,
                               env={"PASSED": "$SAGE_MCP_TEST_SECRET", "LITERAL": "$$5",
                                    "MIXED": "a ${SAGE_MCP_TEST_SECRET}/$SAGE_MCP_TEST_SECRET $$x"},
                               safety={"people": "idempotent", "not_there": "read_only"})},
        trace=lambda kind, data: events.append((kind, data)))
    manager.events = events
    manager.prestart(["Suite"])
    return manager


def call(manager, remote, arguments, return_type, block="Suite"):
    return call_typed(manager, block, f"{block}.{remote}", remote, arguments, return_type)


def failure(manager, remote, arguments, return_type, block="Suite") -> str:
    with pytest.raises(SageRaise) as caught, mcp_errors():
        call(manager, remote, arguments, return_type, block)
    error = caught.value.error
    assert error.kind == "Mcp"
    assert error.display().endswith(error.message)
    return error.display()


def test_record_from_structured_content(suite):
    assert call(suite, "make_point", {"x": 1, "y": -2}, POINT) == Record("Point", {"x": 1, "y": -2})


def test_list_of_records_from_wrapped_result(suite):
    people = call(suite, "people", {"count": 2}, ListT(PERSON))
    assert people == [Record("Person", {"name": "p0", "age": 20, "email": NONE}),
                      Record("Person", {"name": "p1", "age": 21, "email": NONE})]


def test_scalars_strings_and_unit(suite):
    assert call(suite, "add", {"a": 40, "b": 2}, INT) == 42
    assert call(suite, "echo", {"text": "héllo"}, STRING) == "héllo"
    assert call(suite, "json_text", {}, POINT) == Record("Point", {"x": 3, "y": 4})
    assert call(suite, "two_texts", {}, STRING) == "first\nsecond"
    assert call(suite, "make_point", {"x": 0, "y": 0}, UNIT_TYPE) is UNIT


def test_deserialisation_error(suite):
    message = failure(suite, "two_texts", {}, ListT(INT))
    assert message.startswith("MCP deserialisation error: Suite.two_texts (remote 'two_texts'): cannot convert ")
    message = failure(suite, "make_point", {"x": 1, "y": 2}, INT)
    assert message.startswith("MCP deserialisation error: Suite.make_point (remote 'make_point'): cannot convert")
    assert "to Int: expected Int at $" in message


def test_is_error_result(suite):
    assert failure(suite, "refuse", {"reason": "not today"}, STRING) == \
        "MCP tool error: Error executing tool refuse: not today"


def test_output_schema_violation(suite):
    message = failure(suite, "bad_output", {}, STRING)
    assert message.startswith("MCP protocol error: server 'Suite' returned a result for 'bad_output' that "
                              "violates its own outputSchema: ")


def test_result_too_large(suite):
    assert failure(suite, "huge", {"size": 1_100_000}, STRING) == \
        "MCP result too large: tool 'huge' returned 2200200 bytes (limit 1048576)"


def test_timeout_cancels_on_the_server(suite, marker_dir):
    started = time.monotonic()
    message = failure(suite, "slow", {"seconds": 30, "tag": "timeout"}, STRING)
    assert message == "MCP timeout: request 'tools/call' to 'Suite' timed out after 2000 ms"
    assert time.monotonic() - started > 1.9   # the timer never fires early
    marker = os.path.join(marker_dir, "cancelled-timeout")
    deadline = time.monotonic() + 5
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(marker), "the server never saw the cancellation"
    assert call(suite, "add", {"a": 1, "b": 1}, INT) == 2  # the connection stays usable


def test_environment_is_allow_listed(suite):
    assert call(suite, "env_value", {"name": "SAGE_MCP_TEST_SECRET"}, STRING) == "<unset>"
    assert call(suite, "env_value", {"name": "PASSED"}, STRING) == "from-parent"
    assert call(suite, "env_value", {"name": "LITERAL"}, STRING) == "$5"
    assert call(suite, "env_value", {"name": "MIXED"}, STRING) == "a from-parent/from-parent $x"
    assert call(suite, "env_value", {"name": "PATH"}, STRING) != "<unset>"


def test_safety_from_annotations_and_overrides(suite):
    assert suite.safety("Suite", "echo") == "read_only"
    assert suite.safety("Suite", "add") == "idempotent"
    assert suite.safety("Suite", "make_point") == "destructive"
    assert suite.safety("Suite", "people") == "idempotent"  # override
    assert suite.safety("Suite", "filler_00") == "destructive"  # no annotations
    assert suite.safety("Suite", "no_such_tool") == "destructive"
    assert suite.safety("Unconfigured", "x") == "destructive"


def test_concurrent_calls_from_many_threads(suite):
    results: dict[int, int] = {}

    def worker(i: int) -> None:
        results[i] = call(suite, "add", {"a": i, "b": 1000}, INT)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {i: i + 1000 for i in range(12)}


def test_one_shared_connection_and_trace_events(suite):
    connects = [data for kind, data in suite.events if kind == "mcp.connect"]
    assert len(connects) == 1
    assert connects[0]["server"] == "Suite" and connects[0]["transport"] == "stdio"
    assert connects[0]["protocol"] == "2026-07-28" and connects[0]["duration_ms"] > 0


def test_unconfigured_tool_block(managers):
    manager = managers({})
    assert failure(manager, "find", {}, STRING, block="Calendar") == \
        "MCP tool not found: no [tools.Calendar] entry in grove.toml"


def test_unset_variable_fails_without_starting(managers):
    manager = managers({"Calendar": suite_server(env={"CAL_TOKEN": "$SAGE_SURELY_UNSET_VARIABLE"})})
    message = failure(manager, "echo", {"text": "x"}, STRING, block="Calendar")
    assert message == ("MCP config error: [tools.Calendar.env] CAL_TOKEN refers to unset environment variable "
                       "'SAGE_SURELY_UNSET_VARIABLE'")


def test_missing_command(managers):
    manager = managers({"Nope": {"command": "sage-no-such-mcp-server"}})
    assert failure(manager, "x", {}, STRING, block="Nope") == \
        "MCP connection failed: cannot start 'sage-no-such-mcp-server': command not found"


def test_server_exiting_at_start_up(managers, capfd, tmp_path):
    manager = managers({"Broken": {"command": os.sys.executable, "args": [EXITS]}})
    message = failure(manager, "x", {}, STRING, block="Broken")
    assert message == "MCP connection failed: server 'Broken' exited (status 3) during start-up"
    err = capfd.readouterr().err
    assert "note: MCP server 'Broken' exited (status 3); last lines of " in err
    assert "exits: cannot open the database\nexits: giving up" in err
    log = (tmp_path / ".sage" / "logs" / "Broken.log").read_text()
    assert log.startswith("=== ") and "start: " in log and "exits: giving up" in log


def test_server_that_never_answers(managers):
    manager = managers({"Mute": {"command": os.sys.executable, "args": [HANGS], "connect_timeout_ms": 1500}})
    message = failure(manager, "x", {}, STRING, block="Mute")
    assert message == "MCP connection failed: 'Mute' did not complete the handshake within 1500 ms"


def test_crash_mid_call_then_new_connection(managers, capfd):
    manager = managers({"Crashy": suite_server(protocol="legacy")})
    first = call(manager, "whoami", {}, INT, block="Crashy")
    message = failure(manager, "crash", {"status": 9}, STRING, block="Crashy")
    assert message == "MCP server exited: server 'Crashy' exited (status 9)"
    err = capfd.readouterr().err
    assert "note: MCP server 'Crashy' exited (status 9); last lines of" in err
    assert "suite: crashing on purpose" in err
    second = call(manager, "whoami", {}, INT, block="Crashy")
    assert second != first
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)


def test_eager_connect_error_is_reported_at_first_use(managers, capfd):
    manager = managers({"Broken": {"command": os.sys.executable, "args": [EXITS]}})
    manager.prestart(["Broken", "NotConfigured"])
    deadline = time.monotonic() + 10
    while "exited (status 3)" not in capfd.readouterr().err and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failure(manager, "x", {}, STRING, block="Broken") == \
        "MCP connection failed: server 'Broken' exited (status 3) during start-up"


def test_suite_path_exists():
    assert os.path.isfile(SUITE)


@pytest.mark.parametrize("limit", [250, 200])
def test_result_size_is_measured_exactly_near_the_limit(managers, limit):
    """Two text items and the server's `_meta`, 203 bytes of JSON: the quick upper bound for plain text is
    over both limits, so the exact size decides."""
    manager = managers({"Suite": suite_server(max_result_bytes=limit)})
    if limit == 250:
        assert call(manager, "two_texts", {}, STRING) == "first\nsecond"
    else:
        assert failure(manager, "two_texts", {}, STRING) == \
            "MCP result too large: tool 'two_texts' returned 203 bytes (limit 200)"


def test_a_request_racing_the_background_prestart_waits_for_the_log_directory(managers, monkeypatch):
    """The first request may come from an agent while the prestart thread is still preparing the manager:
    it must not open its server's log before the log directory exists."""
    makedirs = os.makedirs

    def slow_makedirs(*args, **kwargs):
        time.sleep(0.5)
        makedirs(*args, **kwargs)

    monkeypatch.setattr(os, "makedirs", slow_makedirs)
    manager = managers({"Suite": suite_server()})
    prestart = threading.Thread(target=manager.prestart, args=(["Suite"],))
    prestart.start()
    time.sleep(0.1)   # the prestart thread is now inside the one-time start
    assert call(manager, "echo", {"text": "raced"}, STRING) == "raced"
    prestart.join()
