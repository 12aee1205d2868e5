"""Strings that are not valid Unicode (docs/durable.md, "Strings that are not valid Unicode"): one rule for every place sagepy writes a string out.

A Sage string may hold a lone UTF-16 surrogate: from a `\\ud83d` escape in JSON (a model's answer, a tool's
result, `json_decode`) or from bytes that are not UTF-8 in the environment, the program's arguments or stdin
(read as Python reads them, one U+DC80–U+DCFF code point per byte). It is kept as it is while the run goes on.
No encoding can write one, so where sagepy writes a string out:

- as JSON (the journal, stored fields and arguments, trace events, `--format json`): the surrogate is its
  `\\uXXXX` escape, which parses back to the same string;
- as text (printed lines, stored output lines, files): each one is U+FFFD.
"""
from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(json_text: str) -> str:
    """JSON text with each lone surrogate written as its `\\uXXXX` escape: valid UTF-8 that every store and
    file takes, and that parses back to the same string. (Outside a string literal JSON text holds no such
    code point, so replacing each one where it stands keeps the text valid.)"""
    if _LONE_SURROGATE.search(json_text) is None:
        return json_text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def printable_text(text: str) -> str:
    """Text to be written as text (a printed line, a stored output line, a file): each lone surrogate shown as
    U+FFFD, since no encoding can write it."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)



def storable_line(line: str) -> str:
    """A printed line as the store keeps it (`sage runs logs`): as printed, and NUL, which PostgreSQL's text
    cannot hold, as U+FFFD on every backend alike."""
    return printable_text(line).replace("\0", "\ufffd")
