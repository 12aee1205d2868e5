"""THE boundary between the interpreter and the world (DESIGN.md "The effects boundary").

Output, the clock, stdin, LLM calls, tool calls (built-in and MCP), dynamic MCP and trace events all go through
one `Effects` object per run (per test under `sage test`). Each call passes the layers in order:

1. mocks (only under `sage test`): a queued answer returns or raises without touching anything;
2. real: the LLM client (sagepy.llm), the built-in tools (sagepy.tools) or the MCP manager (sagepy.mcp),
   each created on first use so that a program that never calls them never imports them.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .. import types as T
from .errors import SageRaise
from .values import ErrorValue

if TYPE_CHECKING:
    from ..settings import Settings


class ToolCallInfo:
    """What a compiled `T.f(…)` call site knows about its target."""

    __slots__ = ("tool", "fn", "remote", "params", "ret", "builtin")

    def __init__(self, tool: str, fn: str, remote: str, params: list[str], ret: T.Type, builtin: bool) -> None:
        self.tool = tool
        self.fn = fn
        self.remote = remote
        self.params = params
        self.ret = ret
        self.builtin = builtin

    @property
    def label(self) -> str:
        return f"{self.tool}.{self.fn}"


class Effects:
    def __init__(self, runtime: Any, settings: Settings, trace_path: str | None = None,
                 trace_stderr: bool = False) -> None:
        self.runtime = runtime
        self.settings = settings
        self.trace_lock = threading.Lock()
        self.trace_stream = None
        if trace_path:
            self.trace_stream = open(trace_path, "a", encoding="utf-8")
        elif trace_stderr:
            self.trace_stream = sys.stderr
        self.stdin_lock = threading.Lock()
        self.mocks: Any = None          # sagepy.testing.mocks.MockQueues under `sage test`
        self.real_llm = False           # `sage test --real-llm`
        self.ended = False              # the test this Effects belongs to has ended
        self._llm: Any = None
        self._mcp: Any = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- output
    def write(self, ctx: Any, stream: str, text: str) -> None:
        runtime = ctx.runtime if ctx is not None else self.runtime
        if stream == "out":
            runtime.write_out(text)
        else:
            runtime.write_err(text)

    # ---------------------------------------------------------------- clock and stdin
    def now_ms(self, ctx: Any) -> int:
        return time.time_ns() // 1_000_000

    def read_line(self, ctx: Any) -> str:
        with self.stdin_lock:
            line = sys.stdin.readline()
        if line == "":
            raise SageRaise(ErrorValue("Agent", "end of input"))
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        return line

    def read_all(self, ctx: Any) -> str:
        with self.stdin_lock:
            data = sys.stdin.read()
        if data == "":
            raise SageRaise(ErrorValue("Agent", "end of input"))
        return data

    # ---------------------------------------------------------------- the test layer
    def _check_live(self) -> None:
        if self.ended:
            raise SageRaise(ErrorValue("Agent", "test ended"))

    def _mock(self, key: str) -> Any:
        if self.mocks is None:
            from ..testing.mocks import EMPTY
            return EMPTY
        return self.mocks.take(key)

    # ---------------------------------------------------------------- LLM
    def llm(self) -> Any:
        with self._lock:
            if self._llm is None:
                from ..llm import LlmClient
                self._llm = LlmClient(self.settings.llm, trace=lambda kind, data: self.trace(None, kind, data))
            return self._llm

    def divine(self, ctx: Any, prompt: str, target: T.Type, infer: bool, overrides: dict | None = None) -> Any:
        self._check_live()
        if self.mocks is not None:
            from ..testing.mocks import EMPTY, Failure, convert_mock
            mock = self.mocks.take("llm")
            name = "infer" if infer else "divine"
            if mock is not EMPTY:
                self.trace(ctx, "llm.request", {"model": "mock", "prompt_chars": len(prompt),
                                                "typed": target != T.STRING})
                self.trace(ctx, "llm.response", {"duration_ms": 0, "chars": 0, "attempts": 1, "mocked": True})
                if isinstance(mock, Failure):
                    raise SageRaise(ErrorValue("Llm", mock.message))
                return convert_mock(name, mock, target)
            if not self.real_llm:
                raise SageRaise(ErrorValue("Llm", f"no mock left for {name} (E054)", "E054"))
        return self.llm().divine(prompt, target, infer=infer, **(overrides or {}))

    def sample(self, server: str, messages: list, system: str | None, max_tokens: int | None) -> str:
        """An MCP server's sampling request (SPEC §8), answered like `divine`."""
        self._check_live()
        if self.mocks is not None:
            from ..testing.mocks import EMPTY, Failure, convert_mock
            mock = self.mocks.take("llm")
            if mock is not EMPTY:
                if isinstance(mock, Failure):
                    raise SageRaise(ErrorValue("Llm", mock.message))
                return convert_mock("divine", mock, T.STRING)
            if not self.real_llm:
                raise SageRaise(ErrorValue("Llm", "no mock left for divine (E054)", "E054"))
        return self.llm().chat(messages, system=system, max_tokens=max_tokens, server=server)

    # ---------------------------------------------------------------- tools
    def tool_call(self, ctx: Any, info: ToolCallInfo, args: list) -> Any:
        self._check_live()
        if self.trace_stream is not None:   # the safety lookup costs a round trip: only when it is traced
            self.trace(ctx, "tool.call", {"tool": info.tool, "fn": info.fn,
                                          **({} if info.builtin else {"remote": info.remote}),
                                          "safety": self.safety(info)})
        started = time.monotonic()
        outcome = {"mocked": False}
        try:
            value = self._tool_call(ctx, info, args, outcome)
        except SageRaise as exc:
            self.trace(ctx, "tool.result", {"tool": info.tool, "fn": info.fn, "ok": False,
                                            "duration_ms": int((time.monotonic() - started) * 1000),
                                            "error": exc.error.display(), "mocked": outcome["mocked"]})
            raise
        if self.trace_stream is not None:
            self.trace(ctx, "tool.result", {"tool": info.tool, "fn": info.fn, "ok": True,
                                            "duration_ms": int((time.monotonic() - started) * 1000),
                                            "mocked": outcome["mocked"]})
        return value

    def _tool_call(self, ctx: Any, info: ToolCallInfo, args: list, outcome: dict) -> Any:
        if self.mocks is not None:
            from ..testing.mocks import EMPTY, Failure, convert_mock
            mock = self.mocks.take(info.label)
            if mock is not EMPTY:
                outcome["mocked"] = True
                if isinstance(mock, Failure):
                    if info.builtin:
                        raise SageRaise(ErrorValue("Tool", mock.message))
                    raise SageRaise(ErrorValue("Mcp", mock.message, display_text=f"MCP tool error: {mock.message}"))
                return convert_mock(info.label, mock, info.ret)
        if info.builtin:
            from ..tools import call_builtin_tool
            return call_builtin_tool(info.tool, info.fn, args, cancel=getattr(ctx, "cancel_event", None),
                                     overrides=self.settings.overrides)
        return (self._mcp or self.mcp()).call_sage(self.settings.tools.server_key(info.tool), info.label,
                                                   info.remote, info.params, args, info.ret)

    def prestart(self, tools: set[str]) -> None:
        """Start, in the background, the servers of the tool blocks that some agent `use`s (SPEC §8.3)."""
        configured = self.settings.tools
        if not tools or not configured:
            return
        keys = sorted({configured.server_key(t) for t in tools} & set(configured))
        if keys:
            from .agents import start_thread
            # importing the MCP SDK alone takes about a second: do it off the main thread too
            start_thread(lambda: self.mcp().prestart(keys), "mcp-prestart")

    def safety(self, info: ToolCallInfo) -> str:
        if info.builtin:
            from ..tools import SAFETY
            return SAFETY.get((info.tool, info.fn), "destructive")
        if self._mcp is None:
            return "destructive"
        return self._mcp.safety(info.tool, info.remote)

    # ---------------------------------------------------------------- MCP
    def mcp(self) -> Any:
        with self._lock:
            if self._mcp is None:
                from ..mcp.manager import McpManager
                settings = self.settings
                self._mcp = McpManager(settings.root, settings.tools.servers, settings.mcp, elicitation=self.elicit,
                                       sampling=self.sample, checkpoint=_stop_point,
                                       trace=lambda kind, data: self.trace(None, kind, data))
            return self._mcp

    def mcp_builtin(self, ctx: Any, name: str, args: list) -> Any:
        """`mcp_connect`, `mcp_list_tools`, `mcp_tools`, `mcp_server_info`, `mcp_connection`, `mcp_call`,
        `mcp_disconnect` (SPEC §8.5); mocks of §9.3 are consumed before any argument is looked at."""
        self._check_live()
        if self.mocks is not None:
            answered, value = self._mcp_mock(name, args)
            if answered:
                return value
        if name == "mcp_connection" and self._mcp is None:
            from .values import NONE
            return NONE
        manager = self.mcp()
        method = {"mcp_connect": manager.connect, "mcp_list_tools": manager.list_tools,
                  "mcp_tools": manager.tools, "mcp_server_info": manager.server_info,
                  "mcp_connection": manager.connection, "mcp_call": manager.call,
                  "mcp_disconnect": manager.disconnect}[name]
        return method(*args)

    def _mcp_mock(self, name: str, args: list) -> tuple[bool, Any]:
        from ..testing.mocks import EMPTY, Failure, convert_mock
        from .values import NONE, UNIT, Record, some
        mocks = self.mocks
        if name == "mcp_connection":
            handle = args[0]
            if handle in mocks.issued_handles:
                n = int(handle.split(":", 1)[1]) if handle.split(":", 1)[-1].isdigit() else 0
                return True, some(Record("McpConnection", {"id": n}))
            return (True, NONE) if self._mcp is None else (False, None)
        key = {"mcp_connect": "mcp.connect", "mcp_list_tools": "mcp.list_tools", "mcp_tools": "mcp.list_tools",
               "mcp_server_info": "mcp.server_info", "mcp_call": "mcp.call",
               "mcp_disconnect": "mcp.disconnect"}[name]
        mock = mocks.take(key)
        if mock is EMPTY:
            return False, None
        if isinstance(mock, Failure):
            message = mock.message
            if name == "mcp_call":
                message = f"mcp_call '{args[1]}' failed: MCP tool error: {mock.message}"
            raise SageRaise(ErrorValue("Mcp", message, display_text=message))
        if name == "mcp_connect":
            value = convert_mock("mcp.connect", mock, T.STRING)
            mocks.issued_handles.add(value)
            return True, value
        if name == "mcp_disconnect":
            return True, UNIT
        if name == "mcp_server_info":
            from .interpreter import prelude_record_type
            return True, convert_mock("mcp.server_info", mock, prelude_record_type("McpServerInfo"))
        if name == "mcp_tools":
            from ..convert import parse_json
            from ..mcp.dynamic import tool_records
            from .errors import TestAbort
            text = convert_mock("mcp.list_tools", mock, T.STRING)
            try:
                return True, tool_records(parse_json(text))
            except ValueError as exc:
                raise TestAbort(f"mock for mcp.list_tools: cannot convert '{text}' to List<McpTool>: {exc}")
        return True, convert_mock(key, mock, T.STRING)

    def elicit(self, server: str, request: Any) -> Any:
        """Answer a server's elicitation (SPEC §8.7): under `sage test` the `mock elicit` queue (empty:
        decline; `fail("m")`: an error answer), otherwise the terminal form or decline, as configured."""
        if self.mocks is not None:
            from ..testing.mocks import EMPTY, Failure
            mock = self.mocks.take("elicit")
            if mock is EMPTY:
                return "decline"
            if isinstance(mock, Failure):
                from ..mcp.elicitation import ElicitationRefused
                raise ElicitationRefused(mock.message)
            return mock
        from ..mcp.elicitation import TerminalElicitation
        return TerminalElicitation()(server, request)

    def interrupt_form(self) -> bool:
        """Ctrl-C: if an elicitation form is open, it answers *cancel* and the program goes on (§8.7)."""
        elicitation = sys.modules.get("sagepy.mcp.elicitation")   # not loaded: no form was ever shown
        return elicitation is not None and elicitation.interrupt_open_form()

    # ---------------------------------------------------------------- tracing
    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        stream = self.trace_stream
        if stream is None:
            return
        if ctx is None and kind not in ("run.start", "run.end"):
            from .agents import current_context
            ctx = current_context()   # layers that do not know the agent (LLM client, MCP) run in its thread
        event = {"t": time.time_ns() // 1_000_000, "kind": kind,
                 "agent": getattr(ctx, "display_name", None)}
        event.update(data)
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        with self.trace_lock:
            stream.write(line + "\n")
            stream.flush()

    def close(self) -> None:
        if self._mcp is not None:
            self._mcp.close_all()
        if self.trace_stream is not None and self.trace_stream is not sys.stderr:
            self.trace_stream.close()
            self.trace_stream = None


def _stop_point() -> None:
    """Called while an MCP request waits: a stopped agent or an ended test cancels the request."""
    from .agents import current_context
    ctx = current_context()
    if ctx is not None:
        ctx.check()
