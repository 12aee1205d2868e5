"""The Lark parser of grammar/sage.lark, built once per process.

Building it from the grammar costs about a second, so Lark's serialised form is cached on disk, keyed by a hash
of the grammar text: beside the package like bytecode (`__pycache__`), else in the user cache directory. The
parser is LALR with the contextual lexer (SPEC §0.1) and has two start symbols: `program` for a file and `expr`
for the interpolations of a string template. It carries no callbacks, so one instance serves every parse.
"""
from __future__ import annotations

import functools
import hashlib
import os
from typing import Any

from lark import Lark

from .. import resources
from .cache_dir import cache_root


@functools.lru_cache(maxsize=None)
def lark_parser() -> Lark:
    text = resources.grammar_file().read_text(encoding="utf-8")
    cache_dir = _serialised_parser_dir()
    cache_file: Any = False
    if cache_dir is not None:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        cache_file = os.path.join(cache_dir, f"grammar-{digest}.lark-cache")
    return Lark(text, parser="lalr", lexer="contextual", start=["program", "expr"],
                propagate_positions=True, maybe_placeholders=True, cache=cache_file)


def _serialised_parser_dir() -> str | None:
    """Beside the package first, so that an empty AST cache does not also mean rebuilding the parser."""
    candidates = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__"), cache_root()]
    for directory in candidates:
        if directory is None:
            continue
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return directory
    return None


@functools.lru_cache(maxsize=None)
def terminal_patterns() -> dict[str, str]:
    """The text of every terminal that is a fixed string (`LBRACE` -> `{`), to name expected tokens in messages."""
    return {t.name: t.pattern.value for t in lark_parser().terminals if t.pattern.type == "str"}
