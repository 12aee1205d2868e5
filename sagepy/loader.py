"""Loading a program: the entry file and every module it declares with `mod` (SPEC §3.1).

Files are parsed through the AST cache; `mod m;` loads `m.sg` or `m/mod.sg` beside the declaring file.
Every parse error of every file is collected before anything is compiled. Files are read through a `Sources`
(the disk by default; the language server's holds the unsaved text of open documents).
"""
from __future__ import annotations

import os

from .diagnostics import Diagnostic, InvalidUtf8, decode_utf8, remember_source
from .syntax import ast as A
from .syntax.cache import FROM_ENVIRONMENT, parse_file_cached


class Program:
    def __init__(self, root: A.Module, modules: list, diagnostics: list[Diagnostic]) -> None:
        self.root = root
        self.modules = modules
        self.diagnostics = diagnostics


def read_source(path: str) -> tuple[str, Diagnostic | None]:
    """The text of a source file, or "" and an E001 at the first byte that is not UTF-8 (SPEC §2)."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = decode_utf8(data)
    except InvalidUtf8 as exc:
        remember_source(path, data.decode("utf-8", errors="replace"))
        return "", Diagnostic("E001", f"{exc.reason} (source files must be UTF-8)", path, exc.span)
    remember_source(path, text)
    return text, None


class Sources:
    """Where a program's files come from: the disk, parsed through the AST cache under `cache_dir`."""

    def __init__(self, cache_dir: str | None = FROM_ENVIRONMENT) -> None:
        self.cache_dir = cache_dir

    def exists(self, path: str) -> bool:
        return os.path.isfile(path)

    def read(self, path: str) -> tuple[str, Diagnostic | None]:
        return read_source(path)

    def parse(self, path: str, text: str) -> tuple[list, list[Diagnostic]]:
        return parse_file_cached(path, text, self.cache_dir)


def load_module_file(path: str, name: str, parent: A.Module | None, diags: list[Diagnostic],
                     modules: list, sources: Sources) -> A.Module:
    text, not_utf8 = sources.read(path)
    if not_utf8 is not None:
        diags.append(not_utf8)
        items: list = []
    else:
        items, errors = sources.parse(path, text)
        diags.extend(errors)
    module = A.Module(path, items, text)
    module.name = name
    module.parent = parent
    module.children = {}
    modules.append(module)
    for item in items:
        if isinstance(item, A.ModDecl):
            child_path = find_module_file(os.path.dirname(path), item.name, sources)
            if child_path is None:
                diags.append(Diagnostic("E042", f"module file not found: `{item.name}` (looked for {item.name}.sg "
                                        f"and {item.name}/mod.sg beside {os.path.basename(path)})", path, item.span))
                continue
            if any(os.path.realpath(m.path) == os.path.realpath(child_path) for m in modules):
                diags.append(Diagnostic("E042", f"module `{item.name}` is loaded twice", path, item.span))
                continue
            child = load_module_file(child_path, item.name, module, diags, modules, sources)
            module.children[item.name] = child
            item.module = child
    return module


def find_module_file(directory: str, name: str, sources: Sources | None = None) -> str | None:
    exists = sources.exists if sources is not None else os.path.isfile
    for candidate in (os.path.join(directory, f"{name}.sg"), os.path.join(directory, name, "mod.sg")):
        if exists(candidate):
            return candidate
    return None


def load_program(entry_path: str, cache_dir: str | None = FROM_ENVIRONMENT, sources: Sources | None = None) -> Program:
    """Load the entry file and its modules, with parsed ASTs cached under `cache_dir` (None: no cache;
    by default the directory the environment names, for callers outside a session), or read through
    `sources` when given.
    A test file `X_test.sg` (or an eval file `X_eval.sg`) is loaded with its sibling `X.sg`: the sibling (and
    its module tree) comes first, and the test file sees all of its items (SPEC §3.8)."""
    diags: list[Diagnostic] = []
    modules: list = []
    sibling = None
    if sources is None:
        sources = Sources(cache_dir)
    if entry_path.endswith(("_test.sg", "_eval.sg")):
        sibling_path = entry_path[: -len("_test.sg")] + ".sg"
        if sources.exists(sibling_path):
            sibling = load_module_file(sibling_path, "", None, diags, modules, sources)
    root = load_module_file(entry_path, "", None, diags, modules, sources)
    root.sibling = sibling
    if sibling is not None:
        root.children.update(sibling.children)
    return Program(root, modules, diags)


def reexports(module: A.Module, name: str) -> bool:
    """Whether a module re-exports `name` with a `pub use` (SPEC §3.1)."""
    for item in module.items:
        if isinstance(item, A.UseDecl) and item.pub:
            if item.kind == "glob":
                return True
            if item.kind == "leaf" and (item.alias or item.path[-1]) == name:
                return True
            if item.kind == "group" and any((alias or n) == name for n, alias in item.names):
                return True
    return False
