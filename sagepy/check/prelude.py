"""The prelude as the checker sees it: signatures read from `stdlib/*.sg` (SPEC §6, §7).

`extern fn` declarations give the builtins' types (generic ones included) and whether they are `fails`;
`const`s, records and `tool` blocks give the prelude constants, records and built-in tools. The files are parsed
once per process (through the AST cache). The checker intrinsics, which no single signature describes, are typed
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


def _read_stdlib() -> Prelude:
    from ..syntax.cache import parse_file_cached
    prelude = Prelude()
    items: list[Any] = []
    directory = stdlib_dir()
    for name in sorted(os.listdir(directory)):
        if name.endswith(".sg"):
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as fh:
                parsed, _ = parse_file_cached(path, fh.read())
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
