"""The parsed-AST cache (SPEC §0.1).

Like Python's bytecode cache: the AST of every source file is pickled under the user cache directory, keyed by
the file's resolved path, a hash of its content, a hash of the grammar and of the sagepy source files that
shape a parse, and the Python version. A run of an unchanged program then never imports the parser (nor Lark).
An unreadable entry is ignored and rewritten, never an error.

The prelude's own files (stdlib/*.sg) belong to the installation, not to a program: their ASTs are kept beside
the package, like the serialised parser (`grammar.py`) and bytecode, so that an empty user cache costs a
program's first run the parse of its own files only. `SAGE_NO_CACHE` turns that cache off too.

This module is on every run's path, so it imports little: blake2b from the builtin `_blake2` (hashlib would
load OpenSSL first) and the C pickler without `pickle.py`.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from .cache_dir import cache_root

try:
    from _blake2 import blake2b
except ImportError:   # a Python built without its own blake2
    from hashlib import blake2b
try:
    from _pickle import dump, load as _unpickle
except ImportError:   # a Python without the C pickler
    from pickle import dump, load as _unpickle

_PROTOCOL = 5
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a parse result is made of and made by: the grammar (added below), the syntax package (the parser and
# the AST classes), the Diagnostic class, the core types the parser reads, where the grammar is found, and
# the package version. No other sagepy module is imported by the parser (tests/syntax/test_ast_cache.py).
_SHAPING_FILES = ("__init__.py", "diagnostics.py", "resources.py", "version.py")
_SHAPING_DIRS = ("syntax", "core")
_TOOL_HASH: str | None = None
# `parse_file_cached` without a session's cache directory (the prelude, shared by every session of the
# process) asks the environment now, by the same rule (cache_dir.cache_root).
FROM_ENVIRONMENT = "<environment>"


def shaping_files() -> list[str]:
    """The files whose change invalidates every cached AST, beside the grammar."""
    paths = [os.path.join(_PACKAGE, name) for name in _SHAPING_FILES]
    for directory in _SHAPING_DIRS:
        with os.scandir(os.path.join(_PACKAGE, directory)) as entries:
            paths.extend(sorted(e.path for e in entries if e.name.endswith(".py")))
    return paths


def _tool_hash() -> str:
    """Hash of the grammar and of the sagepy sources that shape a parse: a new sagepy never reads an old AST."""
    global _TOOL_HASH
    if _TOOL_HASH is None:
        from .. import resources
        h = blake2b(sys.version.encode(), digest_size=16)
        for p in [str(resources.grammar_file()), *shaping_files()]:
            try:
                st = os.stat(p)
            except OSError:
                continue
            # size and mtime stand in for content: hashing every source file would cost more than parsing
            h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}\0".encode())
        _TOOL_HASH = h.hexdigest()
    return _TOOL_HASH


def _entry_path(root: str, source_path: str, text: str) -> str:
    key = blake2b(digest_size=16)
    key.update(os.path.realpath(source_path).encode())
    key.update(b"\0")
    key.update(text.encode("utf-8", "surrogatepass"))
    key.update(_tool_hash().encode())
    return os.path.join(root, "ast", key.hexdigest() + ".pickle")


def load(source_path: str, text: str, root: str | None) -> Any:
    """What is cached for this file and text (a parse's (items, diagnostics)), or None."""
    if root is None:
        return None
    try:
        with open(_entry_path(root, source_path, text), "rb") as fh:
            return _unpickle(fh)
    except Exception:  # a missing, truncated or stale entry is simply rebuilt
        return None


def store(source_path: str, text: str, value: Any, root: str | None) -> None:
    if root is None:
        return
    target = _entry_path(root, source_path, text)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "wb") as fh:
            dump(value, fh, protocol=_PROTOCOL)
        os.replace(tmp, target)
    except Exception:  # the cache is an optimisation: failing to write it must never fail a run
        try:
            os.unlink(tmp)
        except OSError:
            pass


_PRELUDE_ROOT: tuple[str, str | None] | None = None


def _installation_root(source_path: str, root: str | None) -> str | None:
    """Where the AST of `source_path` is cached: beside the package for a prelude file (when that directory is
    writable; looked up once per process), else `root`."""
    global _PRELUDE_ROOT
    if root is None:   # SAGE_NO_CACHE, or a caller without a cache
        return None
    if _PRELUDE_ROOT is None:
        from ..resources import stdlib_dir
        beside: str | None = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
        try:
            os.makedirs(beside, exist_ok=True)
        except OSError:
            beside = None
        _PRELUDE_ROOT = (str(stdlib_dir()), beside if beside is not None and os.access(beside, os.W_OK) else None)
    prelude_dir, beside = _PRELUDE_ROOT
    if beside is None or os.path.dirname(os.path.abspath(source_path)) != prelude_dir:
        return root
    return beside


def cache_entry(source_path: str, cache_dir: str | None = FROM_ENVIRONMENT) -> tuple[str, str | None]:
    """(source_path, root) for `load` and `store` of what is made from `source_path`: the root is beside the
    package for a prelude file, else `cache_dir` (None: no cache)."""
    return source_path, _installation_root(source_path, cache_root() if cache_dir is FROM_ENVIRONMENT else cache_dir)


def parse_file_cached(source_path: str, text: str, cache_dir: str | None = FROM_ENVIRONMENT) -> tuple[list, list]:
    """(items, diagnostics) for a file, from the cache under `cache_dir` when possible (None: no cache). The
    parser is imported only on a miss."""
    _, root = cache_entry(source_path, cache_dir)
    cached = load(source_path, text, root)
    if cached is not None:
        return cached
    from .parser import parse_source
    result = parse_source(text, source_path)
    store(source_path, text, result, root)
    return result
