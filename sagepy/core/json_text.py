"""JSON text in and out: strict parsing with reasons of sagepy's own, and compact writing (SPEC §5, §6.7).

`sagepy.core.convert` re-exports both, since every conversion between JSON text and Sage values goes through it.
"""
from __future__ import annotations

import json
import math
from typing import Any

from .text import escape_surrogates


# one encoder for every call: json.dumps builds a new one each time it is given options (the journal writes
# one text per step)
_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_compact_finite = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def compact_json(data: Any, finite: bool = False) -> str:
    """The compact JSON text of JSON data: no blanks, non-ASCII characters kept as they are, except lone
    surrogates (`sagepy.core.text.escape_surrogates`). `finite`: a NaN or an infinity raises ValueError
    instead of being written as Python writes it."""
    return escape_surrogates((_compact_finite if finite else _compact)(data))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text}")
    return value


def parse_json(text: str) -> Any:
    """Parse strict JSON text. Raises ValueError with a short reason (no Python exception names).

    Python's parser accepts `NaN` and `Infinity` and turns `1e400` into infinity; none of them is a JSON
    number, and a Sage value holding one could not be written back, so all are rejected.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(decode_reason(exc)) from None
    except RecursionError:
        raise ValueError("nesting too deep") from None


# Python 3.13 names a trailing comma where earlier versions say what they expected after it. sagepy keeps
# one text for every version: what was expected, at the closing bracket.
_TRAILING_COMMA = {
    "Illegal trailing comma before end of array": "Expecting value",
    "Illegal trailing comma before end of object": "Expecting property name enclosed in double quotes",
}


def decode_reason(exc: json.JSONDecodeError) -> str:
    """The reason for a JSON syntax error, the same on every Python version sagepy supports."""
    message, pos = exc.msg, exc.pos
    expected = _TRAILING_COMMA.get(message)
    if expected is not None:
        message = expected
        pos = exc.pos + 1  # 3.13 points at the comma; the others at what follows it
        while pos < len(exc.doc) and exc.doc[pos] in " \t\n\r":
            pos += 1
    line = exc.doc.count("\n", 0, pos) + 1
    column = pos - exc.doc.rfind("\n", 0, pos)
    return f"{message} at line {line} column {column}"
