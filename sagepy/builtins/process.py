"""The clock and the standard input (SPEC §6.1): `now_ms`, `now_s`, `read_line`, `read_all`.

Each call is an `io` step (SPEC §14, sagepy.effect_builtins): the compiler passes it through the agent's effects
chain, whose real layer calls these functions (a replayed one is answered by the journal instead).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, TextIO

from ..core.errors import SageRaise
from ..core.values import ErrorValue

_stdin_lock = threading.Lock()   # one agent reads a line at a time: lines are never split between agents


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def now_s() -> int:
    return time.time_ns() // 1_000_000_000


def read_line(stream: TextIO | None = None) -> str:
    """One line of `stream` (a run's host's stdin), else of the process's."""
    with _stdin_lock:
        line = (stream or sys.stdin).readline()
    if line == "":
        raise SageRaise(ErrorValue("Agent", "end of input"))
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def read_all(stream: TextIO | None = None) -> str:
    with _stdin_lock:
        data = (stream or sys.stdin).read()
    if data == "":
        raise SageRaise(ErrorValue("Agent", "end of input"))
    return data


BUILTINS: dict[str, Callable[..., Any]] = {
    "now_ms": now_ms,
    "now_s": now_s,
    "read_line": read_line,
    "read_all": read_all,
}
