"""The prelude as the checker sees it: signatures read from `stdlib/*.sg` (SPEC §6, §7).

`extern fn` declarations give the builtins' types (generic ones included) and whether they are `fails`;
`const`s, records and `tool` blocks give the prelude constants, records and built-in tools. The files are read
once per process, and the `Prelude` made from them is kept in the AST cache as one entry (keyed by the files'
text and by the modules that make it), so that a run reads one pickle rather than parsing or loading every file's
AST and typing its declarations again. The checker intrinsics, which no single signature describes, are typed
by rules in `intrinsics.py`.
"""
from __future__ import annotations

import os
from typing import Any

from ..core import types as T
from ..resources import stdlib_dir
from ..syntax import ast as A
from .symbols import FnSig, ToolInfo, remote_name


class Prelude:
    def __init__(self) -> None:
        self.fns: dict[str, FnSig] = {}
        self.consts: dict[str, T.Type] = {}
        self.records: dict[str, T.RecordInfo] = {}
        self.tools: dict[str, ToolInfo] = {}


_PRELUDE: Prelude | None = None


def load_prelude() -> Prelude:
    global _PRELUDE
    if _PRELUDE is None:
        _PRELUDE = _read_stdlib()
    return _PRELUDE


# The modules whose change makes a kept Prelude stale, beside those that shape a parse (syntax.cache).
_MAKERS = ("prelude.py", "symbols.py")


def _read_stdlib() -> Prelude:
    from ..syntax.cache import FROM_ENVIRONMENT, cache_entry, load, store
    directory = stdlib_dir()
    texts = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".sg"):
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as fh:
                texts.append((path, fh.read()))
    here = os.path.dirname(os.path.abspath(__file__))
    makers = "".join(f"{name}:{os.stat(os.path.join(here, name)).st_mtime_ns}\0" for name in _MAKERS)
    key = makers + "".join(f"{path}\0{text}\0" for path, text in texts)
    entry = cache_entry(os.path.join(directory, "prelude.checked"), FROM_ENVIRONMENT)
    kept = load(entry[0], key, entry[1])
    if isinstance(kept, Prelude):
        return kept
    prelude = _make_prelude(texts)
    store(entry[0], key, prelude, entry[1])
    return prelude


def _make_prelude(texts: list[tuple[str, str]]) -> Prelude:
    from ..syntax.cache import parse_file_cached
    prelude = Prelude()
    items: list[Any] = []
    for path, text in texts:
        parsed, _ = parse_file_cached(path, text)
        items.extend(parsed)
    for item in items:
        if isinstance(item, A.RecordDecl):
            prelude.records[item.name] = T.RecordInfo(item.name, list(item.tparams), [])
    for item in items:
        if isinstance(item, A.RecordDecl):
            info = prelude.records[item.name]
            info.fields.extend((f.name, _type(f.type, prelude, item.tparams)) for f in item.fields)
        elif isinstance(item, A.FnDecl):
            params = [(p.name, _type(p.type, prelude, item.tparams)) for p in item.params]
            prelude.fns[item.name] = FnSig(item.name, list(item.tparams), params,
                                           _type(item.ret, prelude, item.tparams), item.fails, None)
        elif isinstance(item, A.ConstDecl):
            prelude.consts[item.name] = _type(item.type, prelude, ())
        elif isinstance(item, A.ToolDecl):
            fns = {}
            for fn in item.fns:
                params = [(p.name, _type(p.type, prelude, ())) for p in fn.params]
                fns[fn.name] = FnSig(fn.name, [], params, _type(fn.ret, prelude, ()), True, None)
            prelude.tools[item.name] = ToolInfo(item.name, fns, True, {fn.name: remote_name(fn) for fn in item.fns},
                                                {fn.name: fn.doc for fn in item.fns if fn.doc})
    return prelude


def _type(texpr: Any, prelude: Prelude, tparams: Any) -> T.Type:
    def named(t: Any, args: list) -> T.Type:
        if t.name in tparams:
            return T.TypeVar(t.name)
        return T.RecordT(prelude.records[t.name], args)
    return T.from_type_expr(texpr, lambda t: _type(t, prelude, tparams), named)
