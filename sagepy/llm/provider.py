"""The model APIs `divine`, the tool loop and sampling speak (SPEC §4.13), behind one interface.

The client and the tool loop keep every conversation in one provider-neutral form, the one the journal
records for model turns: a list of `{"role": "system" | "user" | "assistant" | "tool", …}` messages, where an
assistant message may carry `tool_calls` (`[{"id", "type": "function", "function": {"name", "arguments"}}]`,
arguments a JSON object's text), a tool message answers one call (`tool_call_id`, `content`) and says
`"is_error": true` when its content is an `error: …` answer. An answer comes back in the same form (an
assistant message). A provider turns that form into its API's request body and its API's answer back into
it, and names its endpoint, headers, token counts and error messages.

`sagepy.llm.providers.OpenAIChat` is chat completions (SPEC §4.10, §4.12), whose messages are almost the
neutral form itself; `sagepy.llm.anthropic.AnthropicMessages` is the Messages API; `provider_for` (there too)
picks the configured one.
"""
from __future__ import annotations

from typing import Any

from ..core.json_text import parse_json
from .config import LlmConfig
from .usage import Counts

BODY_LIMIT = 500
"""How much of a failed answer's body an `API error` message quotes."""


class Provider:
    """One model API. `name` is what traces call it (`llm.request {provider}`, `gen_ai.provider.name`);
    `path` is appended to the base URL; `response_format` says whether typed calls may send one; `dialect`
    is the module that turns parameter schemas into the API's tools (`dialectize`, `tool`)."""

    name = ""
    path = ""
    response_format = False
    dialect: Any = None

    def __init__(self, config: LlmConfig) -> None:
        self.config = config

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, model: str, messages: list[dict], temperature: float | None, max_tokens: int | None,
             tools: list[dict] | None = None) -> dict:
        """The request body for the neutral `messages` (and the tools offered, already in this dialect)."""
        raise NotImplementedError

    def answer(self, data: Any) -> dict:
        """The neutral assistant message of a decoded answer: `content` (text or None) and `tool_calls`."""
        raise NotImplementedError

    def text(self, data: Any) -> str:
        """The text of an answer, `""` when it has none."""
        return self.answer(data).get("content") or ""

    def usage(self, data: Any) -> Counts:
        """The token counts the answer reports (SPEC §23): input (cached input included), output, cached."""
        raise NotImplementedError

    def error_text(self, status: int, text: str) -> str:
        """`API error <status>: …` for a failed answer with body `text` (already redacted)."""
        return f"API error {status}: {' '.join(text.split())[:BODY_LIMIT]}"

    def transient_with_delay(self, status: int) -> bool:
        """Whether a failure of this status is retried after the server's `Retry-After`, when it sends one."""
        return status == 429


def count(usage: Any, *path: str) -> int | None:
    """An integer field of a `usage` object, down `path` (None where absent or not an integer ≥ 0)."""
    value = usage
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def text_of(content: Any) -> str:
    """A content that is a string, or parts of which the text ones are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def decoded(text: str) -> Any:
    """The JSON of an error body, None when it is not JSON."""
    try:
        return parse_json(text)
    except ValueError:
        return None
