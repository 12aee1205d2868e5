"""What a `divine(p, tools: [...])` offers the model (SPEC §4.12): the functions, their model-facing names, and
the `tools` array built from them in the dialect of the provider (SPEC §4.12, §4.13).

A function is a typed or built-in tool function (`Tool.fn`, with its Sage parameter types) or one tool of a
dynamic MCP connection (its listing object). Names are `<Tool>__<fn>` / `<server>__<tool>`, every character
outside `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters, and made unique in offer order with `_2`,
`_3`, …. The definitions (descriptions and dialectized parameter schemas) are built only when a request
goes to a real model: a scripted or offline model needs the names alone, so a test never starts a server to
read a description.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ..core import types as T
from ..core.convert import json_schema

NAME_LIMIT = 64
_OUTSIDE_NAME = re.compile(r"[^A-Za-z0-9_-]")

# (tool block, remote name) -> the server's description of that tool, or None
RemoteDescription = Callable[[str, str], "str | None"]


class OfferedFunction:
    """One function the model may call, named `base_name` before the Offer makes names unique; `info` is
    the call site the loop performs (the checker's `ToolRef` of a typed or built-in function); `handle`, `server`
    and `listing` describe a tool of a dynamic connection instead. Compiled once per `divine` site and
    shared by its calls: never changed after construction."""

    __slots__ = ("base_name", "info", "param_types", "doc", "handle", "server", "listing")

    def __init__(self, base_name: str, info: Any = None, param_types: list[T.Type] | None = None,
                 doc: str | None = None, handle: str | None = None, server: str | None = None,
                 listing: dict | None = None) -> None:
        self.base_name = base_name
        self.info = info
        self.param_types = param_types or []
        self.doc = doc
        self.handle = handle
        self.server = server
        self.listing = listing

    @classmethod
    def typed(cls, info: Any, param_types: list[T.Type], doc: str | None) -> "OfferedFunction":
        return cls(f"{info.tool}__{info.fn}", info, param_types, doc)

    @classmethod
    def dynamic(cls, handle: str, server: str, listing: dict) -> "OfferedFunction":
        return cls(f"{server}__{listing['name']}", handle=handle, server=server, listing=listing)

    @property
    def remote(self) -> str:
        """The name of a dynamic connection's tool."""
        return self.listing["name"]

    @property
    def label(self) -> str:
        return self.info.label if self.info is not None else f"{self.server}.{self.remote}"

    def dialected(self, dialect: Any) -> Any:
        """The parameter schema in `dialect` (a module with `dialectize` and `tool`: sagepy.llm.dialect for
        chat completions, sagepy.llm.anthropic_dialect for the Messages API)."""
        if self.info is None:
            return dialect.dialectize(self.listing.get("inputSchema"), from_server=True)
        record = T.RecordInfo(self.info.label, [], list(zip(self.info.params, self.param_types)))
        return dialect.dialectize(json_schema(T.RecordT(record)), from_server=False)

    def definition(self, name: str, dialect: Any, dialected: Any, remote_description: RemoteDescription) -> dict:
        """The provider's tool for this function (SPEC §4.12 "What the model sees", §4.13)."""
        if self.info is None:
            description = self.listing.get("description") or None
        else:
            description = self.doc
            if description is None and not self.info.builtin:
                description = remote_description(self.info.tool, self.info.remote)
        return dialect.tool(name, description, dialected)


class Offer:
    """The functions of one `divine`, by model-facing name. Dynamic connections are listed again before each
    turn (`refresh`): the MCP manager keeps each listing until the server says its tools changed."""

    def __init__(self, static: list[OfferedFunction], handles: list[str],
                 list_handle: Callable[[str], list[OfferedFunction]], remote_description: RemoteDescription,
                 dialect: Any = None) -> None:
        if dialect is None:
            from . import dialect
        self.dialect = dialect
        self._static = static
        self._handles = handles
        self._list_handle = list_handle
        self._remote_description = remote_description
        self.functions: list[OfferedFunction] = []
        self.names: list[str] = []
        self._by_name: dict[str, OfferedFunction] = {}
        self._definitions: dict[Any, list[dict]] = {}   # dialect module -> the tools array in it
        self._dialects: dict[tuple, Any] = {}   # (id(function), dialect) -> its Dialected, for those offered now
        self._listed: list[list[dict]] | None = None
        self.refresh()

    def refresh(self) -> None:
        """Take the current tool lists of the dynamic connections; names are given again if they changed."""
        dynamic = [self._list_handle(handle) for handle in self._handles]
        listed = [[f.listing for f in functions] for functions in dynamic]
        if listed == self._listed:
            return
        self._listed = listed
        self.functions = [*self._static, *(f for functions in dynamic for f in functions)]
        self.names = unique_names([f.base_name for f in self.functions])
        self._by_name = dict(zip(self.names, self.functions))
        self._definitions = {}
        # kept for the functions still offered (new listing objects were made while the old were alive: their
        # ids cannot collide with a kept entry)
        offered = {id(f) for f in self.functions}
        self._dialects = {key: d for key, d in self._dialects.items() if key[0] in offered}

    def get(self, name: Any) -> OfferedFunction | None:
        return self._by_name.get(name) if isinstance(name, str) else None

    def name_of(self, tool: str, fn: str) -> str | None:
        """The model-facing name of typed or built-in function `tool.fn`, if it is offered."""
        return next((name for name, f in zip(self.names, self.functions)
                     if f.info is not None and f.info.tool == tool and f.info.fn == fn), None)

    def dialected(self, function: OfferedFunction, dialect: Any = None) -> Any:
        dialect = dialect or self.dialect
        key = (id(function), dialect)
        known = self._dialects.get(key)
        if known is None:
            known = self._dialects[key] = function.dialected(dialect)
        return known

    def definitions(self, dialect: Any = None) -> list[dict]:
        """The tools array in `dialect` (default: the offer's own); a turn sent to another provider than the
        configured one (`divine(p, model: "anthropic:…")`, a fallback, SPEC §23) asks for that provider's."""
        dialect = dialect or self.dialect
        known = self._definitions.get(dialect)
        if known is None:
            known = self._definitions[dialect] = [
                f.definition(name, dialect, self.dialected(f, dialect), self._remote_description)
                for name, f in zip(self.names, self.functions)]
        return known


def model_name(base: str) -> str:
    return _OUTSIDE_NAME.sub("_", base)[:NAME_LIMIT]


def unique_names(bases: list[str]) -> list[str]:
    """Model-facing names for `bases`, in order: sanitized, cut, and suffixed `_2`, `_3`, … when taken."""
    taken: set[str] = set()
    names = []
    for base in bases:
        name = model_name(base)
        n = 1
        candidate = name
        while candidate in taken:
            n += 1
            suffix = f"_{n}"
            candidate = name[:NAME_LIMIT - len(suffix)] + suffix
        taken.add(candidate)
        names.append(candidate)
    return names
