"""The Lark parser of grammar/sage.lark, built once per process.

Building it from the grammar costs about a second, and even loading Lark's own serialised form costs a cold
run more than all the rest of its work, so the built parser object itself is pickled on disk (loading it is
a few times faster), keyed by a hash of the grammar text and of the Lark and Python versions: beside the
package like bytecode (`__pycache__`), else in the user cache directory. The parser is LALR with the contextual
lexer (SPEC §0.1) and has two start symbols: `program` for a file and `expr` for the interpolations of a string
template. It carries no callbacks, so one instance serves every parse.
"""
from __future__ import annotations

import copyreg
import functools
import hashlib
import importlib
import os
import pickle
import sys
import types

import lark
from lark import Lark
from lark.parsers import lalr_analysis

from .. import resources
from .cache_dir import cache_root


@functools.lru_cache(maxsize=None)
def lark_parser() -> Lark:
    text = resources.grammar_file().read_text(encoding="utf-8")
    cache_dir = _serialised_parser_dir()
    if cache_dir is None:
        return _build(text)
    digest = hashlib.sha256("\0".join((text, lark.__version__, sys.version)).encode()).hexdigest()[:16]
    cache_file = os.path.join(cache_dir, f"grammar-{digest}.parser.pickle")
    try:
        with open(cache_file, "rb") as fh:
            return pickle.load(fh)
    except Exception:   # missing, truncated or unreadable: built again and rewritten, never an error
        pass
    parser = _build(text)
    tmp = f"{cache_file}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            _ParserPickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(parser)
        os.replace(tmp, cache_file)
    except Exception:   # a parser that cannot be saved is still a parser
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return parser


def _build(text: str) -> Lark:
    return Lark(text, parser="lalr", lexer="contextual", start=["program", "expr"],
                propagate_positions=True, maybe_placeholders=True)


class _ParserPickler(pickle.Pickler):
    """Pickles a built Lark object: the `re` module its lexers hold is saved by name, and the parse table's
    Shift and Reduce actions, which Lark compares by identity, as references to Lark's own instances."""
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[types.ModuleType] = lambda module: (importlib.import_module, (module.__name__,))
    dispatch_table[lalr_analysis.Action] = lambda action: (getattr, (lalr_analysis, action.name))


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
