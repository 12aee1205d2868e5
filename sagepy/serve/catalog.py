"""The tools `sage serve` offers (SPEC §21): one per `#[mcp_tool]` agent, with the schemas and the annotations
the checker's analysis derives (sagepy.check.served), given the safety class of every call an agent can make —
built-in tools (§7) and file builtins by their fixed classes, MCP tools by their servers' listings (§8.6),
taken once, when the catalogue is built.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..check.served import Call, ServedAgent, annotations, served_agents, served_elsewhere

if TYPE_CHECKING:
    from ..settings import Settings

class Catalogue:
    """The served tools in declaration order, each as its `ServedAgent` and its wire definition (the object
    `tools/list` returns, MCP spelling)."""

    def __init__(self, served: list[ServedAgent], definitions: list[dict]) -> None:
        self.served = {s.name: s for s in served}
        self.definitions = definitions

    def tools(self) -> list:
        """The SDK's `Tool` objects of the definitions (what the server lists)."""
        import mcp_types
        return [mcp_types.Tool.model_validate(d) for d in self.definitions]

    def listing(self) -> dict:
        """What `sage serve --list` prints: `{"tools": [...]}`, each tool as the server sends it."""
        return {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in self.tools()]}


def build_catalogue(root: Any, settings: Settings, notes: list[str]) -> Catalogue:
    """The catalogue of a checked program, from its entry module `root`. Each MCP server a served agent reaches
    is listed once (failures make its tools `destructive` and are appended to `notes` as one line each)."""
    served = served_agents(root)
    for decl in served_elsewhere(_submodules(root)):
        notes.append(f"warning: agent {decl.name} is marked #[mcp_tool = \"{decl.attrs[0].value}\"] but is not "
                     "declared in the entry file: only the entry file's agents are served")
    classes = _mcp_classes(served, settings, notes)

    def safety(call: Call) -> str | None:
        if call.tool is None:
            from ..effect_builtins import EFFECT_BUILTINS
            builtin = EFFECT_BUILTINS.get(call.builtin or "")
            if builtin is None:   # not an effect
                return None
            return builtin.safety or "destructive"   # None: the class of a tool known only at run time
        if call.tool.builtin:
            from ..tools import SAFETY
            return SAFETY.get((call.tool.tool, call.tool.fn), "destructive")
        return classes.get((call.tool.server, call.tool.remote), "destructive")

    definitions = [definition(s, annotations(s, safety)) for s in served]
    return Catalogue(served, definitions)


def definition(served: ServedAgent, hints: dict) -> dict:
    tool: dict[str, Any] = {"name": served.name, "title": served.agent.name}
    if served.description:
        tool["description"] = served.description
    tool["inputSchema"] = served.input_schema
    if served.output_schema is not None:
        tool["outputSchema"] = served.output_schema
    tool["annotations"] = hints
    return tool


def _mcp_classes(served: list[ServedAgent], settings: Settings, notes: list[str]) -> dict[tuple, str]:
    """(server, remote name) -> safety class, from one listing of each server a served agent calls."""
    servers = sorted({call.tool.server for s in served for call in s.reach.calls.values()
                      if call.tool is not None and not call.tool.builtin and call.tool.server is not None})
    if not servers:
        return {}
    from ..mcp.failures import McpFailure
    from ..mcp.pool import ConnectionPool
    configs = {name: settings.tools.servers[name] for name in servers if name in settings.tools.servers}
    pool = ConnectionPool(settings.root, configs, settings.mcp)
    classes: dict[tuple, str] = {}
    try:
        for name, config in configs.items():
            classes.update(((name, remote), override) for remote, override in config.safety.items())
            try:
                listing = pool.describe(name)
            except McpFailure as failure:
                notes.append(f"warning: [tools.{name}] could not be listed (MCP {failure.sub_kind}: {failure}); "
                             f"its tools without a [tools.{name}.safety] entry count as destructive")
                continue
            classes.update(((name, tool["name"]), tool["safety"]) for tool in listing["tools"])
    finally:
        pool.close_all()
    return classes


def _submodules(root: Any) -> list[Any]:
    found, stack = [], list((root.children or {}).values())
    while stack:
        module = stack.pop()
        if module is not root and module not in found:
            found.append(module)
            stack.extend((module.children or {}).values())
    return found
