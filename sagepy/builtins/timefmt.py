"""Timestamp builtins (SPEC §6.1): Unix milliseconds <-> text with strftime/strptime formats, in UTC.

`datetime` is imported on first use only: most programs never format a date, and start-up time matters.
Python's strptime does not know the C99 shorthands (`%F`, `%T`, `%D`, `%R`) and strftime passes them to the
platform's C library, so both functions expand them first.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.errors import agent_error, invalid_argument

_SHORTHANDS = {"F": "%Y-%m-%d", "T": "%H:%M:%S", "D": "%m/%d/%y", "R": "%H:%M"}


def _expand(fmt: str) -> str:
    out = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            directive = fmt[i + 1]
            out.append(_SHORTHANDS.get(directive, "%" + directive))
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)


def format_timestamp(ms: int, fmt: str) -> str:
    from datetime import datetime, timedelta, timezone

    try:
        moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    except OverflowError:
        raise invalid_argument("format_timestamp", f"timestamp out of range: {ms}") from None
    try:
        return moment.strftime(_expand(fmt))
    except ValueError as exc:
        # glibc and macOS print unknown directives as they are; other C libraries (Windows) reject them.
        raise invalid_argument("format_timestamp", str(exc)) from None


def parse_timestamp(text: str, fmt: str) -> int:
    from datetime import datetime, timezone

    try:
        moment = datetime.strptime(text, _expand(fmt))
    except ValueError:
        raise agent_error(f"invalid timestamp '{text}' for format '{fmt}'") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


BUILTINS: dict[str, Callable[..., Any]] = {
    "format_timestamp": format_timestamp,
    "parse_timestamp": parse_timestamp,
}

CONSTANTS: dict[str, Any] = {
    "MS_PER_SECOND": 1000,
    "MS_PER_MINUTE": 60_000,
    "MS_PER_HOUR": 3_600_000,
    "MS_PER_DAY": 86_400_000,
}
