"""Calls (SPEC §3.2, §3.7): named functions (user, extern, prelude) with generic inference, variant
constructors, `Fn` values, tool calls `T.f(…)`, callable record fields and `@persistent` field methods.

A generic call gets fresh holes for the callee's type parameters (or the turbofish's types); each argument is
typed with what is known so far as its hint and then binds holes; the expected type fills what is left. A type
parameter that shows up in the result and is still unbound is E046.
"""
from __future__ import annotations

from typing import Any

from ..core import types as T
from ..diagnostics import did_you_mean
from ..effect_builtins import EFFECT_BUILTINS
from ..syntax import ast as A
from .body import Body, Locals
from .names import ASSERTIONS, BUILTIN, INTRINSICS, VariantRef
from .symbols import FnSig, ToolInfo, ToolRef
from .typeops import ANY, PersistedT, contains_hole, fits, instantiate, is_open, resolve, show, unify


# builtins whose type parameter only the result mentions: the runtime passes them the type to produce
RESULT_TYPED = ("json_decode",)


class Calls:
    """Mixin of the checker."""

    def e_Call(self, node: A.Call, cx: Body, lc: Locals, expected: Any) -> T.Type:
        fn = node.fn
        node.ref = None
        if isinstance(fn, A.Name) and lc.find(fn.name) is None:
            t = self.named_call(node, fn, cx, lc, expected)
            self.note(cx.file, fn.span, fn.name, node.ref)
            return t
        if isinstance(fn, A.VariantPath):
            ref = node.ref = self.path_variant(fn.enum_name, fn.variant, fn.span, cx)
            self.note_variant(fn.enum_name, fn.variant, fn.span, ref, cx, "t")
            if ref is None:
                self.skip_args(node, cx, lc)
                return ANY
            return self.construct(ref, fn, node, cx, lc, expected)
        if isinstance(fn, A.FieldAccess):
            return self.member_call(node, fn, cx, lc, expected)
        return self.call_value(self.expr(fn, cx, lc), node, cx, lc)

    def skip_args(self, node: Any, cx: Body, lc: Locals) -> None:
        """Type the arguments of a call that is already in error, for the errors inside them."""
        for arg in node.args:
            self.expr(arg, cx, lc)

    def call_value(self, callee: T.Type, node: Any, cx: Body, lc: Locals) -> T.Type:
        if is_open(callee):
            self.skip_args(node, cx, lc)
            return ANY
        if not isinstance(callee, T.FnT):
            self.error("E021", f"a value of type {show(callee)} is not callable", node.fn.span, cx.file)
            self.skip_args(node, cx, lc)
            return ANY
        if len(node.args) != len(callee.params):
            self.error("E020", f"function takes {len(callee.params)} argument(s), {len(node.args)} given", node.span,
                       cx.file)
            self.skip_args(node, cx, lc)
            return callee.ret
        for arg, param in zip(node.args, callee.params):
            self.expect(arg, param, cx, lc)
        return callee.ret

    # ---------------------------------------------------------------- named calls
    def named_call(self, node: Any, fn: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        name = fn.name
        entity = node.ref = cx.scope.lookup(name)
        if entity is not None:
            if entity.kind == "fn":
                return self.call_sig(entity.info, node, cx, lc, expected)
            if entity.kind == "const":
                self.check_turbofish_absent(fn, f"`{name}`", cx)
                return self.call_value(entity.info, node, cx, lc)
            if entity.kind != "error":
                self.error("E021", f"`{name}` is a {entity.kind}, not a function", fn.span, cx.file)
            self.skip_args(node, cx, lc)
            return ANY
        node.ref = BUILTIN
        if name in INTRINSICS or name in ASSERTIONS:
            return self.intrinsic(name, node, cx, lc, expected)
        sig = self.prelude.fns.get(name)
        if sig is not None:
            result = self.call_sig(sig, node, cx, lc, expected)
            effect = EFFECT_BUILTINS.get(name)
            # the runtime gives the builtin its type (`json_decode`), or the step its declared type, by which a
            # mock's value becomes wire data under `sage test` (sagepy.effect_builtins)
            if name in RESULT_TYPED or (effect is not None and effect.declared_type):
                node.target = result
            return result
        if name in self.prelude.consts:
            return self.call_value(self.prelude.consts[name], node, cx, lc)
        ref = node.ref = self.bare_variant(name, fn.span, cx)
        if ref is not None:
            return self.construct(ref, fn, node, cx, lc, expected)
        self.unknown_name(name, fn.span, cx, lc)
        self.skip_args(node, cx, lc)
        return ANY

    def call_sig(self, sig: FnSig, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        fn = node.fn
        if sig.fails:
            self.require_covered(f"call `{sig.name}`", fn.span, cx, f"{sig.name}(…)")
        return self.apply(sig, fn, node.args, node.span, cx, lc, expected, f"`{sig.name}`")

    def apply(self, sig: FnSig, fn: Any, args: list, span: tuple, cx: Body, lc: Locals, expected: Any,
              what: str, arity_code: str = "E020") -> T.Type:
        """Check arguments against a signature, inferring its type parameters; returns the result type."""
        params = [t for _, t in sig.params]
        ret = sig.ret
        bindings: dict = {}
        holes: list = []
        targs = getattr(fn, "targs", None)
        if sig.tparams:
            env, holes = instantiate(sig.tparams)
            params = [T.substitute(p, env) for p in params]
            ret = T.substitute(ret, env)
            if targs:
                if len(targs) != len(sig.tparams):
                    self.error("E046", f"{what} takes {len(sig.tparams)} type argument(s), {len(targs)} given",
                               fn.span, cx.file)
                    bindings = {hole: ANY for hole in holes}
                else:
                    for hole, texpr in zip(holes, targs):
                        bindings[hole] = self.resolve_type(texpr, cx.scope, cx.tparams)
        elif targs:
            self.check_turbofish_absent(fn, what, cx)
        if len(args) != len(params):
            self.error(arity_code, f"{what} takes {len(params)} argument(s), {len(args)} given", span, cx.file)
            for arg in args:
                self.expr(arg, cx, lc)
            return resolve(ret, bindings)
        if holes and expected is not None:
            unify(ret, expected, bindings)
        clean = True
        for arg, param in zip(args, params):
            actual = self.expr(arg, cx, lc, resolve(param, bindings))
            if holes:
                unify(param, actual, bindings)
            want = resolve(param, bindings)
            if not fits(want, actual):
                self.mismatch(want, actual, arg.span, cx)
                clean = False
        if holes and clean and contains_hole(ret, bindings):
            missing = [h.name for h in holes if h not in bindings]
            self.error("E046", f"cannot infer type argument {', '.join(missing)} of {what}", span, cx.file,
                       hint=f"write it with a turbofish: `{sig.name}::<{', '.join(sig.tparams)}>(…)`, or "
                            "annotate the expected type")
        return resolve(ret, bindings)

    # ---------------------------------------------------------------- variants
    def construct(self, ref: VariantRef, fn: Any, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        payload, result, bindings, _ = self.instantiate_variant(ref, getattr(fn, "targs", None), fn.span, cx)
        if payload is None:
            self.error("E020", f"variant `{ref.name}` takes no payload", node.span, cx.file)
            self.skip_args(node, cx, lc)
            return resolve(result, bindings)
        if len(node.args) != 1:
            self.error("E020", f"variant `{ref.name}` takes exactly one payload (use a tuple for several)", node.span,
                       cx.file)
            self.skip_args(node, cx, lc)
            return resolve(result, bindings)
        if expected is not None:
            unify(result, expected, bindings)
        arg = node.args[0]
        actual = self.expr(arg, cx, lc, resolve(payload, bindings))
        unify(payload, actual, bindings)
        want = resolve(payload, bindings)
        if not fits(want, actual):
            self.mismatch(want, actual, arg.span, cx)
        return resolve(result, bindings)

    # ---------------------------------------------------------------- members: tools, fields, persisted cells
    def member_call(self, node: Any, fa: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        obj = fa.obj
        if isinstance(obj, A.Name) and lc.find(obj.name) is None:
            entity = cx.scope.lookup(obj.name)
            if entity is not None and entity.kind == "tool":
                self.note_tool_member(obj, fa, entity.info, cx)
                return self.tool_call(entity.info, obj.name, fa, node, cx, lc)
            if entity is None:
                tool = self.builtin_tool(obj.name)
                if tool is not None:
                    self.note_tool_member(obj, fa, tool, cx)
                    return self.tool_call(tool, obj.name, fa, node, cx, lc)
                if not self.prelude_value(obj.name) and self.bare_variant(obj.name, obj.span, cx) is None:
                    names = self.value_candidates(cx, lc) | {t for t in self.prelude.tools if self.builtin_tool(t)}
                    self.error("E037", f"unknown tool `{obj.name}`", obj.span, cx.file,
                               hint=did_you_mean(obj.name, names))
                    self.skip_args(node, cx, lc)
                    return ANY
        if isinstance(obj, A.SelfExpr):
            owner = self.self_field(fa, cx)
            return self.call_member_value(owner, fa, node, cx, lc)
        owner = self.expr(obj, cx, lc)
        self.note(cx.file, fa.span, fa.name, ("member", owner), "t")
        if isinstance(owner, PersistedT):
            return self.persisted_method(owner, fa, node, cx, lc)
        if isinstance(owner, T.RecordT):
            for fname, ftype in owner.fields():
                if fname == fa.name:
                    return self.call_member_value(ftype, fa, node, cx, lc)
        if not is_open(owner):
            hint = f"call it as a function: `{fa.name}(…)`" if self.prelude_value(fa.name) or \
                cx.scope.lookup(fa.name) is not None else None
            self.error("E021", f"a value of type {show(owner)} has no callable member `{fa.name}`", fa.span, cx.file,
                       hint=hint)
        self.skip_args(node, cx, lc)
        return ANY

    def note_tool_member(self, obj: Any, fa: Any, tool: ToolInfo, cx: Body) -> None:
        self.note(cx.file, obj.span, obj.name, tool)
        self.note(cx.file, fa.span, fa.name, ("member", tool), "t")

    def prelude_value(self, name: str) -> bool:
        return name in self.prelude.fns or name in self.prelude.consts or name in INTRINSICS

    def call_member_value(self, member: T.Type, fa: Any, node: Any, cx: Body, lc: Locals) -> T.Type:
        if is_open(member) or isinstance(member, T.FnT):
            return self.call_value(member, node, cx, lc)
        self.error("E021", f"member `{fa.name}` of type {show(member)} is not callable", fa.span, cx.file)
        self.skip_args(node, cx, lc)
        return ANY

    def persisted_method(self, cell: PersistedT, fa: Any, node: Any, cx: Body, lc: Locals) -> T.Type:
        inner = cell.inner
        signatures = {"get": ([], inner), "set": ([inner], T.UNIT), "checkpoint": ([], T.UNIT),
                      "update": ([T.FnT([inner], inner)], inner)}
        if fa.name not in signatures:
            self.error("E021", f"a persistent field has no method `{fa.name}` (it has get, set, update and "
                       "checkpoint)", fa.span, cx.file)
            self.skip_args(node, cx, lc)
            return ANY
        params, ret = signatures[fa.name]
        if fa.name == "update" and len(node.args) == 1 and isinstance(node.args[0], A.Closure):
            saved = self.update_closure
            self.update_closure = node.args[0]
            try:
                return self.call_value(T.FnT(params, ret), node, cx, lc)
            finally:
                self.update_closure = saved
        return self.call_value(T.FnT(params, ret), node, cx, lc)

    def tool_call(self, tool: ToolInfo, name: str, fa: Any, node: Any, cx: Body, lc: Locals) -> T.Type:
        shown = f"{name}.{fa.name}"
        self.require_covered(f"call `{shown}`", fa.span, cx, f"{shown}(…)")
        allowed = cx.tool_context()
        if allowed is None:
            self.error("E038", f"tool call `{shown}` outside agent handlers and test blocks", fa.span, cx.file,
                       hint="call tools from an agent that declares `use " + name + "`, or from a test")
        elif allowed != "any" and name not in allowed:
            self.error("E038", f"agent `{cx.agent.name}` calls tool `{name}` without `use {name}`", fa.span,
                       cx.file, hint=f"add `use {name}` to agent `{cx.agent.name}`")
        sig = tool.fns.get(fa.name)
        if sig is None:
            self.error("E036", f"tool `{name}` has no function `{fa.name}`", fa.span, cx.file,
                       hint=did_you_mean(fa.name, tool.fns))
            self.skip_args(node, cx, lc)
            return ANY
        node.ref = ToolRef.of(tool, fa.name)
        return self.apply(sig, fa, node.args, node.span, cx, lc, None, f"`{shown}`", arity_code="E039")
