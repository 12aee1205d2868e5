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


def _stdin(stream: TextIO | None) -> Any:
    """The run's stdin (a host's stream, else the process's); the process's reads bytes that are not UTF-8 as
    the environment and the arguments are read (one U+DC80–U+DCFF code point per byte, sagepy.core.text),
    never failing on them."""
    if stream is not None:
        return stream
    stdin = sys.stdin
    if getattr(stdin, "errors", "surrogateescape") == "strict" and hasattr(stdin, "reconfigure"):
        stdin.reconfigure(errors="surrogateescape")
    return stdin


def read_line(stream: TextIO | None = None) -> str:
    """One line of `stream` (a run's host's stdin), else of the process's."""
    with _stdin_lock:
        line = _stdin(stream).readline()
    if line == "":
        raise SageRaise(ErrorValue("Agent", "end of input"))
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def read_all(stream: TextIO | None = None) -> str:
    with _stdin_lock:
        data = _stdin(stream).read()
    if data == "":
        raise SageRaise(ErrorValue("Agent", "end of input"))
    return data


BUILTINS: dict[str, Callable[..., Any]] = {
    "now_ms": now_ms,
    "now_s": now_s,
    "read_line": read_line,
    "read_all": read_all,
}
