"""The client's model (SPEC §21, `[serve] model = "client"`): `divine` in a served run is sent to the calling
client as `sampling/createMessage` (on the 2026-07-28 era inside an input-required result, sagepy.serve.live),
so that a served agent thinks with the host's model and needs no API key.

`ClientSampling` is the run's model transport (sagepy.llm.client.LlmClient's `transport`): it takes the OpenAI
chat bodies the LLM client builds and answers in their form, so typed `divine`, its JSON instructions and its
retries work as with any model. A `divine` with `tools:` sends its tools (and the conversation's tool calls and
results as `tool_use` / `tool_result` content) when the client declared sampling with tools (MCP 2025-11-25);
the tool loop runs the calls the client's model asks for and asks again. A client that did not declare
sampling gets `LLM error: the calling client does not offer sampling`; one without tools in sampling, for a
`divine` with tools, `LLM error: the calling client does not offer sampling with tools`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types

from ..core.json_text import compact_json, parse_json
from ..llm.transport import Answer, TransportError

if TYPE_CHECKING:
    from .live import CallPorts

NO_SAMPLING = "the calling client does not offer sampling"
NO_TOOLS = "the calling client does not offer sampling with tools"
DEFAULT_MAX_TOKENS = 1024


class ClientSampling:
    endpoint = "mcp-client-sampling"

    def __init__(self, ports: CallPorts) -> None:
        self.ports = ports

    def redact(self, text: str) -> str:
        return text

    def close(self) -> None:
        pass

    def post(self, body: dict, model: str | None = None, admit: Any = None) -> Answer:
        capabilities = self.ports.capabilities
        sampling = capabilities.sampling if capabilities is not None else None
        if sampling is None:
            raise TransportError(NO_SAMPLING)
        tools = [_tool(t) for t in body.get("tools") or []]
        if tools and sampling.tools is None:
            raise TransportError(NO_TOOLS)
        if admit is not None:
            admit()
        system = "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
        params = types.CreateMessageRequestParams(
            messages=sampling_messages(body["messages"]), system_prompt=system or None,
            max_tokens=body.get("max_tokens") or DEFAULT_MAX_TOKENS, temperature=body.get("temperature"),
            tools=tools or None, tool_choice=types.ToolChoice(mode="auto") if tools else None)
        try:
            result = self.ports.input(types.CreateMessageRequest(params=params))
        except Exception as exc:   # the client refused or failed the request
            raise TransportError(f"the calling client's sampling failed: {exc}") from None
        return Answer(chat_answer(result), 1)


def _tool(spec: dict) -> types.Tool:
    function = spec.get("function") or {}
    return types.Tool(name=function.get("name", ""), description=function.get("description"),
                      input_schema=function.get("parameters") or {"type": "object"})


def sampling_messages(messages: list[dict]) -> list[types.SamplingMessage]:
    """The conversation of a chat body as sampling messages: the model's tool calls as `tool_use` content,
    and each run of tool messages after them as one user message of `tool_result` content."""
    out: list[types.SamplingMessage] = []
    results: list[Any] = []
    for m in messages:
        role = m["role"]
        if role == "tool":
            results.append(types.ToolResultContent(
                tool_use_id=m["tool_call_id"], content=[types.TextContent(type="text", text=m.get("content") or "")],
                is_error=True if m.get("is_error") else None))
            continue
        if results:
            out.append(types.SamplingMessage(role="user", content=results))
            results = []
        if role not in ("user", "assistant"):
            continue
        text = m.get("content")
        calls = m.get("tool_calls") or []
        if not calls:
            out.append(types.SamplingMessage(role=role, content=types.TextContent(type="text", text=text or "")))
            continue
        blocks: list[Any] = [types.TextContent(type="text", text=text)] if text else []
        for call in calls:
            function = call["function"]
            try:
                arguments = parse_json(function["arguments"] or "{}")
            except ValueError:
                arguments = {}
            blocks.append(types.ToolUseContent(id=call["id"], name=function["name"],
                                               input=arguments if isinstance(arguments, dict) else {}))
        out.append(types.SamplingMessage(role="assistant", content=blocks))
    if results:
        out.append(types.SamplingMessage(role="user", content=results))
    return out


def chat_answer(result: Any) -> dict:
    """The chat-completions answer of a sampling result: its text, and its `tool_use` blocks as tool calls."""
    content = getattr(result, "content", None)
    blocks = content if isinstance(content, list) else [content]
    texts = [b.text for b in blocks if isinstance(b, types.TextContent)]
    calls = [{"id": b.id, "type": "function", "function": {"name": b.name, "arguments": compact_json(b.input)}}
             for b in blocks if isinstance(b, types.ToolUseContent)]
    if not texts and not calls:
        kind = getattr(content, "type", type(content).__name__)
        raise TransportError(f"the calling client's model answered no text ({kind})")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return {"model": getattr(result, "model", "client"),
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}]}
