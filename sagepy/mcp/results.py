"""Tool results to Sage values (SPEC §8.4 for typed calls, §8.5 for `mcp_call`).

A result arrives here as its MCP wire form (`content`, `structuredContent`, `isError`), already checked
against `max_result_bytes`. Non-text content items (images, audio, resources, links) are ignored.
"""
from __future__ import annotations

from typing import Any

from ..convert import ConversionError, VALUE_LIMIT, compact_json, from_json, parse_json
from ..runtime.values import UNIT
from ..types import STRING, UNIT as UNIT_TYPE, MapT, RecordT, Type, type_name
from .failures import McpFailure


def _texts(result: dict) -> list[str]:
    return [item.get("text", "") for item in result.get("content") or []
            if isinstance(item, dict) and item.get("type") == "text"]


def _text_of(result: dict, empty: str) -> str:
    """The text items joined, else the compact JSON of structuredContent, else `empty`."""
    texts = _texts(result)
    if texts:
        return "\n".join(texts)
    if "structuredContent" in result:
        return compact_json(result["structuredContent"])
    return empty


def error_text(result: dict) -> str:
    """The message of an `isError` result: its text items, else its structured content, else a marker."""
    return _text_of(result, "(no message)")


def dynamic_text(result: dict) -> str:
    """What `mcp_call` returns: the text items, else the compact JSON of structuredContent, else ""."""
    return _text_of(result, "")


def _render(data: Any) -> str:
    text = data if isinstance(data, str) else compact_json(data)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def typed_value(result: dict, return_type: Type, label: str, remote: str) -> Any:
    """The Sage value of a successful typed call (§8.4 rules 1-4). Raises McpFailure on failure."""
    if return_type == UNIT_TYPE:
        return UNIT
    failure: tuple[Any, ConversionError | str] | None = None
    if "structuredContent" in result:
        candidate = result["structuredContent"]
        if (not isinstance(return_type, (RecordT, MapT)) and isinstance(candidate, dict)
                and len(candidate) == 1 and "result" in candidate):
            candidate = candidate["result"]
        try:
            return from_json(candidate, return_type)
        except ConversionError as exc:
            failure = (candidate, exc)
    if return_type == STRING:
        return _text_of(result, "")
    texts = _texts(result)
    if len(texts) == 1:
        try:
            data = parse_json(texts[0])
        except ValueError as exc:
            failure = (texts[0], f"the text is not JSON: {exc}")
        else:
            try:
                return from_json(data, return_type)
            except ConversionError as exc:
                failure = (data, exc)
    if failure is None:
        count = "no text item" if not texts else f"{len(texts)} text items"
        failure = (result.get("content") or [], f"no structuredContent and {count}")
    value, reason = failure
    raise McpFailure("deserialisation error",
                     f"{label} (remote '{remote}'): cannot convert {_render(value)} to "
                     f"{type_name(return_type)}: {reason}")
