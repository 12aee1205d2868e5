"""Comments as trivia (SPEC §1.1, §19.1): what the grammar skips like whitespace, kept for `sage fmt`.

The grammar ignores `//` and `/* */` comments, so the AST holds none; this scan finds them with the grammar's
own terminal patterns, STRING first (a `//` inside a string is not a comment), read from grammar/sage.lark
rather than from the built parser, so that a file whose AST comes from the cache still needs no Lark. Each
comment carries its position, so that a client can attach it to the node it precedes or follows. Parsing and
the AST cache are untouched: only a caller that wants the trivia pays for the scan.
"""
from __future__ import annotations

import functools
import re

from .. import resources

_SCANNED = ("STRING", "LINE_COMMENT", "BLOCK_COMMENT")


class Comment:
    """One comment: its exact text, its start (line, col) and end line (1-based, code points), and whether
    it is the first thing on its line (an own-line comment) or follows code (a trailing one)."""

    __slots__ = ("text", "line", "col", "end_line", "own_line")

    def __init__(self, text: str, line: int, col: int, end_line: int, own_line: bool) -> None:
        self.text = text
        self.line = line
        self.col = col
        self.end_line = end_line
        self.own_line = own_line

    @property
    def pos(self) -> tuple[int, int]:
        return (self.line, self.col)

    @property
    def is_line_comment(self) -> bool:
        return self.text.startswith("//")

    def __repr__(self) -> str:
        return f"Comment({self.text!r} at {self.line}:{self.col})"


def scan_comments(text: str) -> list[Comment]:
    """Every comment of `text`, in order."""
    found: list[Comment] = []
    if "/" not in text:
        return found
    line, line_start, scanned = 1, 0, 0
    for match in _scanner().finditer(text):
        kind = match.lastgroup
        if kind not in ("LINE_COMMENT", "BLOCK_COMMENT"):
            continue
        pos = match.start()
        line += text.count("\n", scanned, pos)
        scanned = pos
        line_start = text.rfind("\n", 0, pos) + 1
        value = match.group()
        own_line = text[line_start:pos].strip() == ""
        found.append(Comment(value, line, pos - line_start + 1, line + value.count("\n"), own_line))
    return found


@functools.lru_cache(maxsize=None)
def _scanner() -> re.Pattern:
    """STRING, LINE_COMMENT and BLOCK_COMMENT as the grammar writes them (`NAME: /regex/ | /regex/`)."""
    grammar = resources.grammar_file().read_text(encoding="utf-8")
    groups = []
    for name in _SCANNED:
        definition = re.search(rf"^{name}(?:\.\d+)?:\s*(.+)$", grammar, re.M).group(1)
        alternatives = re.findall(r"/((?:[^/\\]|\\.)*)/", definition)
        groups.append(f"(?P<{name}>(?:{'|'.join(alternatives)}))")
    return re.compile("|".join(groups))
