"""What names denote: module-level entities and the signatures the checker keeps for them.

An `Entity` is one named item (function, constant, record, enum, agent, supervisor, tool, protocol, effect
handler, module, or a prelude builtin). Its `info` holds what the checker derived from the declaration: a
`FnSig`, a `RecordInfo`/`EnumInfo`, an `AgentInfo`, a `ToolInfo`, a constant's type, a `ModuleScope`.
"""
from __future__ import annotations

from typing import Any, Collection, Iterator, Protocol

from ..binding import AmbiguousBinding, bound_key
from ..core.types import Type


class Entity:
    """kind: fn, const, record, enum, agent, supervisor, tool, protocol, handler, module, or error (a failed
    import, already reported)."""

    __slots__ = ("kind", "name", "decl", "scope", "pub", "info")

    def __init__(self, kind: str, name: str, decl: Any, scope: Any, pub: bool, info: Any = None) -> None:
        self.kind = kind
        self.name = name
        self.decl = decl
        self.scope = scope
        self.pub = pub
        self.info = info


class FnSig:
    """A function's signature; type parameters appear as `TypeVar`s in params and ret."""

    __slots__ = ("name", "tparams", "params", "ret", "fails", "span")

    def __init__(self, name: str, tparams: list[str], params: list[tuple[str, Type]], ret: Type, fails: bool,
                 span: tuple | None) -> None:
        self.name = name
        self.tparams = tparams
        self.params = params
        self.ret = ret
        self.fails = fails
        self.span = span


class ToolInfo:
    """A tool block (or built-in tool): its functions by Sage name, the name each has on the server (its
    `#[mcp_name]`, else its Sage name) and the `///` doc comment of each function that has one (what the model
    is shown, SPEC §4.12). `server` is the `[tools.X]` key a tool block's calls go to, bound once by the
    checker (SPEC §8.1; the block's own name when no key matches, so that its calls fail with `no
    [tools.X] entry`); None for a built-in tool."""

    __slots__ = ("name", "fns", "builtin", "remotes", "docs", "server")

    def __init__(self, name: str, fns: dict[str, FnSig], builtin: bool, remotes: dict[str, str],
                 docs: dict[str, str] | None = None, server: str | None = None) -> None:
        self.name = name
        self.fns = fns
        self.builtin = builtin
        self.remotes = remotes
        self.docs = docs or {}
        self.server = server


def remote_name(fn: Any) -> str:
    """The server-side name of a tool function declaration."""
    return next((a.value for a in fn.attrs if a.name == "mcp_name"), fn.name)


class ToolRef:
    """What a checked tool call `T.f(…)` resolves to (the annotation `Call.ref`), and all the runtime needs to
    perform it: `label` is `T.f`, `remote` the server's name of the function (`#[mcp_name]`), `params` and
    `param_types` the declared parameters, `server` the `[tools.X]` key its calls go to (`ToolInfo.server`).
    `dynamic` describes a tool of a dynamic MCP connection that a model asked for (SPEC §4.12), which has
    no declaration."""

    __slots__ = ("tool", "fn", "remote", "params", "param_types", "ret", "builtin", "doc", "label", "server")

    def __init__(self, tool: str, fn: str, remote: str, params: list[str], param_types: list[Type], ret: Type,
                 builtin: bool, doc: str | None = None, server: str | None = None) -> None:
        self.tool = tool
        self.fn = fn
        self.remote = remote
        self.params = params
        self.param_types = param_types
        self.ret = ret
        self.builtin = builtin
        self.doc = doc
        self.label = f"{tool}.{fn}"
        self.server = server

    @classmethod
    def of(cls, tool: ToolInfo, fn: str) -> "ToolRef":
        """The reference to function `fn` of the tool block `tool`."""
        sig = tool.fns[fn]
        return cls(tool.name, fn, tool.remotes.get(fn, fn), [name for name, _ in sig.params],
                   [t for _, t in sig.params], sig.ret, tool.builtin, tool.docs.get(fn), tool.server)

    @classmethod
    def dynamic(cls, server: str, remote: str, ret: Type) -> "ToolRef":
        return cls(server, remote, remote, [], [], ret, False)


class ToolTables(Protocol):
    """The `[tools.X]` tables the checker binds tool blocks to (sagepy.settings.ToolSettings): their keys,
    and the binding of a block (sagepy.binding's rule) with the E090 diagnostic of an ambiguous one."""

    def __contains__(self, name: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def binding(self, name: str) -> tuple[str | None, Any]: ...


class TableKeys:
    """Bare `[tools.X]` keys as ToolTables (a check without grove.toml's file: no place to point E090 at)."""

    def __init__(self, keys: Collection[str]) -> None:
        self.keys = keys

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys)

    def binding(self, name: str) -> tuple[str | None, Any]:
        try:
            return bound_key(name, self.keys), None
        except AmbiguousBinding:
            return None, None


class FieldInfo:
    __slots__ = ("name", "type", "persistent", "decl")

    def __init__(self, name: str, type_: Type, persistent: bool, decl: Any) -> None:
        self.name = name
        self.type = type_
        self.persistent = persistent
        self.decl = decl


class AgentInfo:
    """An agent: its fields, what it receives, and its result type (the type of its `yield`s, §3.5).

    The result type is known only after its handlers are checked; `await` may need it earlier (an agent
    declared later, or one whose handlers were not reached yet), so handlers are checked on demand and
    `state` guards against cycles: new -> checking -> done."""

    __slots__ = ("name", "decl", "scope", "fields", "receives", "message_types", "result", "state", "reads",
                 "result_span")

    def __init__(self, name: str, decl: Any, scope: Any) -> None:
        self.name = name
        self.decl = decl
        self.scope = scope
        self.fields: dict[str, FieldInfo] = {}
        self.receives: Type | None = None
        self.message_types: list[Type] = []
        self.result: Type | None = None
        self.state = "new"
        self.reads: set[str] = set()
        self.result_span: tuple | None = None
