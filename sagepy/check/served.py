"""Served agents (SPEC §21): what `sage serve` offers as MCP tools, read off a checked program.

For each agent marked `#[mcp_tool = "name"]` (the checker has validated the attribute, E095): its parameters
(the non-persistent fields with their `///` docs), the input and output JSON Schemas (§5), and its *reach* —
everything it can do, transitively through the agents it summons and the functions it calls or passes
around: the tool functions it calls or offers to the model (typed MCP tools and built-in tools), the
builtins that act on the world (files, dynamic MCP), whether it uses `divine`, and whether it writes a
`@persistent` field. `annotations` turns a reach into the tool's MCP hints, given the safety class of each
call (§7, §8.6: built-in classes and server listings live above the checker, so the caller supplies them).

This runs on the AST the checker annotated (`Call.ref`, `Name.ref`, `SummonExpr.ref`, `DivineExpr.offered`);
it reports nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..core import types as T
from ..core.convert import json_schema
from ..syntax import ast as A
from .names import BUILTIN
from .symbols import AgentInfo, Entity, ToolRef
from .typeops import prim_named

_OPEN_WORLD_TOOLS = ("Http", "Shell")


class Call:
    """One kind of call an agent can make: a tool function (`tool` set: its `ToolRef`) or a builtin
    (`builtin`: its name). `key` identifies it for sets and for the caller's classes."""

    __slots__ = ("tool", "builtin", "key")

    def __init__(self, tool: ToolRef | None = None, builtin: str | None = None) -> None:
        self.tool = tool
        self.builtin = builtin
        self.key = (tool.tool, tool.fn, tool.server) if tool is not None else ("", builtin, None)

    @property
    def mcp(self) -> bool:
        """Whether this reaches an MCP server: a typed MCP tool function or a dynamic `mcp_*` builtin."""
        if self.tool is not None:
            return not self.tool.builtin
        from ..effect_builtins import EFFECT_BUILTINS, MCP
        builtin = EFFECT_BUILTINS.get(self.builtin or "")
        return builtin is not None and builtin.kind == MCP

    @property
    def label(self) -> str:
        return self.tool.label if self.tool is not None else str(self.builtin)


class Reach:
    """What an agent can do, with everything it summons and calls."""

    __slots__ = ("calls", "divine", "dynamic_tools", "writes_state", "agents")

    def __init__(self) -> None:
        self.calls: dict[tuple, Call] = {}
        self.divine = False            # it uses `divine` / `infer` (a model)
        self.dynamic_tools = False     # it offers a dynamic MCP handle's tools to the model
        self.writes_state = False      # it writes a `@persistent` field (`set`, `update`)
        self.agents: list[str] = []    # the agents reached, itself first


class ServedAgent:
    """One tool of `sage serve`: `name` (the MCP tool name), the agent, its description, its parameters
    as (field name, type, doc), the wire schemas and its reach."""

    __slots__ = ("name", "agent", "description", "params", "input_schema", "output_schema", "reach")

    def __init__(self, name: str, agent: AgentInfo) -> None:
        self.name = name
        self.agent = agent
        self.description: str | None = agent.decl.doc
        self.params = [(f.name, f.type, f.decl.doc) for f in agent.fields.values() if not f.persistent]
        self.input_schema = input_schema(self.params)
        self.output_schema = output_schema(self.result)
        self.reach = reach_of(agent)

    @property
    def result(self) -> T.Type:
        return self.agent.result if self.agent.result is not None else T.UNIT

    @property
    def text_result(self) -> bool:
        """A `String` result is answered as text, without structured content."""
        return prim_named(self.result, "String")


def served_agents(module: Any) -> list[ServedAgent]:
    """The `#[mcp_tool]` agents of a checked module without errors (the entry module: runs start agents
    declared there), in declaration order."""
    return [ServedAgent(item.attrs[0].value, item.info) for item in module.items
            if type(item) is A.AgentDecl and item.attrs and item.info is not None]


def served_elsewhere(modules: Iterable) -> list[Any]:
    """The `#[mcp_tool]` agent declarations of the other modules of a program (`sage serve` names them)."""
    return [item for module in modules for item in module.items if type(item) is A.AgentDecl and item.attrs]


def input_schema(params: list[tuple[str, T.Type, str | None]]) -> dict:
    """The tool's inputSchema: one property per parameter, required unless its type is `Option`."""
    properties: dict[str, dict] = {}
    for name, type_, doc in params:
        schema = json_schema(type_)
        if doc:
            schema = {**schema, "description": doc}
        properties[name] = schema
    required = [name for name, type_, _ in params if not isinstance(type_, T.OptionT)]
    return {"type": "object", "properties": properties, "required": required}


def output_schema(result: T.Type) -> dict | None:
    """The tool's outputSchema: the result wrapped as `{"result": …}`; none for a `String` result."""
    if prim_named(result, "String"):
        return None
    return {"type": "object", "properties": {"result": json_schema(result)}, "required": ["result"]}


def annotations(served: ServedAgent, safety: Callable[[Call], str | None]) -> dict:
    """The tool's MCP annotations (wire spelling), every hint stated: `safety(call)` gives each call's class
    (`read_only`, `idempotent`, `destructive`; None for a builtin that is no effect)."""
    reach = served.reach
    classes = [c for c in (safety(call) for call in reach.calls.values()) if c is not None]
    if reach.dynamic_tools:
        classes.append("destructive")   # a dynamic handle's tools are known only at run time
    open_world = reach.divine or reach.dynamic_tools or any(
        call.mcp or (call.tool is not None and call.tool.builtin and call.tool.tool in _OPEN_WORLD_TOOLS)
        for call in reach.calls.values())
    return {
        "title": served.agent.name,
        "readOnlyHint": all(c == "read_only" for c in classes) and not reach.writes_state,
        "destructiveHint": any(c == "destructive" for c in classes),
        "idempotentHint": all(c in ("read_only", "idempotent") for c in classes),
        "openWorldHint": open_world,
    }


def reach_of(agent: AgentInfo) -> Reach:
    """Walk the agent's handlers, and every agent and function they reach (each once), without recursion."""
    reach = Reach()
    seen: set[int] = set()
    work: list[tuple[Any, AgentInfo | None]] = []

    def enter(decl: Any, owner: AgentInfo | None) -> None:
        if id(decl) not in seen:
            seen.add(id(decl))
            work.append((decl, owner))

    enter(agent.decl, agent)
    while work:
        decl, owner = work.pop(0)
        if type(decl) is A.AgentDecl:
            reach.agents.append(decl.name)
            roots: Iterable = [h.body for h in decl.handlers]
        else:
            roots = [decl.body]
        for node in _nodes(roots):
            kind = type(node)
            if kind is A.Call:
                _call(node, owner, reach, enter)
            elif kind is A.Name:
                ref = node.ref
                if isinstance(ref, Entity) and ref.kind == "fn" and not ref.decl.extern:
                    enter(ref.decl, None)
            elif kind is A.SummonExpr:
                if isinstance(node.ref, AgentInfo):
                    enter(node.ref.decl, node.ref)
            elif kind is A.DivineExpr:
                reach.divine = True
                for offered in node.offered or ():
                    if isinstance(offered, ToolRef):
                        _add(reach, Call(tool=offered))
                    else:
                        reach.dynamic_tools = True
    return reach


def _call(node: Any, owner: AgentInfo | None, reach: Reach, enter: Callable) -> None:
    ref = node.ref
    if isinstance(ref, ToolRef):
        _add(reach, Call(tool=ref))
    elif ref is BUILTIN and type(node.fn) is A.Name:   # the caller's classes say which builtins are effects
        _add(reach, Call(builtin=node.fn.name))
    elif isinstance(ref, Entity) and ref.kind == "fn" and not ref.decl.extern:
        enter(ref.decl, None)
    fn = node.fn
    if owner is not None and type(fn) is A.FieldAccess and fn.name in ("set", "update") \
            and type(fn.obj) is A.FieldAccess and type(fn.obj.obj) is A.SelfExpr:
        field = owner.fields.get(fn.obj.name)
        if field is not None and field.persistent:
            reach.writes_state = True


def _add(reach: Reach, call: Call) -> None:
    reach.calls.setdefault(call.key, call)


def _nodes(roots: Iterable) -> Iterable:
    """Every AST node under `roots` (lists, tuples and nodes), depth first, without recursion."""
    stack = list(roots)
    while stack:
        value = stack.pop()
        if isinstance(value, A.Node):
            yield value
            stack.extend(getattr(value, f, None) for f in value._fields)
        elif type(value) in (list, tuple):
            stack.extend(value)
