"""What every part of the formatter shares: the source text (literals are printed exactly as written), its
comments (trivia, placed by position) and the two layouts of a sequence: a delimited list that breaks one
element per line when it does not fit, and a body of lines (statements, members, arms) that always breaks.

Documents are built in source order, so each comment is taken by the first place that reaches it: before the
element it precedes (own line), after the element whose line it ends (trailing), or before a closing bracket.
A comment with no such place inside an expression is written after that expression's line, never dropped.
"""
from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

from ..syntax.trivia import Comment
from .doc import BREAK, HARD, LINE, SOFT, Doc, group, if_break, indent, line_suffix

Pos = tuple  # (line, col)


class UnsafeFormat(Exception):
    """The formatted text would not mean the same program, or a construct has no layout (a formatter bug):
    nothing is written."""


def printer_of(printer: object, prefix: str, node: object) -> Callable:
    """The method that prints `node` (`e_Call`, `s_LetStmt`, `i_FnDecl`)."""
    method = getattr(printer, prefix + type(node).__name__, None)
    if method is None:
        raise UnsafeFormat(f"no layout for {type(node).__name__}")
    return method


class Element(NamedTuple):
    """One element of a sequence: where it starts and ends in the source, and how to build its document
    (lazily, so that the comments before it are taken first). `kind` serves the blank-line rules."""
    start: Pos | None
    end_line: int | None
    build: Callable[[], Doc]
    kind: str = ""


def start_of(span: tuple | None) -> Pos | None:
    return (span[0], span[1]) if span else None


def end_line_of(span: tuple | None) -> int | None:
    return span[2] if span else None


class Layout:
    def __init__(self, text: str, comments: list[Comment]) -> None:
        self.text = text
        self.comments = comments
        self.next_comment = 0
        self.line_starts = [0]
        self.line_starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
        lines = text.split("\n")
        self.blank = [False] + [not line.strip() for line in lines]   # 1-based

    # ---- source text

    def source(self, span: tuple) -> str:
        line, col, end_line, end_col = span
        return self.text[self.line_starts[line - 1] + col - 1:self.line_starts[end_line - 1] + end_col - 1]

    def blank_between(self, after_line: int | None, before_line: int) -> bool:
        """A blank line strictly between two source lines."""
        if after_line is None:
            return False
        return any(self.blank[n] for n in range(after_line + 1, before_line))

    # ---- comments

    def comment_before(self, pos: Pos | None) -> bool:
        """Whether a comment not yet placed starts before `pos`."""
        return (pos is not None and self.next_comment < len(self.comments)
                and self.comments[self.next_comment].pos < pos)

    def take_before(self, pos: Pos | None) -> list[Comment]:
        taken: list[Comment] = []
        while self.comment_before(pos):
            taken.append(self.comments[self.next_comment])
            self.next_comment += 1
        return taken

    def take_rest(self) -> list[Comment]:
        taken = self.comments[self.next_comment:]
        self.next_comment = len(self.comments)
        return taken

    def trailing(self, line: int | None, limit: Pos | None, any_line: bool = False) -> list:
        """The comments that follow code on source line `line` (any line with `any_line`) before `limit`, as
        line suffixes."""
        out: list = []
        comments = self.comments
        while (self.next_comment < len(comments) and not comments[self.next_comment].own_line
               and (any_line or (line is not None and comments[self.next_comment].line == line))
               and (limit is None or comments[self.next_comment].pos < limit)):
            comment = comments[self.next_comment]
            out.append(line_suffix(" " + comment.text))
            out.append(BREAK)
            self.next_comment += 1
            if comment.is_line_comment:   # it runs to the end of the line: what follows goes below
                break
        return out

    # ---- sequences

    def delimited(self, open_: str, elements: list[Element], close: str, end: Pos | None,
                  comma: bool = True, pad: bool = False) -> Doc:
        """`open_ a, b close` on one line when it fits (`pad`: with a space inside), else one element per line
        with a trailing comma when the grammar allows one (`comma`)."""
        parts: list = []
        for k, element in enumerate(elements):
            last = k == len(elements) - 1
            lead = self.take_before(element.start)
            parts.extend([c.text, HARD] for c in lead)
            parts.append(element.build())
            parts.append((if_break(",") if comma else "") if last else ",")
            parts.extend(self.trailing(element.end_line, end if last else elements[k + 1].start))
            if not last:
                parts.append(LINE)
        dangling = self.take_before(end)
        if not parts and not dangling:
            return open_ + close
        if dangling:
            parts.extend([HARD, c.text] for c in dangling)
        edge = LINE if pad else SOFT
        return group([open_, indent([edge, parts]), edge, close])

    def lines(self, elements: Iterable[Element], end: Pos | None,
              blank_rule: Callable[[str, str], bool | None] | None = None) -> list:
        """Elements one per line, each with the comments before and after it. Blank lines the author left are
        kept (runs collapsed to one), none before the first element; `blank_rule(previous kind, kind)` may
        force one (True) or forbid one (False) between two elements."""
        out: list = []
        prev_end: int | None = None
        prev_kind: str | None = None
        elements = list(elements)
        for k, element in enumerate(elements):
            forced = blank_rule(prev_kind, element.kind) if blank_rule and prev_kind is not None else None
            first = True
            for c in self.take_before(element.start):
                self._separate(out, prev_end, c.line, forced if first else None)
                out.append(c.text)
                prev_end = c.end_line
                first = False
            if element.start is not None:
                self._separate(out, prev_end, element.start[0], forced if first else None)
            elif out:
                out.append(HARD)
            out.append(element.build())
            limit = elements[k + 1].start if k + 1 < len(elements) else end
            out.extend(self.trailing(element.end_line, limit))
            prev_end = element.end_line if element.end_line is not None else prev_end
            prev_kind = element.kind
        for c in self.take_before(end):
            self._separate(out, prev_end, c.line, None)
            out.append(c.text)
            prev_end = c.end_line
        return out

    def _separate(self, out: list, prev_end: int | None, line: int, forced: bool | None) -> None:
        if not out:
            return
        out.append(HARD)
        if forced is True or (forced is None and self.blank_between(prev_end, line)):
            out.append(HARD)

    def braced(self, span: tuple | None, elements: list[Element], blank_rule=None) -> Doc:
        """`{`, the elements one per line indented, `}`; `{}` when there is nothing inside."""
        first = elements[0].start if elements else None
        end = (span[2], span[3] - 1) if span else None
        # a comment after code before the first element follows the `{` (the head above it may have been
        # broken over lines, so its source line says nothing)
        head = self.trailing(None, first or end, any_line=True) if span else []
        body = self.lines(elements, end, blank_rule)
        if not body:
            return ["{", head, HARD, "}"] if head else "{}"
        return ["{", head, indent([HARD, body]), HARD, "}"]
