"""The text of tool results (SPEC §8.5 for `mcp_call`, and the message of an `isError` result).

A result arrives here as its MCP wire form (`content`, `structuredContent`, `isError`), already checked
against `max_result_bytes`. Non-text content items (images, audio, resources, links) are ignored. Typed
results become Sage values in the effects layer (sagepy/effects/wire.py).
"""
from __future__ import annotations

from ..core.json_text import compact_json


def text_items(result: dict) -> list[str]:
    return [item.get("text", "") for item in result.get("content") or []
            if isinstance(item, dict) and item.get("type") == "text"]


def text_of(result: dict, empty: str) -> str:
    """The text items joined, else the compact JSON of structuredContent, else `empty`."""
    texts = text_items(result)
    if texts:
        return "\n".join(texts)
    if "structuredContent" in result:
        return compact_json(result["structuredContent"])
    return empty


def error_text(result: dict) -> str:
    """The message of an `isError` result: its text items, else its structured content, else a marker."""
    return text_of(result, "(no message)")


def dynamic_text(result: dict) -> str:
    """What `mcp_call` returns: the text items, else the compact JSON of structuredContent, else ""."""
    return text_of(result, "")
