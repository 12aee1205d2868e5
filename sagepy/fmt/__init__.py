"""`sage fmt`'s formatter (SPEC §19.1): Sage source in one canonical layout.

`format_source(text, path) -> str` is the whole API. It parses with `sagepy.syntax` (the AST cache included),
prints the AST as a document (`doc.py`) with the file's comments placed by position (`layout.py`), and checks
the result before returning it: the output must parse to the same AST (spans aside) and hold the same comments,
in order, or `UnsafeFormat` is raised instead. A file with syntax errors raises `SyntaxErrors`.
"""
from __future__ import annotations

import gc

from ..diagnostics import Diagnostic
from ..syntax.cache import parse_file_cached
from ..syntax.trivia import scan_comments
from .doc import render
from .items import ItemPrinter
from .layout import UnsafeFormat
from .same import same_ast


class SyntaxErrors(Exception):
    """The source does not parse; nothing can be formatted."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(f"{len(diagnostics)} syntax error(s)")
        self.diagnostics = diagnostics


def format_source(text: str, path: str = "<stdin>") -> str:
    """`text` (the content of `path`, which names it in diagnostics) in canonical layout. Runs on a
    large-stack thread: the printer recurses as deep as the program nests (up to 1,000 levels)."""
    from ..deepstack import call_on_deep_stack
    return call_on_deep_stack(lambda: _format(text, path), "sage-fmt")


def _format(text: str, path: str) -> str:
    """The cyclic garbage collector is paused meanwhile, as during a parse (syntax/parser.py): the document
    and the two ASTs all stay alive until the end, so a collection would scan them and free nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _format_text(text, path)
    finally:
        if collecting:
            gc.enable()


def _format_text(text: str, path: str) -> str:
    items, diagnostics = parse_file_cached(path, text)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise SyntaxErrors(errors)
    comments = scan_comments(text)
    printer = ItemPrinter(text, comments)
    body = render(printer.program(items))
    formatted = body + "\n" if body else ""
    if formatted != text:
        _check(items, comments, formatted, path)
    return formatted


def _check(items: list, comments: list, formatted: str, path: str) -> None:
    new_items, new_diagnostics = parse_file_cached(path, formatted)
    if any(d.severity == "error" for d in new_diagnostics):
        raise UnsafeFormat(f"formatting would change {path}: the output does not parse")
    if not same_ast(items, new_items):
        raise UnsafeFormat(f"formatting would change {path}: the output parses to another program")
    if [c.text for c in comments] != [c.text for c in scan_comments(formatted)]:
        raise UnsafeFormat(f"formatting would change {path}: the comments differ")
