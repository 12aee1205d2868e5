"""A small pretty-printing document algebra (Wadler's, as Prettier implements it) and its renderer.

A document is a `str` (text), a `list` (concatenation) or one of the tuples built below: a group is laid out
flat when it fits the rest of its line, else broken (its `LINE`s become newlines); `HARD` is always a newline
and breaks every group around it. Whether a group holds a hard break is computed once, when it is built.
Newlines are written without trailing spaces: indentation is written only before the next text, so a blank
line is empty.
"""
from __future__ import annotations

from typing import Union

Doc = Union[str, list, tuple]

WIDTH = 100
INDENT = "    "

LINE = ("line",)          # a space when flat, a newline when broken
SOFT = ("soft",)          # nothing when flat, a newline when broken
HARD = ("hard",)          # always a newline
BREAK = ("break",)        # no output; breaks the enclosing groups (a trailing line comment needs a newline)


def group(doc: Doc) -> tuple:
    return ("group", doc, has_hard(doc))


def indent(doc: Doc) -> tuple:
    return ("indent", doc)


def if_break(broken: Doc, flat: Doc = "") -> tuple:
    return ("ifbreak", broken, flat)


def line_suffix(text: str) -> tuple:
    """Text written at the end of the current line, before its newline (a trailing comment)."""
    return ("suffix", text)


def join(sep: Doc, docs: list) -> list:
    out: list = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return out


def has_hard(doc: Doc) -> bool:
    stack = [doc]
    while stack:
        d = stack.pop()
        if isinstance(d, str):
            continue
        if isinstance(d, list):
            stack.extend(d)
            continue
        tag = d[0]
        if tag in ("hard", "break"):
            return True
        if tag == "group":
            if d[2]:
                return True
        elif tag == "indent":
            stack.append(d[1])
        elif tag == "ifbreak":
            stack.append(d[1])
            stack.append(d[2])
    return False


_FLAT, _BROKEN = 0, 1


def _flat_width(group: tuple, memo: dict) -> tuple[int, bool]:
    """The width of a group laid out flat, and whether a newline (inside a multi-line string) ends the
    measure there. Computed once per group: nested groups reuse their own."""
    key = id(group)
    found = memo.get(key)
    if found is not None:
        return found
    width = 0
    result = None
    stack: list = [group[1]]
    while stack:
        d = stack.pop()
        if isinstance(d, str):
            newline = d.find("\n")
            if newline >= 0:
                result = (width + newline, True)
                break
            width += len(d)
        elif isinstance(d, list):
            stack.extend(reversed(d))
        else:
            tag = d[0]
            if tag == "line":
                width += 1
            elif tag == "group":
                inner, ended = _flat_width(d, memo)
                if ended:
                    result = (width + inner, True)
                    break
                width += inner
            elif tag == "indent":
                stack.append(d[1])
            elif tag == "ifbreak":
                stack.append(d[2])
    if result is None:
        result = (width, False)
    memo[key] = result
    return result


def _fits(group: tuple, rest: list, width: int, memo: dict) -> bool:
    """Whether `group` laid out flat, then what follows it up to the next possible newline, takes at most
    `width` columns."""
    flat, ended = _flat_width(group, memo)
    width -= flat
    if ended or width < 0:
        return width >= 0
    stack: list = []
    rest_index = len(rest)
    while width >= 0:
        if not stack:
            if rest_index == 0:
                return True
            rest_index -= 1
            _, mode, d = rest[rest_index]
            stack.append((mode, d))
            continue
        mode, d = stack.pop()
        if isinstance(d, str):
            newline = d.find("\n")
            if newline >= 0:
                return width - newline >= 0
            width -= len(d)
            continue
        if isinstance(d, list):
            stack.extend((mode, x) for x in reversed(d))
            continue
        tag = d[0]
        if tag in ("line", "soft"):
            if mode == _BROKEN:
                return True
            if tag == "line":
                width -= 1
        elif tag == "hard":
            return True
        elif tag == "group":
            if d[2]:
                return mode == _BROKEN
            if mode == _FLAT:
                inner, ended = _flat_width(d, memo)
                width -= inner
                if ended:
                    return width >= 0
            else:
                stack.append((mode, d[1]))
        elif tag == "indent":
            stack.append((mode, d[1]))
        elif tag == "ifbreak":
            stack.append((mode, d[1] if mode == _BROKEN else d[2]))
    return False


def render(doc: Doc) -> str:
    out: list[str] = []
    column = 0
    pending_indent: int | None = None   # a newline was written; its indentation waits for text
    suffixes: list[str] = []
    widths: dict = {}
    stack: list = [(0, _BROKEN, doc)]

    def newline(level: int) -> None:
        nonlocal column, pending_indent
        if suffixes:
            out.append("".join(suffixes))
            suffixes.clear()
        out.append("\n")
        pending_indent = level
        column = 0

    while stack:
        level, mode, d = stack.pop()
        if isinstance(d, str):
            if not d:
                continue
            if pending_indent is not None:
                out.append(INDENT * pending_indent)
                column = len(INDENT) * pending_indent
                pending_indent = None
            out.append(d)
            newline_at = d.rfind("\n")
            column = len(d) - newline_at - 1 if newline_at >= 0 else column + len(d)
            continue
        if isinstance(d, list):
            stack.extend((level, mode, x) for x in reversed(d))
            continue
        tag = d[0]
        if tag == "line":
            if mode == _BROKEN:
                newline(level)
            else:
                out.append(" ")
                column += 1
        elif tag == "soft":
            if mode == _BROKEN:
                newline(level)
        elif tag == "hard":
            newline(level)
        elif tag == "group":
            if d[2]:
                stack.append((level, _BROKEN, d[1]))
            else:
                start = column if pending_indent is None else len(INDENT) * pending_indent
                fits = _fits(d, stack, WIDTH - start, widths)
                stack.append((level, _FLAT if fits else _BROKEN, d[1]))
        elif tag == "indent":
            stack.append((level + 1, mode, d[1]))
        elif tag == "ifbreak":
            stack.append((level, mode, d[1] if mode == _BROKEN else d[2]))
        elif tag == "suffix":
            suffixes.append(d[1])
    if suffixes:
        out.append("".join(suffixes))
    return "".join(out)
