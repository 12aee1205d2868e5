"""Mock queues of one test (SPEC §9.3): FIFO per key, consulted by the mocks layer of the effects chain
(sagepy/effects/mocks.py) before any real call.

Keys: "llm" (divine and infer share one queue), "T.f" for tool functions (Sage names), "mcp.connect",
"mcp.list_tools", "mcp.server_info", "mcp.call", "mcp.disconnect", and "elicit". A mock is either a value or a
failure (`-> fail("m")`); the LLM queue also holds scripted model turns that call tools (`ScriptedCalls`). Values are converted to the mocked call's return type when they are taken.
"""
from __future__ import annotations

import collections
import threading
from typing import Any

from ..core import types as T
from ..core.errors import TestAbort
from ..core.values import display


class Failure:
    """A failure mock: the message of `fail("m")`."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class ScriptedCalls:
    """A model turn that calls tools, `mock divine -> call T.f(a), …;` (SPEC §4.12): (tool, fn, arguments
    object) per call, the arguments keyed by parameter name as a direct call sends them."""

    __slots__ = ("calls",)

    def __init__(self, calls: list[tuple[str, str, dict]]) -> None:
        self.calls = calls


EMPTY = object()   # what `take` returns for an empty queue


class MockQueues:
    def __init__(self) -> None:
        self.queues: dict[str, collections.deque] = {}
        self.lock = threading.Lock()
        self.issued_handles: set[str] = set()

    def push(self, key: str, value: Any) -> None:
        with self.lock:
            self.queues.setdefault(key, collections.deque()).append(value)

    def take(self, key: str) -> Any:
        """The next mock for key, or `EMPTY`. Taking is atomic, so concurrent calls take in call order."""
        with self.lock:
            queue = self.queues.get(key)
            if not queue:
                return EMPTY
            return queue.popleft()


def convert_mock(label: str, value: Any, target: T.Type) -> Any:
    """Convert a mock value to the return type of the call it answers (SPEC §9.3); failure aborts the test."""
    from ..core.convert import ConversionError, from_json, to_json
    from ..core.json_text import compact_json, parse_json
    if target == T.STRING:
        if type(value) is str:
            return value
        try:
            return compact_json(to_json(value))
        except ConversionError as exc:
            raise TestAbort(f"mock for {label}: cannot convert '{display(value)}' to String: {exc}")
    if target == T.UNIT:
        from ..core.values import UNIT
        return UNIT
    try:
        data = parse_json(value) if type(value) is str else to_json(value)
        return from_json(data, target)
    except (ConversionError, ValueError) as exc:
        raise TestAbort(f"mock for {label}: cannot convert '{display(value)}' to {T.type_name(target)}: {exc}")
