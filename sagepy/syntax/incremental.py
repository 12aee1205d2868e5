"""Incremental parsing for the language server: re-parse only the top-level items an edit changed.

A file is split, lexically, into chunks that each start an item at column 0: a chunk boundary is a line that
starts (outside any string or comment) with a letter, `_` or `#`, at bracket depth 0, after a previous chunk
whose last significant character is `}` or `;`. Each chunk is parsed on its own as a `program`, and its items
are kept (pickled) keyed by the chunk's text, so the next parse of the same file re-parses only the chunks
whose text changed; the kept items of the others are copied, and their lines moved if the chunk moved.

The result is always the full parse's. The grammar is LALR, hence unambiguous, and `program: item*`: when
every chunk parses without a diagnostic, the concatenation parses as those same items, and no token crosses a
boundary (a boundary is a line start outside strings and comments, found with the grammar's own terminal
patterns). A file with one chunk that has a syntax error gets that chunk's errors, parsed alone at its own
lines, when it can be shown they are the full parse's (`_with_one_broken_item`). Everything else falls back
to `parse_source` of the whole file: diagnostics in more than one chunk, lexical ones, an unbalanced bracket,
a `run` that is not the file's last item (E008 is a whole-file rule), a file that does not split. Doc
comments are attached afterwards over the whole text, as the full parse does.
"""
from __future__ import annotations

import gc
import pickle
import re
import threading

from . import ast as A
from .doc_comments import attach_doc_comments
from .lexical import skipped_token_scanner
from .parser import parse_source
from .recovery import ITEM_START

_MASKED = ("STRING", "LINE_COMMENT", "BLOCK_COMMENT")
_LINE_START = re.compile(r"^[A-Za-z_#]", re.M)
_NOT_NEWLINE = re.compile(r"[^\n]")


def split_items(text: str) -> list[tuple[str, int]] | None:
    """The chunks of `text` with the 1-based line each starts on, or None when the file has an invalid
    character (its diagnostics need the full parse) or unbalanced brackets outside strings and comments."""
    masked = _mask(text)
    if masked is None:
        return None
    chunks: list[tuple[str, int]] = []
    depth, start, start_line, line, scanned, last = 0, 0, 1, 1, 0, ""
    for match in _LINE_START.finditer(masked):
        pos = match.start()
        segment = masked[scanned:pos]
        depth += (segment.count("{") + segment.count("(") + segment.count("[")
                  - segment.count("}") - segment.count(")") - segment.count("]"))
        if depth < 0:
            return None
        line += segment.count("\n")
        significant = segment.rstrip()
        if significant:
            last = significant[-1]
        scanned = pos
        if depth == 0 and last in ("}", ";") and pos > start:
            chunks.append((text[start:pos], start_line))
            start, start_line, last = pos, line, ""
    tail = masked[scanned:]
    depth += tail.count("{") + tail.count("(") + tail.count("[") - tail.count("}") - tail.count(")") - tail.count("]")
    if depth != 0:
        return None
    chunks.append((text[start:], start_line))
    return chunks


def _mask(text: str) -> str | None:
    """`text` with every string and comment blanked (newlines kept, so lines and offsets stay); None when it
    holds an invalid character."""
    pieces: list[str] = []
    done = 0
    for match in skipped_token_scanner().finditer(text):
        kind = match.lastgroup
        if kind == "BAD_CHAR":
            return None
        if kind not in _MASKED:
            continue
        value = match.group()
        pieces.append(text[done:match.start()])
        pieces.append(_NOT_NEWLINE.sub(" ", value) if "\n" in value else " " * len(value))
        done = match.end()
    pieces.append(text[done:])
    return "".join(pieces)


class IncrementalParser:
    """Parses files for an editor session, keeping each file's chunks of its last parse. Thread-safe: a parse
    runs outside the lock, only the table of kept chunks is shared."""

    def __init__(self) -> None:
        # path -> chunk text -> (the line it started on, its items pickled with their spans there): typing
        # inside a line moves no other item, so their spans need no change
        self.kept: dict[str, dict[str, tuple[int, bytes]]] = {}
        self.lock = threading.Lock()

    def parse(self, text: str, path: str) -> tuple[list, list]:
        """(items, diagnostics), exactly as `parse_source(text, path)` returns them; fresh objects on each
        call (the checker annotates the AST it is given). The cyclic garbage collector is paused meanwhile, as
        in `parse_source`: unpickling allocates an AST that all stays alive, and collections during it would
        scan the editor's whole heap (the analyses it keeps) for nothing."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._parse(text, path)
        finally:
            if collecting:
                gc.enable()

    def _parse(self, text: str, path: str) -> tuple[list, list]:
        chunks = split_items(text)
        if chunks is None:
            return parse_source(text, path)
        with self.lock:
            old = self.kept.get(path, {})
        new: dict[str, tuple[int, bytes]] = {}
        items: list = []
        broken: int | None = None   # the one chunk that does not parse cleanly
        for index, (chunk, line) in enumerate(chunks):
            kept = new.get(chunk) or old.get(chunk)
            if kept is None:
                parsed, diagnostics = parse_source(chunk, path)
                if diagnostics:
                    if broken is not None:
                        return parse_source(text, path)
                    broken = index
                    continue
                if line > 1:
                    shift_lines(parsed, line - 1)
                pickled = _pickled(parsed)
                kept = (line, pickled) if pickled is not None else None
            elif broken is None:
                parsed = pickle.loads(kept[1])
                if line != kept[0]:
                    shift_lines(parsed, line - kept[0])
            if kept is not None:
                new[chunk] = kept
            if broken is None:
                items.extend(parsed)
        with self.lock:
            self.kept[path] = new
        if broken is not None:
            return _with_one_broken_item(text, path, chunks, broken)
        runs = [i for i in items if isinstance(i, A.RunDecl)]
        if runs and (len(runs) > 1 or runs[0] is not items[-1]):
            return parse_source(text, path)
        attach_doc_comments(items, text)
        return items, []

    def forget(self, path: str) -> None:
        with self.lock:
            self.kept.pop(path, None)


def _with_one_broken_item(text: str, path: str, chunks: list[tuple[str, int]], index: int) -> tuple[list, list]:
    """The full parse's result for a file whose chunks all parse cleanly but one, which has a syntax error,
    from a parse of that chunk alone at its lines: the chunks before it are whole items (Lark reaches the chunk
    in the state it starts a file in), and after the error recovery resumes at an item start and parses the
    rest, which the clean chunks after it complete without a further error. That holds unless the chunk's
    error is at its end (E006: in the file, the next chunk follows instead) or at its first token (the message
    may name the token before it), or the chunk after does not start the way recovery resumes; then, and when
    the chunk's trouble is no syntax error (the full parse keeps the items), the file is parsed whole."""
    chunk, line = chunks[index]
    items, diagnostics = parse_source("\n" * (line - 1) + chunk, path)
    after = chunks[index + 1][0] if index + 1 < len(chunks) else None
    if items or any(d.code == "E006" or (d.span is not None and d.span[:2] == (line, 1)) for d in diagnostics) \
            or (after is not None and ITEM_START.match(after) is None):
        return parse_source(text, path)
    return [], diagnostics


def _pickled(items: list) -> bytes | None:
    """The items pickled, or None for an AST nested too deep for pickle's recursion (not kept: re-parsed)."""
    try:
        return pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return None


def shift_lines(items: list, by: int) -> None:
    """Move every span in `items` (a parser-fresh AST: annotation slots still empty but an agent's `attrs`)
    `by` lines down (up if negative): the spans of nodes, and those the parser keeps beside names in tuples (record-literal fields,
    `use` names). Each node once, and without recursion (an AST may nest 1,000 levels)."""
    seen: set[int] = set()
    stack: list = list(items)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        span = node.span
        if span is not None:
            node.span = (span[0] + by, span[1], span[2] + by, span[3])
        for name in node._fields:
            value = getattr(node, name)
            if isinstance(value, A.Node):
                stack.append(value)
            elif type(value) is list:
                _shift_list(value, by, stack)
            elif type(value) is tuple:
                object.__setattr__(node, name, _shifted_tuple(value, by, stack))
        if type(node) is A.AgentDecl and node.attrs:
            stack.extend(node.attrs)


def _shift_list(values: list, by: int, stack: list) -> None:
    for i, value in enumerate(values):
        if isinstance(value, A.Node):
            stack.append(value)
        elif type(value) is tuple:
            values[i] = _shifted_tuple(value, by, stack)
        elif type(value) is list:
            _shift_list(value, by, stack)


def _shifted_tuple(values: tuple, by: int, stack: list) -> tuple:
    """A span (four ints) moved, or a tuple of names, nodes and spans with its spans moved."""
    if len(values) == 4 and all(type(v) is int for v in values):
        return (values[0] + by, values[1], values[2] + by, values[3])
    out = []
    for value in values:
        if isinstance(value, A.Node):
            stack.append(value)
        elif type(value) is tuple:
            value = _shifted_tuple(value, by, stack)
        elif type(value) is list:
            _shift_list(value, by, stack)
        out.append(value)
    return tuple(out)
