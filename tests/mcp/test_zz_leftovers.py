"""Shutdown leaves nothing behind (SPEC §4.9, §8.3). This file runs last among the MCP tests: its final
test checks that no child process of the whole test run is left, zombie or alive."""
from __future__ import annotations

import os
import time

from mcp_helpers import call_typed, suite_server
from sagepy.core.types import INT


def _children() -> list[str]:
    """`pid state command` of every process whose parent is this test process."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me:
            found.append(f"{entry} {fields[0]} {command}")
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_close_all_kills_the_server_and_its_group(managers):
    manager = managers({"Suite": suite_server()})
    server = call_typed(manager, "Suite", "Suite.whoami", "whoami", {}, INT)
    grandchild = call_typed(manager, "Suite", "Suite.spawn", "spawn_grandchild", {}, INT)
    assert _alive(server) and _alive(grandchild)
    manager.close_all()
    manager.close_all()  # idempotent
    deadline = time.monotonic() + 3
    while (_alive(server) or _alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server) and not _alive(grandchild)


def test_calls_after_close_all_fail_cleanly(managers):
    manager = managers({"Suite": suite_server()})
    manager.close_all()
    try:
        call_typed(manager, "Suite", "Suite.whoami", "whoami", {}, INT)
    except Exception as exc:  # noqa: BLE001 - the error value is what matters
        assert exc.error.display() == "MCP connection failed: sagepy is shutting down"
    else:
        raise AssertionError("a call after close_all must fail")


def test_no_child_process_is_left():
    deadline = time.monotonic() + 5
    while _children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() == []
