"""Tool use by the model (SPEC §4.12): `divine`/`infer` and their options, and the `mock divine -> call …` form.

`divine(p [-> T], tools: [...], max_steps: n, model: m)`: the options are checked here (E064; `model` is a
`String` expression naming the model of that call, SPEC §23), each tool reference in
`tools:` by the rules of a direct call (E036, E037, E038; E065 for a function whose types have no JSON form),
and the checked references are recorded on the node (`offered`: a `ToolRef` per offered function, or the
expression of a dynamic `String` handle) for the runtime.

`mock divine -> call T.f(a), …;` is checked like the direct calls it stands for (E036, E037, E039, E018), in a
test block, where no `use` is needed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..diagnostics import did_you_mean
from ..syntax import ast as A
from . import agentexprs, names
from .body import Body, Locals
from .symbols import ToolInfo, ToolRef
from .typeops import fits, is_open, show

if TYPE_CHECKING:
    from .context import Checking

OPTIONS = ("tools", "max_steps", "model")


def json_less(t: T.Type, seen: frozenset = frozenset()) -> T.Type | None:
    """The part of `t` that has no JSON form (SPEC §5: functions and agent handles), or None. `seen` holds the
    records and enums being looked into, so that a recursive type ends."""
    if isinstance(t, (T.FnT, T.AgentT)):
        return t
    if isinstance(t, (T.RecordT, T.EnumT)):
        key = t._key()
        if key in seen:
            return None
        seen = seen | {key}
        parts = [f for _, f in t.fields()] if isinstance(t, T.RecordT) else [p for _, p in t.variants() if p]
    elif isinstance(t, T.ListT):
        parts = [t.elem]
    elif isinstance(t, T.OptionT):
        parts = [t.inner]
    elif isinstance(t, T.MapT):
        parts = [t.value]
    elif isinstance(t, T.ResultT):
        parts = [t.ok, t.err]
    elif isinstance(t, T.TupleT):
        parts = list(t.items)
    else:
        return None
    for part in parts:
        bad = json_less(part, seen)
        if bad is not None:
            return bad
    return None


def e_DivineExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    word = "infer" if node.infer else "divine"
    agentexprs.require_covered(c, f"call `{word}`", node.span, cx, f"{word}(…)")
    c.expect(node.prompt, T.STRING, cx, lc)
    node.target = T.STRING if node.type is None else c.ns.resolve_type(node.type, cx.scope, cx.tparams)
    node.offered = None
    node.max_steps = None
    node.model = None
    given: dict[str, Any] = {}
    for option in node.options:
        if option.name not in OPTIONS:
            c.error("E064", f"`{word}` has no option `{option.name}`", option.span, cx.file,
                    hint=did_you_mean(option.name, OPTIONS) or "its options are `tools`, `max_steps` and `model`")
            continue
        if option.name in given:
            c.error("E064", f"option `{option.name}` given twice", option.span, cx.file)
            continue
        given[option.name] = option
    steps = given.get("max_steps")
    if steps is not None:
        c.expect(steps.value, T.INT, cx, lc)
        node.max_steps = steps.value
        if "tools" not in given:
            c.error("E064", "`max_steps` without `tools`", steps.span, cx.file,
                    hint="offer the model tools with `tools: [...]`, or leave `max_steps` out")
    model = given.get("model")
    if model is not None:
        c.expect(model.value, T.STRING, cx, lc)
        node.model = model.value
    tools = given.get("tools")
    if tools is not None:
        node.offered = offered_tools(c, tools, word, cx, lc)
    return node.target


# ---------------------------------------------------------------- `tools: [...]`
def offered_tools(c: Checking, option: Any, word: str, cx: Body, lc: Locals) -> list:
    listing = option.value
    if not isinstance(listing, A.ListLit):
        c.error("E064", "`tools` takes a list of tools written out: `tools: [T, T.f, handle]`",
                listing.span, cx.file)
        c.expr(listing, cx, lc)
        return []
    if not listing.items:
        c.error("E064", "empty `tools` list", listing.span, cx.file,
                hint=f"offer at least one tool, or leave `tools` out for a plain `{word}`")
        return []
    offered: list = []
    seen: set[tuple[str, str]] = set()
    for entry in listing.items:
        refs = tool_reference(c, entry, cx, lc)
        if refs is None:
            continue
        if isinstance(refs, list):
            for ref in refs:
                key = (ref.tool, ref.fn)
                if key in seen:
                    c.error("E064", f"`{ref.tool}.{ref.fn}` is offered twice", entry.span, cx.file)
                    continue
                seen.add(key)
                offered.append(ref)
        else:
            offered.append(refs)
    return offered


def tool_reference(c: Checking, entry: Any, cx: Body, lc: Locals) -> Any:
    """A list of ToolRefs for `T` or `T.f`, the expression itself for a `String` handle, or None after an
    error."""
    if isinstance(entry, A.Name) and lc.find(entry.name) is None:
        tool = named_tool(c, entry.name, entry.span, cx, lc)
        if isinstance(tool, ToolInfo):
            c.note(cx.file, entry.span, entry.name, tool)
        if tool is not None:
            return offer(c, tool, entry.name, list(tool.fns), entry.span, cx) if tool is not True else None
    elif isinstance(entry, A.FieldAccess) and isinstance(entry.obj, A.Name) and lc.find(entry.obj.name) is None:
        tool = named_tool(c, entry.obj.name, entry.obj.span, cx, lc)
        if tool is True:
            return None
        if tool is not None:
            c.note_tool_member(entry.obj, entry, tool, cx)
            if entry.name not in tool.fns:
                c.error("E036", f"tool `{entry.obj.name}` has no function `{entry.name}`", entry.span,
                        cx.file, hint=did_you_mean(entry.name, tool.fns))
                return None
            return offer(c, tool, entry.obj.name, [entry.name], entry.span, cx)
    t = c.expr(entry, cx, lc)
    if is_open(t):
        return None
    if not fits(T.STRING, t):
        c.error("E064", f"a `tools` entry must be a tool, a tool function or a String handle from "
                f"`mcp_connect`, found {show(t)}", entry.span, cx.file)
        return None
    return entry


def named_tool(c: Checking, name: str, span: tuple, cx: Body, lc: Locals) -> ToolInfo | bool | None:
    """The tool a bare name in `tools:` denotes; True when it denotes nothing (E037 reported); None when
    it names a value (an expression, typed by the caller)."""
    entity = cx.scope.lookup(name)
    if entity is not None:
        return entity.info if entity.kind == "tool" else (True if entity.kind == "error" else None)
    tool = c.ns.builtin_tool(name)
    if tool is not None:
        return tool
    if c.prelude_value(name):
        return None
    known = names.value_candidates(c, cx, lc) | {t for t in c.prelude.tools if c.ns.builtin_tool(t)}
    c.error("E037", f"unknown tool `{name}`", span, cx.file, hint=did_you_mean(name, known))
    return True


def offer(c: Checking, tool: ToolInfo, name: str, fns: list[str], span: tuple, cx: Body) -> list[ToolRef]:
    allowed = cx.tool_context()
    if allowed is None:
        c.error("E038", f"tool `{name}` offered to the model outside agent handlers and test blocks", span,
                cx.file, hint=f"offer tools from an agent that declares `use {name}`, or from a test")
    elif allowed != "any" and name not in allowed:
        c.error("E038", f"agent `{cx.agent.name}` offers tool `{name}` without `use {name}`", span,
                cx.file, hint=f"add `use {name}` to agent `{cx.agent.name}`")
    refs = []
    for fn in fns:
        sig = tool.fns[fn]
        for pname, ptype in [*sig.params, ("", sig.ret)]:
            bad = json_less(ptype)
            if bad is not None:
                where = f"parameter `{pname}`" if pname else "return type"
                within = "which" if bad == ptype else f"and {show(bad)}"
                c.error("E065", f"`{name}.{fn}` cannot be offered to the model: its {where} has type "
                        f"{show(ptype)}, {within} has no JSON form", span, cx.file,
                        hint="offer the other functions one by one (`tools: [T.f, …]`)")
                break
        else:
            refs.append(ToolRef.of(tool, fn))
    return refs


# ---------------------------------------------------------------- `mock divine -> call T.f(…), …`
def mock_calls(c: Checking, value: Any, cx: Body, lc: Locals) -> None:
    saved = cx.covered
    cx.covered = True   # a scripted call is not performed here: nothing to cover
    try:
        for call in value.calls:
            obj = call.fn.obj
            if lc.find(obj.name) is not None:
                c.error("E037", f"`{obj.name}` is a variable, not a tool", obj.span, cx.file)
                c.skip_args(call, cx, lc)
                continue
            c.expr(call, cx, lc)
            if not isinstance(call.ref, ToolRef) and call.ref is not None:
                c.error("E037", f"`{obj.name}` is not a tool", obj.span, cx.file)
    finally:
        cx.covered = saved
