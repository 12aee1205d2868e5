"""The OpenTelemetry layer of the effects chain (SPEC §18.1): a `chat` span per model turn and an
`execute_tool` span per tool call, built-in, typed, dynamic or asked for by the model, each under its agent's
`invoke_agent` span (sagepy.telemetry.spans keeps those and the root).

It sits beside the trace layer, above the journal: a step the journal will answer from its record is known
before it runs (`Journal.replaying`), so its span carries `sage.replayed` and a replayed model turn is an
INTERNAL span without usage. While a tool step runs, its span is the thread's current OpenTelemetry context:
the MCP SDK's client spans nest under it and its `traceparent` reaches the server in the request's `_meta`.

In the chain only when export is on (`factory.enable_export`); loaded only then.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any

from opentelemetry import context as otel_context

from ..core import types as T
from ..core.errors import SageRaise
from ..mcp.failures import McpFailure
from ..telemetry.spans import CLIENT, INTERNAL, SpanExport, mark_error

__all__ = ["OtelLayer", "SpanExport", "observe_answer"]
from .chain import Perform
from .step import LLM, MCP, TOOL, Step

_UNANSWERED = object()
_turns = threading.local()   # the model turn being answered in this thread: what the LLM client reports


class _Turn:
    """What the LLM client reported about the requests of one model turn."""

    __slots__ = ("models", "finish_reasons", "input_tokens", "output_tokens", "provider", "url", "model")

    def __init__(self) -> None:
        self.provider: str | None = None   # where the answer came from: the provider, its URL, the model asked
        self.url: str | None = None
        self.model: str | None = None
        self.models: list[str] = []
        self.finish_reasons: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None


def observe_answer(data: Any, provider: str, url: str, model: str, counts: Any) -> None:
    """The LLM client's hook: one decoded answer of the turn this thread is performing, in chat-completions
    form (`choices[].finish_reason`) or the Messages API's (`stop_reason`), from `provider` at `url` for
    `model`, with its token counts (sagepy.llm.usage.Counts)."""
    turn = getattr(_turns, "turn", None)
    if turn is None or not isinstance(data, dict):
        return
    turn.provider, turn.url, turn.model = provider, url, model
    if counts.input is not None:
        turn.input_tokens = (turn.input_tokens or 0) + counts.input
    if counts.output is not None:
        turn.output_tokens = (turn.output_tokens or 0) + counts.output
    if isinstance(data.get("model"), str):
        turn.models.append(data["model"])
    for choice in data.get("choices") or ():
        if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
            turn.finish_reasons.append(choice["finish_reason"])
    if isinstance(data.get("stop_reason"), str):
        turn.finish_reasons.append(data["stop_reason"])


class OtelLayer:
    def __init__(self, export: SpanExport, llm: Any, journal: Any, world: Any, live_handle: Any) -> None:
        """`llm`: the run's LlmConfig; `journal`: a durable run's (a step it replays is marked so); `world`:
        the run's, whose MCP pool tells the wire facts of a call; `live_handle`: the pool's handle for the
        program's (Effects.live_handle)."""
        self.export = export
        self.llm = llm
        self.journal = journal
        self.world = world
        self.live_handle = live_handle
        self._server = _address(llm.url)
        self._provider = getattr(llm, "provider", None) or "openai"

    def perform(self, step: Step, next: Perform) -> Any:
        kind = step.kind
        if kind == LLM:
            return self._chat(step, next)
        if kind == TOOL or (kind == MCP and step.target == "mcp_call"):
            return self._tool(step, next)
        return next(step)

    def _replaying(self, step: Step) -> bool:
        journal = self.journal
        return journal is not None and journal.replaying(step)

    # ---------------------------------------------------------------- model turns
    def _chat(self, step: Step, next: Perform) -> Any:
        replayed = self._replaying(step)
        model = self._model(step)
        started = time.time_ns()
        turn = _Turn()
        outer = getattr(_turns, "turn", None)
        _turns.turn = turn
        error: SageRaise | None = None
        value: Any = None
        try:
            value = next(step)
            return value
        except SageRaise as exc:
            error = exc
            raise
        finally:
            _turns.turn = outer
            self._chat_span(step, model, started, turn, replayed, value, error)

    def _model(self, step: Step) -> str:
        from ..llm.client import split_model
        overrides = step.turn.overrides if step.turn is not None else step.overrides
        return split_model((overrides or {}).get("model") or self.llm.model)[1] or ""

    def _offline(self, model: str) -> bool:
        """The `echo` model and the `mock` key answer without a request: no server to name."""
        return model == "echo" or bool(getattr(self.llm, "mock", False))

    def _chat_span(self, step: Step, model: str, started: int, turn: _Turn, replayed: bool, value: Any,
                   error: SageRaise | None) -> None:
        server, asked = self._server, model
        if turn.provider is not None:   # the route that answered: `model: "<provider>:…"`, a fallback
            model, server = turn.model or model, _address(turn.url)
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                      "gen_ai.provider.name": turn.provider or self._provider,
                                      "gen_ai.request.model": model}
        if model != asked:   # a fallback answered (SPEC §23): the model the turn asked for first
            attributes["sage.llm.fallback_from"] = asked
        if server is not None and not self._offline(model):
            attributes["server.address"], attributes["server.port"] = server
        if turn.models:
            attributes["gen_ai.response.model"] = turn.models[-1]
        if turn.finish_reasons:
            attributes["gen_ai.response.finish_reasons"] = turn.finish_reasons
        if replayed:
            attributes["sage.replayed"] = True
        else:
            if turn.input_tokens is not None:
                attributes["gen_ai.usage.input_tokens"] = turn.input_tokens
            if turn.output_tokens is not None:
                attributes["gen_ai.usage.output_tokens"] = turn.output_tokens
        export = self.export
        if export.capture:
            attributes["gen_ai.input.messages"] = export.redact(_input_messages(step))
            if error is None:
                attributes["gen_ai.output.messages"] = export.redact(_output_messages(value, turn, step))
        # a turn that sent no request (replayed from the journal, or answered by `echo` or the `mock` key)
        # is no client call
        client = not replayed and not self._offline(model)
        span = export.start_step(f"chat {model}", step.agent, CLIENT if client else INTERNAL, attributes,
                                 start_time=started)
        if error is not None:
            mark_error(span, error.error.kind, export.redact(error.error.display()))
        span.end()

    # ---------------------------------------------------------------- tool calls
    def _tool(self, step: Step, next: Perform) -> Any:
        export = self.export
        info = step.tool
        dynamic = step.kind == MCP
        name = info.label if info is not None else None
        if dynamic and info is None:
            name = self._dynamic_label(step.arguments[0], step.arguments[1])
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      "gen_ai.tool.type": "function",
                                      "sage.tool.source": step.source or "program"}
        call_id = getattr(step, "call_id", None)
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        replayed = self._replaying(step)
        if replayed:
            attributes["sage.replayed"] = True
        if export.capture:
            attributes["gen_ai.tool.call.arguments"] = export.redact(_tool_arguments(step))
        span = export.start_step(f"execute_tool {name}", step.agent, INTERNAL, attributes)
        token = otel_context.attach(span.in_context())
        value: Any = _UNANSWERED
        try:
            span.set_attribute("sage.tool.safety", step.safety)
            value = next(step)
            return value
        except SageRaise as exc:
            mark_error(span, exc.error.kind, export.redact(exc.error.display()))
            raise
        finally:
            otel_context.detach(token)
            if dynamic or (info is not None and not info.builtin):
                self._mcp_attributes(span, step, dynamic)
            if export.capture and value is not _UNANSWERED:
                span.set_attribute("gen_ai.tool.call.result", export.redact(_tool_result(value, step)))
            span.end()

    def _dynamic_label(self, handle: str, tool: str) -> str:
        manager = self.world.mcp_started
        label = handle
        if manager is not None:
            try:
                label = manager.handle_label(self.live_handle(handle))
            except (McpFailure, SageRaise):
                label = handle
        server = "mcp" + label[len("mcp:"):] if label.startswith("mcp:") else label
        return f"{server}.{tool}"

    def _mcp_attributes(self, span: Any, step: Step, dynamic: bool) -> None:
        manager = self.world.mcp_started
        span.set_attribute("mcp.method.name", "tools/call")
        if manager is None:
            return
        if dynamic:
            protocol, transport = manager.wire_facts(handle=self.live_handle(step.arguments[0]))
        else:
            protocol, transport = manager.wire_facts(server=step.tool.server)
        if protocol:
            span.set_attribute("mcp.protocol.version", protocol)
        network = {"stdio": "pipe", "http": "tcp"}.get(transport)
        if network is not None:
            span.set_attribute("network.transport", network)


def _address(url: str | None) -> tuple[str, int] | None:
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(url or "")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


# ---------------------------------------------------------------- content (only on opt-in)
def _text_parts(text: Any) -> list[dict]:
    return [{"type": "text", "content": text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)}]


def _input_messages(step: Step) -> str:
    """The conventions' input messages of a model turn: role and parts."""
    arguments = step.arguments
    if isinstance(arguments, list):   # a plain divine: its prompt
        messages = [{"role": "user", "parts": _text_parts(arguments[0])}]
    else:
        raw = list(arguments.get("messages") or [])
        if arguments.get("system"):
            raw.insert(0, {"role": "system", "content": arguments["system"]})
        messages = []
        for m in raw:
            parts = []
            if m.get("role") == "tool":
                parts.append({"type": "tool_call_response", "id": m.get("tool_call_id"), "response": m.get("content")})
            elif m.get("content") is not None:
                parts.extend(_text_parts(m["content"]))
            for call in m.get("tool_calls") or ():
                function = call.get("function") or {}
                parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                              "arguments": function.get("arguments")})
            messages.append({"role": m.get("role"), "parts": parts})
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


def _output_messages(value: Any, turn: _Turn, step: Step) -> str:
    finish = turn.finish_reasons[-1] if turn.finish_reasons else "stop"
    if isinstance(value, dict) and value.get("role") == "assistant":   # a turn of a tool loop
        parts = _text_parts(value["content"]) if value.get("content") else []
        for call in value.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": function.get("arguments")})
    else:
        parts = _text_parts(value if step.ret == T.STRING else _json_of(value))
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish}], ensure_ascii=False,
                      separators=(",", ":"))


def _json_of(value: Any) -> str:
    """An outcome (wire data) as compact JSON text."""
    from ..core.json_text import compact_json
    return compact_json(value)


def _tool_arguments(step: Step) -> str:
    arguments = step.arguments
    info = step.tool
    if step.kind == MCP:   # mcp_call(handle, tool, args_json)
        return arguments[2] if len(arguments) > 2 else "{}"
    if isinstance(arguments, list) and info is not None:   # a built-in tool's positional Strings
        arguments = dict(zip(info.params, arguments))
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _tool_result(value: Any, step: Step) -> str:
    """A String result as it is; any other as its JSON."""
    return value if step.ret == T.STRING else _json_of(value)
