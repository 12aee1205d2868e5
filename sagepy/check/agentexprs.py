"""Agents, messages and `retry` in expressions (SPEC §3.4, §3.5); `divine` is in tooluse.py.

Fallible operations (`await`, `send`, `divine`/`infer`, `retry`, tool calls, `fails` calls, fallible builtins)
must lie under a `try` operand, in the left operand of a `catch`, or in the argument of `assert_fails`: that is
`Body.covered` (E013). Whether `try`/`fail` may be written at all is a property of the body (E014/E016).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..diagnostics import did_you_mean
from .body import Body, Locals
from .hints import field_hint
from .typeops import ANY, NEVER, fits, is_open, merge, show

if TYPE_CHECKING:
    from .context import Checking

ERROR_KINDS = ("Llm", "Agent", "Runtime", "Tool", "Mcp", "User", "Protocol", "Timeout")


def require_covered(c: Checking, what: str, span: tuple, cx: Body, shown: str | None = None) -> None:
    if cx.update_fn:
        c.error("E066", f"fallible {what} inside the function given to `update`", span, cx.file,
                hint="`update` runs its function inside the store's transaction: do the fallible work "
                     "before and use its result in the function")
        return
    if cx.covered:
        return
    c.error("E013", f"fallible {what} must be covered by `try` or `catch`", span, cx.file,
            hint=f"write `try {shown or '…'}`, or add `catch {{ … }}`")


def e_AwaitExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    require_covered(c, "operation `await`", node.span, cx, "await …")
    t = c.expr(node.expr, cx, lc)
    if node.timeout is not None:
        c.expect(node.timeout, T.INT, cx, lc)
    if isinstance(t, T.AgentT):
        return agent_result(c, t.name)
    if not is_open(t):
        c.error("E033", f"`await` needs an agent handle, found {show(t)}", node.expr.span, cx.file)
    return ANY


def agent_result(c: Checking, name: str) -> T.Type:
    """The result type of agent `name`: the type of its `yield`s, or Unit (§3.5). Its handlers are checked
    now if they were not yet, so the declaration order does not matter."""
    agent = c.ns.agents.get(name)
    if agent is None:
        return ANY
    if agent.state == "new":
        c.check_agent(agent)
    if agent.state == "checking":
        return ANY
    return agent.result if agent.result is not None else T.UNIT


def e_SummonExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    entity = cx.scope.lookup(node.agent)
    c.note(cx.file, node.span, node.agent, entity, "f")
    if entity is not None and entity.kind == "error":
        c.skip_fields(node.fields, cx, lc)
        return ANY
    if entity is None or entity.kind != "agent":
        what = f"`{node.agent}` is a {entity.kind}, not an agent" if entity else f"unknown agent `{node.agent}`"
        agents = [n for n, e in list(cx.scope.items.items()) + list(cx.scope.imports.items()) if e.kind == "agent"]
        c.error("E011", what, node.span, cx.file, hint=None if entity else did_you_mean(node.agent, agents))
        c.skip_fields(node.fields, cx, lc)
        return ANY
    agent = node.ref = entity.info
    check_field_inits(c, agent, node.fields, node.span, cx, lc, "E032", f"summon `{agent.name}`")
    return T.AgentT(agent.name)


def check_field_inits(c: Checking, agent: Any, fields: list, span: tuple, cx: Body, lc: Locals, code: str,
                      what: str) -> None:
    """`summon A { … }` and supervisor children: every non-persistent field exactly once, a persistent one at
    most once (its starting value when the store holds none, SPEC §4.8), nothing else."""
    given: set[str] = set()
    for fname, value, fspan in fields:
        c.note(cx.file, fspan, fname, ("self", agent))
        field = agent.fields.get(fname)
        if field is None:
            c.error(code, f"agent `{agent.name}` has no field `{fname}`", fspan, cx.file,
                    hint=field_hint(fname, agent.fields, f"agent `{agent.name}`"))
            c.expr(value, cx, lc)
            continue
        if fname in given:
            c.error(code, f"field `{fname}` given twice", fspan, cx.file)
        given.add(fname)
        c.expect(value, field.type, cx, lc)
    missing = [f.name for f in agent.fields.values() if not f.persistent and f.name not in given]
    if missing:
        c.error(code, f"{what} is missing field(s) " + ", ".join(f"`{m}`" for m in missing), span, cx.file)


def e_SendExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    require_covered(c, "operation `send`", node.span, cx, "send(…)")
    t = c.expr(node.target, cx, lc)
    agent = c.ns.agents.get(t.name) if isinstance(t, T.AgentT) else None
    accepted: list[T.Type] = []
    if agent is not None:
        accepted = list(agent.message_types) + ([agent.receives] if agent.receives is not None else [])
    m = c.expr(node.message, cx, lc, accepted[0] if len(accepted) == 1 else None)
    if agent is None:
        if not is_open(t) and not isinstance(t, T.AgentT):
            c.error("E033", f"`send` needs an agent handle, found {show(t)}", node.target.span, cx.file)
        return T.UNIT
    if not any(fits(a, m) for a in accepted):
        hint = ("declare `on message(m: " + show(m) + ")` or `receives " + show(m) + "`") if not accepted else \
            "it accepts " + ", ".join(show(a) for a in accepted)
        c.error("E035", f"agent `{agent.name}` cannot receive a message of type {show(m)}", node.message.span,
                cx.file, hint=hint)
    return T.UNIT


def e_ReceiveExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    if cx.agent is None or cx.agent.receives is None:
        c.error("E035", "`receive()` is only allowed in handlers of an agent declared with `receives T`",
                node.span, cx.file)
        return ANY
    return cx.agent.receives


def e_ReplyExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    if cx.handler != "message":
        c.error("E073", "`reply` outside `on message`", node.span, cx.file)
    c.expr(node.value, cx, lc)
    return T.UNIT


def e_YieldExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    agent = cx.agent
    if agent is None:
        c.error("E024", "`yield` outside an agent handler", node.span, cx.file)
        c.expr(node.value, cx, lc)
        return NEVER
    if cx.stop:
        c.error("E017", "`yield` inside `on stop`/`on resting` (the result is already fixed)", node.span,
                cx.file)
    t = c.expr(node.value, cx, lc, agent.result)
    if agent.result is None:
        agent.result = t
    elif not fits(agent.result, t):
        c.error("E018", f"type mismatch: expected {show(agent.result)}, found {show(t)}", node.value.span,
                cx.file, hint=f"every `yield` of agent `{agent.name}` must give the same type")
    else:
        agent.result = merge(agent.result, t)
    return NEVER


def e_TraceExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    c.expr(node.value, cx, lc)
    return T.UNIT


def e_RetryExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    require_covered(c, "operation `retry`", node.span, cx, "retry(…) { … }")
    c.expect(node.count, T.INT, cx, lc)
    if node.delay is not None:
        c.expect(node.delay, T.INT, cx, lc)
    for kind in node.kinds or ():
        if kind not in ERROR_KINDS:
            c.error("E010", f"unknown error kind `{kind}`", node.span, cx.file,
                    hint=did_you_mean(kind, ERROR_KINDS))
    saved = (cx.fallible, cx.stop)
    cx.fallible, cx.stop = True, False
    try:
        return c.block_type(node.body, cx, lc, expected)
    finally:
        cx.fallible, cx.stop = saved
