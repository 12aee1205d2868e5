"""The providers by name (SPEC §4.13): OpenAI-compatible chat completions here, the Messages API in
sagepy.llm.anthropic; the interface and the neutral conversation they share are in sagepy.llm.provider."""
from __future__ import annotations

from typing import Any

from .config import ANTHROPIC, LlmConfig
from .provider import Provider, count, text_of
from .usage import Counts


def provider_for(config: LlmConfig) -> Provider:
    if config.provider == ANTHROPIC:
        from .anthropic import AnthropicMessages
        return AnthropicMessages(config)
    return OpenAIChat(config)


class OpenAIChat(Provider):
    """OpenAI-compatible chat completions: `POST {url}/chat/completions`, bearer key."""

    name = "openai"
    path = "/chat/completions"
    response_format = True

    @property
    def dialect(self) -> Any:  # type: ignore[override]
        from . import dialect
        return dialect

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return headers

    def body(self, model: str, messages: list[dict], temperature: float | None, max_tokens: int | None,
             tools: list[dict] | None = None) -> dict:
        # `is_error` is the neutral form's: chat completions has no such field and refuses unknown ones
        wire = [{k: v for k, v in m.items() if k != "is_error"} if "is_error" in m else m for m in messages]
        body: dict[str, Any] = {"model": model, "messages": wire}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if tools is not None:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return body

    def answer(self, data: Any) -> dict:
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            return {"role": "assistant", "content": ""}
        answer: dict[str, Any] = {"role": "assistant",
                                  "content": None if message.get("content") is None else text_of(message["content"])}
        if message.get("tool_calls"):
            answer["tool_calls"] = message["tool_calls"]
        return answer

    def usage(self, data: Any) -> Counts:
        usage = data.get("usage") if isinstance(data, dict) else None
        return Counts(count(usage, "prompt_tokens"), count(usage, "completion_tokens"),
                      count(usage, "prompt_tokens_details", "cached_tokens"))
