"""Mocks of one test (SPEC §9.3), present only under `sage test`: the queues the test's `mock` statements fill,
and the layer of the effects chain that answers from them before any real call. A queued answer returns or
raises without touching anything below; an empty queue lets the step go on (except for model turns, E054).

Queue keys: "llm" (divine and infer share one queue), "T.f" for tool functions (Sage names), "mcp.connect",
"mcp.list_tools", "mcp.server_info", "mcp.call", "mcp.disconnect", the keys of the resource and prompt builtins
("mcp.resources", "mcp.resource_templates", "mcp.read_resource", "mcp.prompts", "mcp.get_prompt"),
"approve", "ask" and "elicit". A mock is either a value or a failure (`-> fail("m")`); the LLM queue also
holds scripted model turns that call tools (`ScriptedCalls`), the approve queue denials (`Denial`). Values are
converted to the mocked call's return type when they are taken, once, through their JSON form (§9.3), into
what the call's consumer takes: the Sage value, or the fitted JSON for a call a model asked for. That is the
step's `read` (the boundary takes it as it is) and its outcome.

Test mode is this module: the layer, and `MockedFacts`, what a test answers of the boundary's questions
besides steps (sagepy.effects.facts): a handle its mocked `mcp_connect` issued has no server behind it.
"""
from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..core.errors import SageRaise, TestAbort
from ..core.values import UNIT, ErrorValue, display
from ..effect_builtins import EFFECT_BUILTINS
from ..decisions import Decision
from ..llm.tool_loop import final_answer, scripted_answer
from .chain import Perform
from .facts import Facts
from .step import APPROVAL, IO, LLM, MCP, TOOL, Step
from . import wire

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from ..settings import Settings


class Failure:
    """A failure mock: the message of `fail("m")`."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class Denial:
    """`mock approve -> deny("reason");`."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class ScriptedCalls:
    """A model turn that calls tools, `mock divine -> call T.f(a), …;` (SPEC §4.12): (tool, fn, arguments
    object) per call, the arguments keyed by parameter name as a direct call sends them."""

    __slots__ = ("calls",)

    def __init__(self, calls: list[tuple[str, str, dict]]) -> None:
        self.calls = calls


EMPTY = object()   # what `take` returns for an empty queue


class MockQueues:
    """The queues of one test, the handles its mocked `mcp_connect`s issued, and whether it has ended (a call
    made after its end, by an agent still running, fails)."""

    def __init__(self) -> None:
        self.queues: dict[str, collections.deque] = {}
        self.lock = threading.Lock()
        self.issued_handles: set[str] = set()
        self.ended = False

    def end(self) -> None:
        self.ended = True

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


def convert_mock(label: str, value: Any, target: T.Type, model: bool = False) -> Any:
    """A mock value converted to the return type of the call it answers (SPEC §9.3); failure aborts the test.
    `model`: for a call a model asked for, the fitted JSON it reads back instead of the Sage value."""
    return mock_forms(label, value, target, model)[1]


def mock_forms(label: str, value: Any, target: T.Type, model: bool = False) -> tuple[Any, Any]:
    """(the mock's JSON form, or its text for a String; the value it converts to, as `convert_mock`)."""
    from ..core.convert import ConversionError, fitted_json, from_json, to_json
    from ..core.json_text import compact_json, parse_json
    if target == T.STRING:
        if type(value) is str:
            return value, value
        try:
            text = compact_json(to_json(value))
        except ConversionError as exc:
            raise TestAbort(f"mock for {label}: cannot convert '{display(value)}' to String: {exc}")
        return text, text
    if target == T.UNIT:
        return None, None if model else UNIT
    try:
        data = parse_json(value) if type(value) is str else to_json(value)
        return data, fitted_json(data, target) if model else from_json(data, target)
    except (ConversionError, ValueError) as exc:
        raise TestAbort(f"mock for {label}: cannot convert '{display(value)}' to {T.type_name(target)}: {exc}")


class MockLayer:
    """First in a test's chain after the approvals layer: answers from the test's queues. `model_falls_through`:
    a model turn with no mock left goes on down the chain (`sage test --real-llm`, or a cassette that answers
    it, SPEC §22.2) instead of failing with E054."""

    def __init__(self, queues: MockQueues, model_falls_through: bool = False) -> None:
        self.queues = queues
        self.model_falls_through = model_falls_through

    def perform(self, step: Step, next: Perform) -> Any:
        kind = step.kind
        if kind == APPROVAL:
            return self._approval(step)
        if kind == IO and step.target == "ask":
            return self._ask(step)
        if kind == LLM:
            self._check_live()
            return self._llm(step, next)
        if kind == TOOL:
            self._check_live()
            return self._tool(step, next)
        if kind == MCP:
            self._check_live()
            return self._mcp(step, next)
        return next(step)

    def _check_live(self) -> None:
        if self.queues.ended:
            raise SageRaise(ErrorValue("Agent", "test ended"))

    def _llm(self, step: Step, next: Perform) -> Any:
        name = "infer" if step.target == "infer" else "divine"
        mock = self.queues.take("llm")
        if mock is EMPTY:
            if self.model_falls_through:
                return next(step)
            raise SageRaise(ErrorValue("Llm", f"no mock left for {name} (E054)", "E054"))
        if isinstance(mock, Failure):
            raise SageRaise(ErrorValue("Llm", mock.message))
        turn = step.turn   # a turn of `divine(p, tools: [...])`, else None
        if isinstance(mock, ScriptedCalls):
            if turn is None:
                raise TestAbort(f"mock for {name}: tool calls mocked for a {name} that offers no tools")
            return scripted_answer(mock.calls, turn.offer, turn.turn)
        if turn is None:
            step.read = convert_mock(name, mock, step.ret)
            return step.read
        data, step.read = mock_forms(name, mock, turn.target)   # the loop takes the value as it is
        return final_answer(data, turn.target)

    def _tool(self, step: Step, next: Perform) -> Any:
        info = step.tool
        mock = self.queues.take(info.label)
        if mock is EMPTY:
            return next(step)
        if isinstance(mock, Failure):
            if info.builtin:
                raise SageRaise(ErrorValue("Tool", mock.message))
            raise SageRaise(ErrorValue("Mcp", mock.message, display_text=f"MCP tool error: {mock.message}"))
        step.read = convert_mock(info.label, mock, info.ret, step.source == "model")
        return step.read

    def _mcp(self, step: Step, next: Perform) -> Any:
        """Consumed before any argument is looked at: a mocked call works with any config and any handle. How
        a mock answers each builtin is sagepy.effect_builtins': its key, its value's type, its failure's words."""
        name = step.target
        builtin = EFFECT_BUILTINS[name]
        key = builtin.mock_key
        mock = self.queues.take(key)
        if mock is EMPTY:
            return next(step)
        if isinstance(mock, Failure):
            message = mock.message
            if builtin.named:
                message = f"{name} '{step.arguments[1]}' failed: MCP tool error: {mock.message}"
            elif builtin.listed and builtin.declared_type:
                message = f"{name} failed: MCP tool error: {mock.message}"
            raise SageRaise(ErrorValue("Mcp", message, display_text=message))
        if name == "mcp_connect":   # a handle this test issued: mcp_connection knows it as open
            value = convert_mock(key, mock, T.STRING)
            self.queues.issued_handles.add(value)
            return value
        if builtin.unit:
            return None
        if builtin.declared_type:
            step.read = convert_mock(key, mock, step.ret)
            return step.read
        if builtin.shape is not None:   # the text a text builtin sharing the key gives, shaped as the real one
            from ..core.json_text import parse_json
            text = convert_mock(key, mock, T.STRING)
            try:
                return getattr(wire, builtin.shape)(parse_json(text))
            except ValueError as exc:
                shown = f"List<{builtin.record}>" if builtin.listed else builtin.record
                raise TestAbort(f"mock for {key}: cannot convert '{text}' to {shown}: {exc}")
        return convert_mock(key, mock, T.STRING)

    def _approval(self, step: Step) -> dict:
        """The decision of `mock approve` (SPEC §17.1): taken in the order calls ask for it."""
        mock = self.queues.take("approve")
        if mock is EMPTY:
            raise TestAbort(f"approval requested for {step.person.label} but no mock approve left")
        if isinstance(mock, (Denial, Failure)):
            return Decision(False, "mock", reason=mock.reason if isinstance(mock, Denial) else mock.message).outcome()
        return Decision(mock is True, "mock").outcome()

    def _ask(self, step: Step) -> str:
        """The answer of `mock ask` (SPEC §17.2)."""
        mock = self.queues.take("ask")
        if mock is EMPTY:
            raise TestAbort(f"question asked but no mock ask left: {step.arguments[0]}")
        if isinstance(mock, Failure):
            raise SageRaise(ErrorValue("Agent", mock.message))
        answer = convert_mock("ask", mock, T.STRING)
        step.person.by = "mock"
        return answer


class MockedFacts(Facts):
    """What a test answers besides steps: a handle its mocked `mcp_connect` issued is known as open, named
    `mcp<n>` and lists no tools, without a server; a remote call's approval is decided by the
    `[tools.X.safety]` override, else as destructive, with no listing made (SPEC §17.1); elicitations are
    answered from the `mock elicit` queue (empty: decline); no server starts early; and the calls a model
    asks for in one answer take their mocks in the model's order, one after another."""

    def __init__(self, queues: MockQueues, settings: Settings, inner: Facts) -> None:
        super().__init__(inner)
        self.queues = queues
        self.settings = settings

    @property
    def concurrent_calls(self) -> bool:
        return False

    def _issued(self, handle: str) -> bool:
        return handle in self.queues.issued_handles

    def approval_safety(self, ref: ToolRef) -> str:
        if ref.builtin:
            return self.inner.approval_safety(ref)
        server = self.settings.tools.servers.get(ref.server)
        return server.safety.get(ref.remote, "destructive") if server is not None else "destructive"

    def dynamic_approval_safety(self, handle: str, tool: str) -> str:
        return "destructive"

    def server_name(self, handle: str) -> str:
        if self._issued(handle):
            return "mcp" + handle.rpartition(":")[2]
        return self.inner.server_name(handle)

    def connection(self, handle: str) -> Any:
        if self._issued(handle):
            suffix = handle.split(":", 1)[-1]
            return wire.connection_record(int(suffix) if suffix.isdigit() else 0)
        return self.inner.connection(handle)

    def listing(self, handle: str) -> list:
        if self._issued(handle):
            return []
        return self.inner.listing(handle)

    def elicit(self, server: str, request: Any) -> Any:
        mock = self.queues.take("elicit")
        if mock is EMPTY:
            return "decline"
        if isinstance(mock, Failure):
            from ..mcp.elicitation import ElicitationRefused
            raise ElicitationRefused(mock.message)
        return mock

    def prestart(self, tools: set[str]) -> None:
        """A test starts no server before its calls (a mocked call connects to nothing)."""
