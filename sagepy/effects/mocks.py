"""The mocks layer (SPEC §9.3), present only under `sage test`: a queued answer returns or raises without
touching anything below; an empty queue lets the step go on (except for model turns, E054)."""
from __future__ import annotations

from typing import Any

from ..core import types as T
from ..core.errors import SageRaise, TestAbort
from ..core.values import UNIT, ErrorValue
from ..llm.tool_loop import ModelTurn, final_answer, scripted_answer
from ..testing.mocks import EMPTY, Failure, ScriptedCalls, convert_mock
from .chain import Perform
from .step import LLM, MCP, TOOL, Step
from .wire import tool_records

_MCP_KEYS = {"mcp_connect": "mcp.connect", "mcp_list_tools": "mcp.list_tools", "mcp_tools": "mcp.list_tools",
             "mcp_server_info": "mcp.server_info", "mcp_call": "mcp.call", "mcp_disconnect": "mcp.disconnect"}


class MockLayer:
    def __init__(self, effects: Any) -> None:
        self.effects = effects          # its `mocks` queues, `real_llm` and `ended` (set when the test ends)
        self.queues = effects.mocks

    def perform(self, step: Step, next: Perform) -> Any:
        kind = step.kind
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
        if self.effects.ended:
            raise SageRaise(ErrorValue("Agent", "test ended"))

    def _llm(self, step: Step, next: Perform) -> Any:
        name = "infer" if step.target == "infer" else "divine"
        mock = self.queues.take("llm")
        if mock is EMPTY:
            if self.effects.real_llm:
                return next(step)
            raise SageRaise(ErrorValue("Llm", f"no mock left for {name} (E054)", "E054"))
        if isinstance(mock, Failure):
            raise SageRaise(ErrorValue("Llm", mock.message))
        turn = step.detail if type(step.detail) is ModelTurn else None   # a turn of `divine(p, tools: [...])`
        if isinstance(mock, ScriptedCalls):
            if turn is None:
                raise TestAbort(f"mock for {name}: tool calls mocked for a {name} that offers no tools")
            return scripted_answer(mock.calls, turn.offer, turn.turn)
        if turn is None:
            return convert_mock(name, mock, step.ret)
        return final_answer(convert_mock(name, mock, turn.target))

    def _tool(self, step: Step, next: Perform) -> Any:
        info = step.detail
        mock = self.queues.take(info.label)
        if mock is EMPTY:
            return next(step)
        if isinstance(mock, Failure):
            if info.builtin:
                raise SageRaise(ErrorValue("Tool", mock.message))
            raise SageRaise(ErrorValue("Mcp", mock.message, display_text=f"MCP tool error: {mock.message}"))
        return convert_mock(info.label, mock, info.ret)

    def _mcp(self, step: Step, next: Perform) -> Any:
        """Consumed before any argument is looked at: a mocked call works with any config and any handle."""
        name = step.target
        key = _MCP_KEYS[name]
        mock = self.queues.take(key)
        if mock is EMPTY:
            return next(step)
        if isinstance(mock, Failure):
            message = mock.message
            if name == "mcp_call":
                message = f"mcp_call '{step.arguments[1]}' failed: MCP tool error: {mock.message}"
            raise SageRaise(ErrorValue("Mcp", message, display_text=message))
        if name == "mcp_connect":
            value = convert_mock(key, mock, T.STRING)
            self.queues.issued_handles.add(value)
            return value
        if name == "mcp_disconnect":
            return UNIT
        if name == "mcp_server_info":
            from ..check.prelude import load_prelude   # loaded already: the test file was checked
            return convert_mock(key, mock, T.RecordT(load_prelude().records["McpServerInfo"]))
        if name == "mcp_tools":
            from ..core.json_text import parse_json
            text = convert_mock(key, mock, T.STRING)
            try:
                return tool_records(parse_json(text))
            except ValueError as exc:
                raise TestAbort(f"mock for mcp.list_tools: cannot convert '{text}' to List<McpTool>: {exc}")
        return convert_mock(key, mock, T.STRING)
