"""The parsed-AST cache (SPEC §0.1).

Like Python's bytecode cache: the AST of every source file is pickled under the user cache directory, keyed by
the file's resolved path, a hash of its content, a hash of the grammar and of sagepy's own source files, and the
Python version. A run of an unchanged program then never imports the parser (nor Lark). An unreadable entry is
ignored and rewritten, never an error.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path

from .cache_dir import cache_root

_TOOL_HASH: str | None = None
# `parse_file_cached` without a session's cache directory (the prelude, shared by every session of the
# process) asks the environment now, by the same rule (cache_dir.cache_root).
FROM_ENVIRONMENT = "<environment>"


def _tool_hash() -> str:
    """Hash of the grammar and of sagepy's source files: a new sagepy never reads an old AST."""
    global _TOOL_HASH
    if _TOOL_HASH is None:
        from .. import resources
        package = Path(__file__).resolve().parent.parent
        h = hashlib.sha256(sys.version.encode())
        paths = [resources.grammar_file()] + sorted(package.rglob("*.py"))
        for p in paths:
            try:
                st = p.stat()
            except OSError:
                continue
            # size and mtime stand in for content: hashing every source file would cost more than parsing
            h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
        _TOOL_HASH = h.hexdigest()[:20]
    return _TOOL_HASH


def _entry_path(root: str, source_path: str, text: str) -> str:
    key = hashlib.sha256()
    key.update(os.path.realpath(source_path).encode())
    key.update(b"\0")
    key.update(text.encode("utf-8", "surrogatepass"))
    key.update(_tool_hash().encode())
    return os.path.join(root, "ast", key.hexdigest()[:32] + ".pickle")


def load(source_path: str, text: str, root: str | None) -> tuple[list, list] | None:
    """The cached (items, diagnostics) of this file, or None."""
    if root is None:
        return None
    try:
        with open(_entry_path(root, source_path, text), "rb") as fh:
            return pickle.load(fh)
    except Exception:  # a missing, truncated or stale entry is simply rebuilt
        return None


def store(source_path: str, text: str, value: tuple[list, list], root: str | None) -> None:
    if root is None:
        return
    target = _entry_path(root, source_path, text)
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
    except Exception:  # the cache is an optimisation: failing to write it must never fail a run
        try:
            os.unlink(tmp)
        except OSError:
            pass


def parse_file_cached(source_path: str, text: str, cache_dir: str | None = FROM_ENVIRONMENT) -> tuple[list, list]:
    """(items, diagnostics) for a file, from the cache under `cache_dir` when possible (None: no cache). The
    parser is imported only on a miss."""
    root = cache_root() if cache_dir is FROM_ENVIRONMENT else cache_dir
    cached = load(source_path, text, root)
    if cached is not None:
        return cached
    from .parser import parse_source
    result = parse_source(text, source_path)
    store(source_path, text, result, root)
    return result
