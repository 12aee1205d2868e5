"""String builtins (SPEC §6.2).

Python `str` indexes code points, which is exactly what Sage indices count, so slicing needs no decoding;
only negative indices need care, because Python would count them from the end where Sage clamps to 0.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.values import NONE, some
from .sizes import building, check_size

# Unicode White_Space. Python's default `str.strip()` also strips U+001C..U+001F, which are not white space,
# so trimming uses this explicit set (it is also what `parse_int` and friends trim).
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _clamp_index(i: int, length: int) -> int:
    return 0 if i < 0 else (length if i > length else i)


def str_len(s: str) -> int:
    return len(s)


def chars(s: str) -> list:
    return list(s)


def split(s: str, sep: str) -> list:
    if sep == "":
        return list(s)
    return s.split(sep)


def lines(s: str) -> list:
    if s == "":
        return []
    parts = s.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def join(parts: list, sep: str) -> str:
    return sep.join(parts)


def str_repeat(s: str, n: int) -> str:
    if n <= 0 or s == "":
        return ""
    check_size("str_repeat", len(s) * n, "characters")
    with building("str_repeat"):
        return s * n


def trim(s: str) -> str:
    return s.strip(WHITESPACE)


def trim_start(s: str) -> str:
    return s.lstrip(WHITESPACE)


def trim_end(s: str) -> str:
    return s.rstrip(WHITESPACE)


def to_upper(s: str) -> str:
    return s.upper()


def to_lower(s: str) -> str:
    return s.lower()


def starts_with(s: str, prefix: str) -> bool:
    return s.startswith(prefix)


def ends_with(s: str, suffix: str) -> bool:
    return s.endswith(suffix)


def str_contains(s: str, sub: str) -> bool:
    return sub in s


def str_index_of(s: str, sub: str) -> Any:
    i = s.find(sub)
    return NONE if i < 0 else some(i)


def replace(s: str, old: str, new: str) -> str:
    # An empty `old` matches between every two characters, so the result can grow as a product of sizes.
    if len(new) > len(old):
        check_size("replace", len(s) + s.count(old) * (len(new) - len(old)), "characters")
    with building("replace"):
        return s.replace(old, new)


def replace_first(s: str, old: str, new: str) -> str:
    return s.replace(old, new, 1)


def str_slice(s: str, begin: int, end: int) -> str:
    n = len(s)
    begin, end = _clamp_index(begin, n), _clamp_index(end, n)
    return s[begin:end] if begin < end else ""


def _padding(builtin: str, s: str, width: int, pad: str) -> str:
    missing = width - len(s)
    if missing <= 0 or pad == "":
        return ""
    check_size(builtin, width, "characters")
    with building(builtin):
        return (pad * (missing // len(pad) + 1))[:missing]


def str_pad_start(s: str, width: int, pad: str) -> str:
    return _padding("str_pad_start", s, width, pad) + s


def str_pad_end(s: str, width: int, pad: str) -> str:
    return s + _padding("str_pad_end", s, width, pad)


def str_truncate(s: str, n: int) -> str:
    # A negative limit behaves as 0; a limit below 3 leaves room for the ellipsis only.
    n = max(n, 0)
    if len(s) <= n:
        return s
    return s[: max(n - 3, 0)] + "..."


def chr_(code: int) -> str:
    if 0 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
        return chr(code)
    return "\ufffd"


BUILTINS: dict[str, Callable[..., Any]] = {
    "str_len": str_len,
    "chars": chars,
    "split": split,
    "lines": lines,
    "join": join,
    "str_repeat": str_repeat,
    "trim": trim,
    "trim_start": trim_start,
    "trim_end": trim_end,
    "to_upper": to_upper,
    "to_lower": to_lower,
    "starts_with": starts_with,
    "ends_with": ends_with,
    "str_contains": str_contains,
    "str_index_of": str_index_of,
    "replace": replace,
    "replace_first": replace_first,
    "str_slice": str_slice,
    "str_pad_start": str_pad_start,
    "str_pad_end": str_pad_end,
    "str_truncate": str_truncate,
    "chr": chr_,
}
