"""The static checker of SPEC §3: one pass over a loaded program that resolves names, types every expression,
tracks fallibility and reports every error it finds (it never stops at the first).

Two classes do the work. `env.Namespaces` runs first: it builds the module scopes, resolves `use` and turns
type expressions into types. `Checker` is the visitor of everything else, read top to bottom: expressions,
statements and calls. It delegates some families of nodes to helpers, modules of functions that take the checker
through its declared interface (`context.Checking`) and nothing else: `names` (values and variants), `items`
(each item of a module: functions, agents, supervisors, tool blocks, tests; where checking a module starts),
`agentexprs` (summon, await, messages), `intrinsics` (builtins typed by rules), `tooluse` (`divine` and its tools)
and `patterns` (`match`).

`expr(node, cx, lc, expected)` returns the node's type. `expected` is a hint that flows inward (bidirectional
inference: it types `[]`, `None` and generic calls); the caller compares the result with what it needs.
`stmt(node, cx, lc)` returns True when the statement never completes (it returns, breaks, continues or fails
on every path), which is how reachability and missing results are found.

Checking is linear in the size of the program: every body is visited once (agents possibly earlier than their
turn, when an `await` needs their result type), and lookups are dictionary hits.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core import types as T
from ..diagnostics import Diagnostic, did_you_mean
from ..effect_builtins import EFFECT_BUILTINS, MCP_MOCK_KEYS
from ..syntax import ast as A
from . import agentexprs, intrinsics, items, names, patterns, tooluse
from .body import Body, Locals, Loop, Var
from .env import Namespaces
from .hints import field_hint
from .names import ASSERTIONS, BUILTIN, INTRINSICS, VariantRef
from .prelude import load_prelude
from .symbols import AgentInfo, FnSig, ToolInfo, ToolRef, ToolTables
from .typeops import (ANY, MAP_KEYS, NEVER, ORDERABLE, PersistedT, contains_hole, fits, instantiate, is_open,
                      merge, prim_named, resolve, show, unify)

_ARITH = ("+", "-", "*", "/", "%")
_ORDER = ("<", ">", "<=", ">=")
RESULT_TYPED = ("json_decode",)


class Checker:
    """Checks one loaded program: `run()` returns its diagnostics. It holds what the whole pass shares: the
    prelude, the first pass's `Namespaces` (`ns`), the diagnostics and the references the index is built from."""

    def __init__(self, program: Any, configured_tools: ToolTables, test_file: bool) -> None:
        self.program = program
        self.direct_scores: set[int] = set()   # the `score` statements standing directly in an eval block
        self.first_replays: set[int] = set()   # the `replay` statements opening a test block
        self.test_file = test_file
        self.prelude = load_prelude()
        self.configured_tools = configured_tools
        self.diagnostics: list[Diagnostic] = []
        self.mcp_tools: dict[str, AgentInfo] = {}     # `#[mcp_tool]` names (SPEC §21), first agent of each
        self.update_closure: Any = None               # the closure literal given to `self.f.update` (E066)
        self.refs: list[tuple] = []                   # every name resolved, for the index (index.py)
        self.ns = Namespaces(self, configured_tools, test_file, self.prelude)

    def error(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, span, hint=hint))

    def warn(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, span, severity="warning", hint=hint))

    def note(self, file: str, span: tuple | None, name: str, target: Any, where: Any = "h",
             define: bool = False) -> None:
        """Record that `name`, written at `where` inside `span`, denotes `target` (see index.py). One append:
        `sage check` pays nothing more for the index the language server builds from these."""
        self.refs.append((file, span, name, where, target, define))

    def run(self) -> list[Diagnostic]:
        self.ns.build_scopes(self.program)
        for module in self.program.modules:
            items.check_module(self, self.ns.scopes[id(module)])
        return self.diagnostics

    def check_agent(self, agent: AgentInfo) -> None:
        """Check an agent's declaration and handlers now (an `await` needs its result type before its turn)."""
        items.check_agent(self, agent)

    # ================================================================ expressions
    def expr(self, node: Any, cx: Body, lc: Locals, expected: T.Type | None = None) -> T.Type:
        return _EXPRESSIONS[type(node).__name__](self, node, cx, lc, expected)

    def mismatch(self, expected: T.Type, actual: T.Type, span: tuple, cx: Body, code: str = "E018",
                 hint: str | None = None) -> None:
        self.error(code, f"type mismatch: expected {show(expected)}, found {show(actual)}", span, cx.file, hint=hint)

    def expect(self, node: Any, expected: T.Type, cx: Body, lc: Locals) -> T.Type:
        """Type `node` with `expected` as hint and report E018 when it does not fit."""
        actual = self.expr(node, cx, lc, expected)
        if not fits(expected, actual):
            self.mismatch(expected, actual, node.span, cx)
        return actual

    # ---------------------------------------------------------------- literals and names
    def e_Literal(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        kind = type(node.value)
        if kind is bool:
            return T.BOOL
        if kind is int:
            return T.INT
        if kind is float:
            return T.FLOAT
        if kind is str:
            return T.STRING
        return T.UNIT if node.value is A.UNIT else ANY

    def e_Template(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        for part in node.parts:
            if not isinstance(part, str):
                self.expr(part, cx, lc)
        return T.STRING

    def e_Name(self, node: A.Name, cx: Body, lc: Locals, expected: Any) -> T.Type:
        var = lc.find(node.name)
        if var is not None:
            node.ref = None
            node.slot = cx.slot_of(var)
            names.check_turbofish_absent(self, node, f"variable `{node.name}`", cx)
            self.note(cx.file, node.span, node.name, var)
            return var.type
        t = names.name_value(self, node, cx, lc, expected)
        self.note(cx.file, node.span, node.name, node.ref)
        return t

    def e_VariantPath(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        ref = node.ref = names.path_variant(self, node.enum_name, node.variant, node.span, cx)
        names.note_variant(self, node.enum_name, node.variant, node.span, ref, cx, "t")
        if ref is None:
            return ANY
        return names.unit_variant_value(self, ref, node, cx, expected)

    def e_SelfExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if cx.agent is None:
            self.error("E026", "`self` outside an agent handler", node.span, cx.file)
            return ANY
        return T.AgentT(cx.agent.name)

    # ---------------------------------------------------------------- fields
    def e_FieldAccess(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if isinstance(node.obj, A.SelfExpr):
            return self.self_field(node, cx)
        owner = self.expr(node.obj, cx, lc)
        self.note(cx.file, node.span, node.name, ("member", owner), "t")
        return self.field_of(owner, node.name, node.span, cx)

    def self_field(self, node: Any, cx: Body) -> T.Type:
        agent = cx.agent
        if agent is None:
            self.error("E026", "`self` outside an agent handler", node.obj.span, cx.file)
            return ANY
        self.note(cx.file, node.span, node.name, ("self", agent), "t")
        field = agent.fields.get(node.name)
        if field is None:
            self.error("E026", f"agent `{agent.name}` has no field `{node.name}`", node.span, cx.file,
                       hint=field_hint(node.name, agent.fields, f"agent `{agent.name}`"))
            return ANY
        agent.reads.add(node.name)
        return PersistedT(field.type) if field.persistent else field.type

    def field_of(self, t: T.Type, name: str, span: tuple, cx: Body) -> T.Type:
        if is_open(t):
            return ANY
        if isinstance(t, T.RecordT):
            for fname, ftype in t.fields():
                if fname == name:
                    return ftype
            self.error("E027", f"record `{t.name}` has no field `{name}`", span, cx.file,
                       hint=field_hint(name, [f for f, _ in t.fields()], f"record `{t.name}`"))
            return ANY
        if prim_named(t, "Error"):
            if name in ("message", "kind"):
                return T.STRING
            self.error("E027", f"`Error` has no field `{name}` (it has `message` and `kind`)", span, cx.file)
            return ANY
        hint = None
        if isinstance(t, T.AgentT):
            hint = "an agent's fields are read only by its own handlers, as `self.<field>`; await its result " \
                   "or send it a message"
        self.error("E027", f"field access `.{name}` on a value of type {show(t)}, which is not a record", span,
                   cx.file, hint=hint)
        return ANY

    def e_TupleIndex(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        t = self.expr(node.obj, cx, lc)
        if is_open(t):
            return ANY
        if isinstance(t, T.TupleT):
            if node.index < len(t.items):
                return t.items[node.index]
            self.error("E034", f"tuple index .{node.index} out of range for {show(t)}", node.span, cx.file)
            return ANY
        self.error("E049", f"tuple index .{node.index} on a value of type {show(t)}, which is not a tuple",
                   node.span, cx.file)
        return ANY

    # ---------------------------------------------------------------- operators
    def e_Binary(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        op = node.op
        if op in ("&&", "||"):
            self.operand(node.left, T.BOOL, op, cx, lc)
            self.operand(node.right, T.BOOL, op, cx, lc)
            return T.BOOL
        left = self.expr(node.left, cx, lc, expected if op in _ARITH or op == "++" else None)
        right = self.expr(node.right, cx, lc, None if is_open(left) else left)
        if op == "++":
            if not (self.is_a(left, "String") and self.is_a(right, "String")):
                self.bad_operands(node, left, right, cx)
            return T.STRING
        if op in _ARITH:
            if self.same_numeric(left, right, ("Int", "Float")):
                return right if is_open(left) else left
            self.bad_operands(node, left, right, cx)
            return ANY
        if op in _ORDER:
            if not self.same_numeric(left, right, ORDERABLE):
                self.bad_operands(node, left, right, cx)
            return T.BOOL
        if not (fits(left, right) and fits(right, left)):
            self.bad_operands(node, left, right, cx)
        return T.BOOL

    def operand(self, node: Any, want: T.Type, op: str, cx: Body, lc: Locals) -> None:
        t = self.expr(node, cx, lc, want)
        if not fits(want, t):
            self.error("E019", f"operator `{op}` is not defined for {show(t)} (it needs {show(want)})", node.span,
                       cx.file)

    @staticmethod
    def is_a(t: T.Type, name: str) -> bool:
        return is_open(t) or prim_named(t, name)

    @staticmethod
    def same_numeric(left: T.Type, right: T.Type, names: tuple) -> bool:
        if is_open(left):
            return is_open(right) or prim_named(right, *names)
        if is_open(right):
            return prim_named(left, *names)
        return prim_named(left, *names) and prim_named(right, left.name)  # type: ignore[attr-defined]

    def bad_operands(self, node: Any, left: T.Type, right: T.Type, cx: Body) -> None:
        hint = None
        if node.op == "+" and (prim_named(left, "String") or prim_named(right, "String")):
            hint = "concatenate strings with `++`"
        elif node.op in _ARITH and {getattr(left, "name", ""), getattr(right, "name", "")} == {"Int", "Float"}:
            hint = "Int and Float never mix: convert with `int_to_float` or `float_to_int`"
        self.error("E019", f"operator `{node.op}` is not defined for {show(left)} and {show(right)}", node.span,
                   cx.file, hint=hint)

    def e_Unary(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if node.op == "!":
            self.operand(node.operand, T.BOOL, "!", cx, lc)
            return T.BOOL
        t = self.expr(node.operand, cx, lc, expected)
        if is_open(t):
            return ANY
        if not prim_named(t, "Int", "Float"):
            self.error("E019", f"operator `-` is not defined for {show(t)}", node.span, cx.file)
            return ANY
        return t

    # ---------------------------------------------------------------- errors
    def check_try_allowed(self, word: str, span: tuple, cx: Body) -> None:
        if cx.in_catch:
            return
        if cx.stop:
            self.error("E016", f"`{word}` inside `on stop`/`on resting` (the result is already fixed; use `catch`)",
                       span, cx.file)
        elif not cx.fallible:
            self.error("E014", f"`{word}` outside a fallible context", span, cx.file,
                       hint="use `catch { … }`, or mark the function `fails`")

    def e_TryExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        self.check_try_allowed("try", node.span, cx)
        saved = cx.covered
        cx.covered = True
        try:
            return self.expr(node.expr, cx, lc, expected)
        finally:
            cx.covered = saved

    def e_FailExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        self.check_try_allowed("fail", node.span, cx)
        t = self.expr(node.expr, cx, lc, T.STRING)
        if not (is_open(t) or prim_named(t, "String", "Error")):
            self.mismatch(T.STRING, t, node.expr.span, cx, hint="`fail` takes a String message or an Error")
        return NEVER

    def e_CatchExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        saved = cx.covered
        cx.covered = True
        cx.in_catch += 1
        try:
            left = self.expr(node.expr, cx, lc, expected)
        finally:
            cx.covered = saved
            cx.in_catch -= 1
        inner = lc.child()
        if node.binder:
            var = inner.vars[node.binder] = Var(T.ERROR, cx)
            node.slot = var.slot
            self.note(cx.file, node.span, node.binder, var, node.expr.span[2:], True)
        fallback = self.block_type(node.fallback, cx, inner, expected if is_open(left) else left)
        if not fits(left, fallback):
            self.error("E015", f"`catch` fallback has type {show(fallback)}, but the expression has type "
                       f"{show(left)}", node.fallback.span, cx.file)
            return ANY
        return merge(left, fallback)

    # ---------------------------------------------------------------- collections and records
    def e_ListLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        elem: T.Type | None = expected.elem if isinstance(expected, T.ListT) else None
        found: T.Type | None = None
        for item in node.items:
            t = self.expr(item, cx, lc, found if found is not None and not is_open(found) else elem)
            if found is None:
                found = t
            elif not fits(found, t):
                self.mismatch(found, t, item.span, cx)
            else:
                found = merge(found, t)
        return T.ListT(found if found is not None else (elem if elem is not None else ANY))

    def e_TupleLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        hints = list(expected.items) if isinstance(expected, T.TupleT) and len(expected.items) == len(node.items) \
            else [None] * len(node.items)
        return T.TupleT(self.expr(item, cx, lc, hint) for item, hint in zip(node.items, hints))

    def e_MapLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        key: T.Type | None = expected.key if isinstance(expected, T.MapT) else None
        value: T.Type | None = expected.value if isinstance(expected, T.MapT) else None
        found_k: T.Type | None = None
        found_v: T.Type | None = None
        for k, v in node.entries:
            kt = self.expr(k, cx, lc, found_k or key)
            vt = self.expr(v, cx, lc, found_v or value)
            if not (is_open(kt) or prim_named(kt, *MAP_KEYS)):
                self.error("E018", f"type mismatch: expected a map key type (String, Int or Bool), found {show(kt)}",
                           k.span, cx.file)
            found_k = self.join(found_k, kt, k.span, cx)
            found_v = self.join(found_v, vt, v.span, cx)
        return T.MapT(found_k or key or ANY, found_v or value or ANY)

    def join(self, found: T.Type | None, t: T.Type, span: tuple, cx: Body) -> T.Type:
        """Fold one more element type into the type found so far (E018 when it disagrees)."""
        if found is None:
            return t
        if not fits(found, t):
            self.mismatch(found, t, span, cx)
            return found
        return merge(found, t)

    def e_RecordLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        entity = cx.scope.lookup(node.name)
        info = None
        if entity is not None and entity.kind == "record":
            info = entity.info
        elif entity is None and node.name in self.prelude.records:
            info = self.prelude.records[node.name]
        if info is None and entity is not None and entity.kind == "error":
            self.skip_fields(node.fields, cx, lc)
            return ANY
        if info is None:
            what = f"`{node.name}` is a {entity.kind}, not a record" if entity else f"unknown record `{node.name}`"
            self.error("E011", what, node.span, cx.file)
            self.skip_fields(node.fields, cx, lc)
            return ANY
        node.ref = info
        self.note(cx.file, node.span, node.name, info)
        _, holes = instantiate(info.params)
        bindings: dict = {}
        if node.targs:
            if not info.params:
                self.error("E100", f"record `{info.name}` is not generic: remove the type arguments", node.span,
                           cx.file)
            elif len(node.targs) != len(info.params):
                self.error("E046", f"`{info.name}` takes {len(info.params)} type argument(s), {len(node.targs)} "
                           "given", node.span, cx.file)
            else:
                for hole, texpr in zip(holes, node.targs):
                    bindings[hole] = self.ns.resolve_type(texpr, cx.scope, cx.tparams)
        record = T.RecordT(info, holes)
        if expected is not None and not node.targs:
            unify(record, expected, bindings)
        declared = dict(record.fields())
        given: set[str] = set()
        for fname, value, fspan in node.fields:
            self.note(cx.file, fspan, fname, ("member", record))
            if fname not in declared:
                self.error("E027", f"record `{info.name}` has no field `{fname}`", fspan, cx.file,
                           hint=field_hint(fname, declared, f"record `{info.name}`"))
                self.expr(value, cx, lc)
                continue
            if fname in given:
                self.error("E027", f"field `{fname}` given twice", fspan, cx.file)
            given.add(fname)
            ftype = declared[fname]
            actual = self.expr(value, cx, lc, resolve(ftype, bindings))
            unify(ftype, actual, bindings)
            if not fits(resolve(ftype, bindings), actual):
                self.mismatch(resolve(ftype, bindings), actual, value.span, cx)
        missing = [f for f in declared if f not in given]
        if missing:
            self.error("E027", f"missing field(s) {', '.join('`' + m + '`' for m in missing)} in `{info.name}`",
                       node.span, cx.file)
        return resolve(record, bindings)

    def skip_fields(self, fields: list, cx: Body, lc: Locals) -> None:
        for _, value, _ in fields:
            self.expr(value, cx, lc)

    # ---------------------------------------------------------------- closures
    def e_Closure(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        want = expected if isinstance(expected, T.FnT) and len(expected.params) == len(node.params) else None
        ret = want.ret if want is not None and not is_open(want.ret) else None
        body_cx = cx.closure(ret)
        if node is self.update_closure:
            body_cx.update_fn = True
        inner = lc.child()
        params = []
        for i, p in enumerate(node.params):
            if p.type is None:
                self.error("E040", f"closure parameter `{p.name}` needs a type", p.span, cx.file,
                           hint=f"write `{p.name}: <Type>`")
                t = want.params[i] if want is not None else ANY
            else:
                t = self.ns.resolve_type(p.type, cx.scope, cx.tparams)
            if p.name in inner.vars:
                self.error("E012", f"duplicate parameter `{p.name}`", p.span, cx.file)
            if p.name != "_":
                var = inner.vars[p.name] = Var(t, body_cx)
                self.note(cx.file, p.span, p.name, var, "h", True)
            else:
                body_cx.new_slot()   # every parameter has its slot in the frame, in order
            params.append(t)
        if isinstance(node.body, A.Block):
            body_t = self.block_type(node.body, body_cx, inner, ret)
        else:
            body_t = self.expr(node.body, body_cx, inner, ret)
        node.nslots = body_cx.nslots
        node.captures = body_cx.captures
        if ret is not None:
            if not fits(ret, body_t):
                self.mismatch(ret, body_t, node.body.span, cx)
            return T.FnT(params, ret)
        result = body_t
        for t, span in body_cx.returns or ():
            result = self.join(result, t, span, cx)
        return T.FnT(params, result)

    # ================================================================ statements
    def block_type(self, block: Any, cx: Body, lc: Locals, expected: Any = None, discard: bool = False) -> T.Type:
        inner = lc.child()
        stmts = block.stmts
        final_match = stmts[-1] if block.value is None and stmts and isinstance(stmts[-1], A.MatchStmt) else None
        diverges = False
        for s in stmts:
            if s is final_match:
                break
            if self.stmt(s, cx, inner):
                diverges = True
        if final_match is not None:
            t = patterns.match(self, final_match.match, cx, inner, None if discard else expected, discard)
        elif block.value is not None:
            t = self.expr(block.value, cx, inner, None if discard else expected)
        else:
            t = T.UNIT
        if diverges or t is NEVER:
            return NEVER
        return T.UNIT if discard else t

    @staticmethod
    def has_tail(block: Any) -> bool:
        """True when the block ends in a value: a trailing expression or a final `match` statement."""
        return block.value is not None or bool(block.stmts and isinstance(block.stmts[-1], A.MatchStmt))

    def stmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return getattr(self, "s_" + type(node).__name__)(node, cx, lc)

    def s_ExprStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.expr(node.expr, cx, lc) is NEVER

    def s_MatchStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return patterns.match(self, node.match, cx, lc, None, True) is NEVER

    def s_LetStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        declared = self.ns.resolve_type(node.type, cx.scope, cx.tparams) if node.type is not None else None
        t = self.expr(node.value, cx, lc, declared)
        if declared is not None:
            if not fits(declared, t):
                self.mismatch(declared, t, node.value.span, cx)
            self.bind_target(node.target, declared, cx, lc)
        else:
            self.bind_target(node.target, t, cx, lc)
        return t is NEVER

    def bind_target(self, target: Any, t: T.Type, cx: Body, lc: Locals) -> None:
        if isinstance(target, A.TargetName):
            if target.name != "_":
                var = lc.vars[target.name] = Var(t, cx)
                target.slot = var.slot
                self.note(cx.file, target.span, target.name, var, "h", True)
            return
        n = len(target.items)
        if isinstance(t, T.TupleT):
            if len(t.items) != n:
                self.error("E028", f"cannot destructure {show(t)} into {n} elements", target.span, cx.file)
                items = [ANY] * n
            else:
                items = list(t.items)
        else:
            if not is_open(t):
                self.error("E018", f"type mismatch: expected a tuple of {n} elements, found {show(t)}", target.span,
                           cx.file)
            items = [ANY] * n
        for sub, item in zip(target.items, items):
            self.bind_target(sub, item, cx, lc)

    def s_AssignStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        var = lc.find(node.name)
        if var is None:
            self.error("E047", f"cannot assign to `{node.name}`: no variable of that name", node.span, cx.file,
                       hint=f"declare it first with `let {node.name} = …;`")
            return self.expr(node.value, cx, lc) is NEVER
        if var.owner is not cx:
            self.error("E047", f"a closure cannot assign to captured variable `{node.name}`", node.span, cx.file)
        node.slot = var.slot
        self.note(cx.file, node.span, node.name, var)
        t = self.expr(node.value, cx, lc, var.type)
        if not fits(var.type, t):
            self.mismatch(var.type, t, node.value.span, cx)
        else:
            var.type = merge(var.type, t)
        return t is NEVER

    def condition(self, node: Any, cx: Body, lc: Locals) -> None:
        t = self.expr(node, cx, lc, T.BOOL)
        if not (is_open(t) or prim_named(t, "Bool")):
            self.error("E022", f"condition must be a Bool, found {show(t)}", node.span, cx.file,
                       hint="there is no truthiness: compare explicitly")

    def s_IfStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.condition(node.cond, cx, lc)
        then = self.block_type(node.then, cx, lc, discard=True) is NEVER
        if node.orelse is None:
            return False
        if isinstance(node.orelse, A.IfStmt):
            other = self.s_IfStmt(node.orelse, cx, lc)
        else:
            other = self.block_type(node.orelse, cx, lc, discard=True) is NEVER
        return then and other

    def loop_body(self, block: Any, cx: Body, lc: Locals) -> Loop:
        loop = Loop()
        cx.loops.append(loop)
        try:
            self.block_type(block, cx, lc, discard=True)
        finally:
            cx.loops.pop()
        return loop

    def s_WhileStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.condition(node.cond, cx, lc)
        self.loop_body(node.body, cx, lc)
        return False

    def s_LoopStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return not self.loop_body(node.body, cx, lc).has_break

    def s_ForStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        t = self.expr(node.iter, cx, lc)
        if isinstance(t, T.ListT):
            item = t.elem
        elif isinstance(t, T.MapT):
            item = T.TupleT([t.key, t.value])
        else:
            if not is_open(t):
                self.error("E023", f"`for` iterates a List or a Map, found {show(t)}", node.iter.span, cx.file)
            item = ANY
        inner = lc.child()
        self.bind_target(node.target, item, cx, inner)
        self.loop_body(node.body, cx, inner)
        return False

    def loop_jump(self, word: str, span: tuple, cx: Body) -> bool:
        if not cx.loops:
            self.error("E024", f"`{word}` outside a loop", span, cx.file)
        elif word == "break":
            cx.loops[-1].has_break = True
        return True

    def s_BreakStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.loop_jump("break", node.span, cx)

    def s_ContinueStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.loop_jump("continue", node.span, cx)

    def s_ReturnStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.return_value(node.value, node.span, cx, lc)
        return True

    def return_value(self, value: Any, span: tuple, cx: Body, lc: Locals) -> None:
        if cx.ret is None and cx.returns is None:
            self.error("E024", "`return` outside a function or closure body", span, cx.file,
                       hint="handlers end with `yield(…)` or by reaching their end" if cx.agent else None)
            if value is not None:
                self.expr(value, cx, lc)
            return
        t = self.expr(value, cx, lc, cx.ret) if value is not None else T.UNIT
        if cx.ret is not None:
            if not fits(cx.ret, t):
                self.mismatch(cx.ret, t, value.span if value is not None else span, cx)
        else:
            cx.returns.append((t, span))

    def s_SpanStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.expr(node.name, cx, lc)
        return self.block_type(node.body, cx, lc, discard=True) is NEVER

    def s_CheckpointStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        if cx.agent is None:
            self.error("E053", "`checkpoint()` outside an agent handler", node.span, cx.file)
        return False

    def s_ScoreStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        """`score "s" = expr;` directly in an eval block's body; a Bool or a Float (SPEC §22.1)."""
        if id(node) not in self.direct_scores:
            self.error("E096", "`score` is only allowed directly inside an `eval` block", node.span, cx.file)
        t = self.expr(node.value, cx, lc)
        if not (is_open(t) or prim_named(t, "Bool") or prim_named(t, "Float")):
            self.error("E018", f"type mismatch: expected Bool or Float, found {show(t)}", node.value.span, cx.file,
                       hint="a score is a Bool (1.0 or 0.0) or a Float from 0.0 to 1.0")
        return False

    def s_ReplayStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        """`replay "file.jsonl";` as a test block's first statement (SPEC §22.2)."""
        if id(node) not in self.first_replays:
            self.error("E056", "`replay` is only allowed as the first statement of a test block", node.span,
                       cx.file)
        return False

    def s_MockStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        if cx.kind == "eval":
            self.error("E096", "`mock` is not allowed in an `eval` block: a case runs against the real model",
                       node.span, cx.file)
            return False
        if not cx.scope.is_test:
            self.error("E050", "`mock` is only allowed in test files (`*_test.sg`)", node.span, cx.file)
        elif cx.kind != "test":
            code = "E057" if node.kind == "tool" else "E056"
            self.error(code, f"`mock {node.kind}` is only allowed inside a test block", node.span, cx.file)
        if node.kind == "tool":
            self.mock_target(node, cx)
        value = node.value
        if isinstance(value, A.FailExpr):
            t = self.expr(value.expr, cx, lc, T.STRING)
            if not (is_open(t) or prim_named(t, "String")):
                self.error("E058", f"the message of a failure mock must be a String, found {show(t)}",
                           value.expr.span, cx.file)
        elif isinstance(value, A.MockCalls):
            if cx.kind == "test":   # elsewhere E050/E056 says it all; its calls would only add E038s
                tooluse.mock_calls(self, value, cx, lc)
        elif node.kind == "approve":
            self.mock_approval(value, cx, lc)
        elif node.kind == "ask":
            self.expect_type(value, T.STRING, "String", cx, lc)
        elif not (node.kind == "elicit" and isinstance(value, A.Name) and value.name in ("decline", "cancel")):
            self.expr(value, cx, lc)
        return False

    def mock_approval(self, value: Any, cx: Body, lc: Locals) -> None:
        """`mock approve -> true;`, `-> false;` or `-> deny("reason");` (SPEC §9.3)."""
        if is_deny(value):
            if len(value.args) != 1:
                self.error("E039", f"`deny` takes 1 argument (the reason), found {len(value.args)}", value.span,
                           cx.file)
            for arg in value.args:
                self.expect_type(arg, T.STRING, "String", cx, lc)
            return
        self.expect_type(value, T.BOOL, "Bool", cx, lc)

    def expect_type(self, value: Any, expected: Any, name: str, cx: Body, lc: Locals) -> None:
        t = self.expr(value, cx, lc, expected)
        if not (is_open(t) or prim_named(t, name)):
            self.error("E018", f"type mismatch: expected {name}, found {show(t)}", value.span, cx.file)

    def mock_target(self, node: Any, cx: Body) -> None:
        if node.tool == "mcp" and cx.scope.lookup("mcp") is None:
            if node.fn not in MCP_MOCK_KEYS:
                self.error("E036", f"unknown MCP mock key `mcp.{node.fn}`", node.span, cx.file,
                           hint=did_you_mean(node.fn, MCP_MOCK_KEYS))
            return
        tool = self.ns.lookup_tool(cx.scope, node.tool)
        self.note(cx.file, node.span, node.tool, tool, "f")
        if tool is not None:
            self.note(cx.file, node.span, node.fn, ("member", tool), ".")
        if tool is None:
            self.error("E037", f"unknown tool `{node.tool}`", node.span, cx.file)
        elif node.fn not in tool.fns:
            self.error("E036", f"tool `{node.tool}` has no function `{node.fn}`", node.span, cx.file,
                       hint=did_you_mean(node.fn, tool.fns))

    # ================================================================ calls
    def e_Call(self, node: A.Call, cx: Body, lc: Locals, expected: Any) -> T.Type:
        fn = node.fn
        node.ref = None
        if isinstance(fn, A.Name) and lc.find(fn.name) is None:
            t = self.named_call(node, fn, cx, lc, expected)
            self.note(cx.file, fn.span, fn.name, node.ref)
            return t
        if isinstance(fn, A.VariantPath):
            ref = node.ref = names.path_variant(self, fn.enum_name, fn.variant, fn.span, cx)
            names.note_variant(self, fn.enum_name, fn.variant, fn.span, ref, cx, "t")
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
                names.check_turbofish_absent(self, fn, f"`{name}`", cx)
                return self.call_value(entity.info, node, cx, lc)
            if entity.kind != "error":
                self.error("E021", f"`{name}` is a {entity.kind}, not a function", fn.span, cx.file)
            self.skip_args(node, cx, lc)
            return ANY
        node.ref = BUILTIN
        if name in INTRINSICS or name in ASSERTIONS:
            return intrinsics.intrinsic(self, name, node, cx, lc, expected)
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
        ref = node.ref = names.bare_variant(self, name, fn.span, cx)
        if ref is not None:
            return self.construct(ref, fn, node, cx, lc, expected)
        names.unknown_name(self, name, fn.span, cx, lc)
        self.skip_args(node, cx, lc)
        return ANY

    def call_sig(self, sig: FnSig, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        fn = node.fn
        if sig.fails:
            agentexprs.require_covered(self, f"call `{sig.name}`", fn.span, cx, f"{sig.name}(…)")
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
                        bindings[hole] = self.ns.resolve_type(texpr, cx.scope, cx.tparams)
        elif targs:
            names.check_turbofish_absent(self, fn, what, cx)
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
        payload, result, bindings, _ = names.instantiate_variant(self, ref, getattr(fn, "targs", None), fn.span, cx)
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
                tool = self.ns.builtin_tool(obj.name)
                if tool is not None:
                    self.note_tool_member(obj, fa, tool, cx)
                    return self.tool_call(tool, obj.name, fa, node, cx, lc)
                if not self.prelude_value(obj.name) and names.bare_variant(self, obj.name, obj.span, cx) is None:
                    known = names.value_candidates(self, cx, lc) | {t for t in self.prelude.tools
                                                                    if self.ns.builtin_tool(t)}
                    self.error("E037", f"unknown tool `{obj.name}`", obj.span, cx.file,
                               hint=did_you_mean(obj.name, known))
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
        agentexprs.require_covered(self, f"call `{shown}`", fa.span, cx, f"{shown}(…)")
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


# The visitor's dispatch: the class name of an expression node -> the method of `Checker`, or the helper function
# taking the checker, that types it.
_EXPRESSIONS: dict[str, Callable[..., T.Type]] = {
    **{name[2:]: fn for name, fn in vars(Checker).items() if name.startswith("e_")},
    "AwaitExpr": agentexprs.e_AwaitExpr, "SummonExpr": agentexprs.e_SummonExpr, "SendExpr": agentexprs.e_SendExpr,
    "ReceiveExpr": agentexprs.e_ReceiveExpr, "ReplyExpr": agentexprs.e_ReplyExpr,
    "YieldExpr": agentexprs.e_YieldExpr, "TraceExpr": agentexprs.e_TraceExpr, "RetryExpr": agentexprs.e_RetryExpr,
    "DivineExpr": tooluse.e_DivineExpr, "MatchExpr": patterns.e_MatchExpr,
}


def is_deny(value: Any) -> bool:
    """`deny("reason")` in `mock approve -> deny("reason");`: a word of that statement only."""
    return isinstance(value, A.Call) and isinstance(value.fn, A.Name) and value.fn.name == "deny"
