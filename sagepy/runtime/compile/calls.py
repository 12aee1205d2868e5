"""Calls: user functions, builtins, variant constructors, `Fn` values, tool calls and `@persistent` field methods.

The checker recorded what each call resolves to in `Call.ref`: an `Entity` (a module function or constant), a
`VariantRef`, a `ToolRef`, `BUILTIN` (a prelude builtin or constant, an intrinsic or an assertion, found by
name), or None (the callee is a value: a local variable, a record field, a persistent field's method).
"""
from __future__ import annotations

from typing import Any

from ...check.names import ASSERTIONS, BUILTIN, VariantRef
from ...check.symbols import ToolRef
from ...effect_builtins import EFFECT_BUILTINS, IO, MCP_BUILTINS
from ...syntax import ast as A
from ...core.errors import SageRaise, raise_at
from ..operators import builtin_misuse
from ...core.values import UNIT, Function, Variant, display
from . import inplace
from .frames import Code, direct_call1, located

# Builtins compiled here rather than taken from the native library: they write output, sleep the agent, ask a
# person, talk to MCP servers through the agent's effects (sagepy.effect_builtins: the `io` ones the interpreter
# performs itself, and every `mcp` one), read the run's arguments, or rebind the variable they are given.
CONTEXT_BUILTINS = ("print", "print_err", "map_set", "map_delete", "args", *MCP_BUILTINS,
                    *(name for name, b in EFFECT_BUILTINS.items() if b.kind == IO and b.perform is None))


class Calls:
    """Mixin of the compiler."""

    def e_Call(self, node: A.Call) -> Code:
        ref = node.ref
        if ref is BUILTIN:
            return self.builtin_call(node)
        if ref is None:
            fn = node.fn
            if type(fn) is A.FieldAccess and type(fn.obj) is A.FieldAccess and type(fn.obj.obj) is A.SelfExpr \
                    and fn.obj.name not in self.agent.field_names:
                return self.persistent_method(fn.obj.name, fn.name, node)
            return self.dynamic_call(self.expr(fn), node)
        kind = type(ref)
        if kind is ToolRef:
            return self.tool_call(ref, node)
        if kind is VariantRef:
            arg = self.expr(node.args[0])
            enum_name, vname = ref.enum, ref.name
            return lambda frame: Variant(enum_name, vname, arg(frame))
        if ref.kind == "fn":
            return self.direct_call(self.runtime_item(ref), node)
        cell = self.runtime_item(ref)   # a constant holding a function
        return self.dynamic_call(lambda frame: cell[2](), node)

    def dynamic_call(self, callee: Code, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span

        def call(frame: list) -> Any:
            f = callee(frame)
            values = [a(frame) for a in args]
            if type(f) is not Function:
                raise raise_at("Runtime", f"{display(f)} is not callable", None, file, span)
            try:
                return f(*values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except RecursionError:
                raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
        return call

    def direct_call(self, rec: Any, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span
        n = len(args)
        if n == 1 and not rec.decl.extern:
            return direct_call1(rec, args[0], file, span)
        if n == 2:
            a0, a1 = args

            def call2(frame: list) -> Any:
                try:
                    return rec.impl(frame[0], a0(frame), a1(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
            return call2

        def call(frame: list) -> Any:
            try:
                return rec.impl(frame[0], *[a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    # ---------------------------------------------------------------- builtins
    def builtin_call(self, node: Any) -> Code:
        name = node.fn.name
        if name in ASSERTIONS:
            return self.assertion(name, node)
        if name in CONTEXT_BUILTINS:
            return self.context_builtin(name, node)
        impl = self.builtins.get(name)
        if impl is None:   # a prelude constant holding a function
            value = self.constants[name]
            return self.dynamic_call(lambda frame: value, node)
        args = [self.expr(a) for a in node.args]
        if node.target is not None:   # a generic builtin (`json_decode`) receives the type it is to produce
            target = node.target
            args.append(lambda frame: target)
        file, span = self.file, node.span
        n = len(args)
        if n == 1:
            a0 = args[0]

            def call1(frame: list) -> Any:
                try:
                    return impl(a0(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise builtin_misuse(name, exc, file, span)
            return call1
        if n == 2:
            a0, a1 = args

            def call2(frame: list) -> Any:
                try:
                    return impl(a0(frame), a1(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise builtin_misuse(name, exc, file, span)
            return call2

        def call(frame: list) -> Any:
            try:
                return impl(*[a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except TypeError as exc:
                raise builtin_misuse(name, exc, file, span)
        return call

    def builtin_value(self, name: str) -> Any:
        """A prelude constant, or a registry builtin as a `Function` value (one per name)."""
        if name in self.constants:
            return self.constants[name]
        value = self.builtin_values.get(name)
        if value is None:
            value = self.builtin_values[name] = Function(name, self.builtins[name])
        return value

    def context_builtin(self, name: str, node: Any) -> Code:
        if name in ("map_set", "map_delete"):
            return self.map_update(name, node)
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span
        if name in MCP_BUILTINS:
            ret = node.target   # the declared type of a builtin whose value holds prelude records, else None

            def mcp(frame: list) -> Any:
                values = [a(frame) for a in args]
                try:
                    return frame[0].runtime.effects.mcp_builtin(frame[0], name, values, ret)
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
            return mcp
        if name in ("print", "print_err"):
            (arg,) = args
            to_stdout = name == "print"

            def emit(frame: list) -> Any:
                v = arg(frame)
                ctx = frame[0]
                if ctx.steps < ctx.replay_until:   # a resumed run printed this before (SPEC §14)
                    return UNIT
                text = v if type(v) is str else display(v)
                if to_stdout:
                    ctx.runtime.write_out(text)
                else:
                    ctx.runtime.write_err(text)
                return UNIT
            return emit
        if name == "sleep_ms":
            (ms,) = args

            def sleep(frame: list) -> Any:
                return frame[0].runtime.effects.io(frame[0], "sleep_ms", (ms(frame),))
            return sleep
        if name == "args":   # the program arguments of the run, set by the session (SPEC §6.1)
            return lambda frame: list(frame[0].runtime.program_args)

        def read(frame: list) -> Any:   # ask
            try:
                return frame[0].runtime.effects.io(frame[0], name, [a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return read

    def map_update(self, name: str, node: Any) -> Code:
        """`map_set(m, k, v)` / `map_delete(m, k)` rebind the variable `m` to its updated map (in place when
        nothing else holds it: inplace.py)."""
        slot = node.args[0].slot
        key = self.expr(node.args[1])
        if name == "map_set":
            return inplace.map_set(slot, key, self.expr(node.args[2]))
        return inplace.map_delete(slot, key)

    # ---------------------------------------------------------------- tools and persistent fields
    def tool_call(self, ref: ToolRef, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span

        def call(frame: list) -> Any:
            values = [a(frame) for a in args]
            try:
                return frame[0].runtime.effects.tool_call(frame[0], ref, values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    def persistent_method(self, field: str, method: str, node: Any) -> Code:
        """`self.f.get()`, `self.f.set(v)`, `self.f.update(fn)`, `self.f.checkpoint()` on a `@persistent` field."""
        name = self.agent.name
        if method == "set":
            arg = self.expr(node.args[0])
            return lambda frame: frame[0].runtime.effects.persistent(frame[0], name, field, "set", arg(frame))
        if method == "update":
            return self.persistent_update(name, field, self.expr(node.args[0]), node.span)
        return lambda frame: frame[0].runtime.effects.persistent(frame[0], name, field, method)

    def persistent_update(self, name: str, field: str, fn: Code, span: tuple) -> Code:
        """`self.f.update(fn)`: the store applies `fn` to the stored value in one transaction (SPEC §4.8); an
        error raised by `fn` leaves the value unchanged and is reported here unless it knows its own site."""
        file = self.file

        def update(frame: list) -> Any:
            f = fn(frame)
            try:
                return frame[0].runtime.effects.persistent(frame[0], name, field, "update", f)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except RecursionError:
                raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
        return update

