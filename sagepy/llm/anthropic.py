"""The Anthropic Messages API (SPEC §4.13): `POST {url}/messages` with `x-api-key` and `anthropic-version`.

The neutral conversation (sagepy.llm.provider) becomes a Messages request: system messages go to the
top-level `system`; an assistant message's text and tool calls become `text` and `tool_use` blocks; the tool
messages that answer one assistant message become one `user` message of `tool_result` blocks, in the order
of the calls, `is_error` on the error answers. The API wants roles alternating from a first `user` message
and no empty text, so a message that would follow one of its own role is merged into it (a typed retry
after a tool-result message, sampling messages from a server), and an empty assistant text is left out
with the user message after it merged into the one before.

An answer's `text` blocks, joined, are its content; its `tool_use` blocks are its tool calls; `usage`'s
`input_tokens` (with the prompt cache's `cache_read_input_tokens` and `cache_creation_input_tokens`) and
`output_tokens` are its token counts. Error bodies (`{"type": "error", "error": {"type",
"message"}}`) become `API error <status>: <type>: <message>`.
"""
from __future__ import annotations

from typing import Any

from ..core.json_text import compact_json, parse_json
from .config import ANTHROPIC_MAX_TOKENS
from .provider import BODY_LIMIT, Provider, count, decoded
from .usage import Counts

API_VERSION = "2023-06-01"


class AnthropicMessages(Provider):
    name = "anthropic"
    path = "/messages"

    @property
    def dialect(self) -> Any:  # type: ignore[override]
        from . import anthropic_dialect
        return anthropic_dialect

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json",
                   "anthropic-version": API_VERSION}
        if self.config.api_key:
            headers["x-api-key"] = self.config.api_key
        return headers

    def body(self, model: str, messages: list[dict], temperature: float | None, max_tokens: int | None,
             tools: list[dict] | None = None) -> dict:
        system = [m["content"] for m in messages if m.get("role") == "system" and isinstance(m.get("content"), str)]
        body: dict[str, Any] = {"model": model,
                                "max_tokens": max_tokens if max_tokens is not None else ANTHROPIC_MAX_TOKENS,
                                "messages": wire_messages(messages)}
        if system:
            body["system"] = "\n\n".join(system)
        if temperature is not None:
            body["temperature"] = temperature
        if tools is not None:
            body["tools"] = tools
            body["tool_choice"] = {"type": "auto"}
        return body

    def answer(self, data: Any) -> dict:
        blocks = data.get("content") if isinstance(data, dict) else None
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        text = "".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
        calls = [{"id": b.get("id"), "type": "function",
                  "function": {"name": b.get("name"), "arguments": compact_json(b.get("input", {}))}}
                 for b in blocks if b.get("type") == "tool_use"]
        if calls:
            return {"role": "assistant", "content": text or None, "tool_calls": calls}
        return {"role": "assistant", "content": text}

    def usage(self, data: Any) -> Counts:
        """`input_tokens` leaves out what was read from or written to the prompt cache: the input is all three."""
        usage = data.get("usage") if isinstance(data, dict) else None
        fresh, read, written = (count(usage, key) for key in ("input_tokens", "cache_read_input_tokens",
                                                                "cache_creation_input_tokens"))
        total = None if fresh is None else fresh + (read or 0) + (written or 0)
        return Counts(total, count(usage, "output_tokens"), read)

    def error_text(self, status: int, text: str) -> str:
        body = decoded(text)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("type"), str) and isinstance(error.get("message"), str):
            return f"API error {status}: {error['type']}: {' '.join(error['message'].split())[:BODY_LIMIT]}"
        return super().error_text(status, text)

    def transient_with_delay(self, status: int) -> bool:
        return status in (429, 529)


def wire_messages(messages: list[dict]) -> list[dict]:
    """The Messages API's `messages` for a neutral conversation (system messages left out)."""
    out: list[dict] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                                     "content": message.get("content") or ""}
            if message.get("is_error"):
                block["is_error"] = True
            _append(out, "user", [block])
        elif role == "assistant":
            blocks = _text_blocks(message.get("content"))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                               "input": _input(function.get("arguments"))})
            _append(out, "assistant", blocks)
        else:
            _append(out, "user", _text_blocks(message.get("content")))
    return [{"role": m["role"], "content": _compact(m["content"])} for m in out]


def _append(out: list[dict], role: str, blocks: list[dict]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def _text_blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):   # content parts (sampling): their non-empty text parts
        return [{"type": "text", "text": part["text"]} for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]]
    return []


def _compact(blocks: list[dict]) -> Any:
    """A lone text block is sent as a plain string, the API's short form."""
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


def _input(arguments: Any) -> dict:
    """A `tool_use` block's `input` (an object) from the neutral call's arguments text."""
    if isinstance(arguments, dict):
        return arguments
    try:
        value = parse_json(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
