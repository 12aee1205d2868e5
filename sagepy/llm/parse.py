"""Lenient extraction of the JSON value in a model's reply (SPEC §4.10, typed `divine`).

Models asked for JSON still wrap it in code fences or in a sentence of prose. The reply is tried, in order,
as a whole; as the first ```json / ``` fenced block anywhere in it; as the first balanced JSON object or
array in the text. Only strict JSON is accepted in each case (`sagepy.core.json_text.parse_json`).
"""
from __future__ import annotations

import re
from typing import Any

from ..core.json_text import parse_json

# An opening fence (``` or ```json, any info string), its body, and the closing fence.
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)

# Each `{` or `[` in the text may start a candidate; past this many failed candidates the text is not
# JSON-bearing prose but something else, and scanning on would only cost time.
_MAX_CANDIDATES = 32


def extract_json(text: str) -> Any:
    """The JSON data in a reply. Raises ValueError saying why no JSON value could be read."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty")
    try:
        return parse_json(stripped)
    except ValueError as exc:
        whole_error = exc
    fence = _FENCE.search(text)
    fence_error: ValueError | None = None
    if fence is not None:
        try:
            return parse_json(fence.group(1).strip())
        except ValueError as exc:
            fence_error = exc
    found, data, span_error = _first_balanced(text)
    if found:
        return data
    # Report the failure of the most specific form the reply had.
    if fence_error is not None:
        raise ValueError(f"the fenced block is not valid JSON: {fence_error}")
    if span_error is not None:
        raise ValueError(f"the reply holds no valid JSON object or array: {span_error}")
    raise ValueError(f"the reply is not JSON: {whole_error}")


def _first_balanced(text: str) -> tuple[bool, Any, ValueError | None]:
    """(found, data, error of the first candidate): the first balanced `{…}`/`[…]` span that parses."""
    first_error: ValueError | None = None
    start = _next_opening(text, 0)
    tried = 0
    while start != -1 and tried < _MAX_CANDIDATES:
        end = _balanced_end(text, start)
        tried += 1
        if end != -1:
            try:
                return True, parse_json(text[start:end]), None
            except ValueError as exc:
                if first_error is None:
                    first_error = exc
        start = _next_opening(text, start + 1)
    return False, None, first_error


def _next_opening(text: str, position: int) -> int:
    brace = text.find("{", position)
    bracket = text.find("[", position)
    if brace == -1:
        return bracket
    if bracket == -1:
        return brace
    return min(brace, bracket)


def _balanced_end(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at `start`, or -1; brackets inside JSON strings
    do not count. Mismatched pairs (`{]`) still balance here; `parse_json` rejects them afterwards."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{" or ch == "[":
            depth += 1
        elif ch == "}" or ch == "]":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1
