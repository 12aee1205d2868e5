"""The builtins that are effects steps (SPEC §6.1, §8.5, §8.11, §14), each described once.

The checker, the compiler, the boundary, the mocks layer, the journal's grouping and the real layer all read
this table; none keeps a list of its own. A builtin's Sage signature is its `extern fn` declaration in
`stdlib/io.sg` or `stdlib/mcp.sg`; what is said here is how its calls go through the effects chain:

- `kind`: `io` (the clock, stdin, the environment, files, sleeping, asking a person) or `mcp` (dynamic MCP);
- `safety`: its class (SPEC §7, §14), known before the call; None for `mcp_call`, whose class is the called
  tool's, read from its server's listing;
- `mock_key`: the `mock tool mcp.<key>` queue that answers it under `sage test` (several builtins may share
  one: `mcp_tools` is answered by the `mcp.list_tools` mocks, as the text of a listing);
- `record`, `listed`: the prelude record its value is (a list of them when `listed`), which the boundary builds
  from the step's JSON outcome;
- `declared_type`: the step carries the call's declared type (the checker records it on `Call.target`), by
  which a mock's value becomes wire data;
- `perform`: how the real layer performs it: for `mcp`, the `ConnectionPool` method called with the step's
  arguments, its result shaped by the `sagepy.effects.wire` function `shape` when it has one; for `io`,
  `native` (the function of the same name in sagepy.builtins, called with the step's arguments) or None (the
  interpreter's own: `sleep_ms` sleeps the calling agent, `ask` asks the run's people);
- `named`: its failure message names its second argument (the tool, resource or prompt), as a mock's must too;
- `unit`: its value is Unit (the step's outcome is null);
- `optional`: its value is an Option (`env`): null is None, anything else Some of it;
- `fresh`: the program uses its outcome at once and it cannot be had again (stdin, a person's answer): its
  journal record is never committed in a group;
- `step`: False for `mcp_connection`, a lookup of the run's open handles rather than a step;
- `variable`: it reads the environment variable its first argument names, whose value may be a secret
  (journaled wrapped, never shown: sagepy.secrecy).

Adding an `io` builtin is a line here, its `extern fn` in stdlib/io.sg and (for a native one) its function in
a family of sagepy.builtins; adding an `mcp_*` builtin over an existing pool operation is a line here and its
`extern fn` in stdlib/mcp.sg. tests/effects/test_effect_builtins.py holds the declarations and this table
together and checks that no other module names these builtins in a table of its own.
"""
from __future__ import annotations

IO = "io"
MCP = "mcp"


class EffectBuiltin:
    __slots__ = ("name", "kind", "safety", "mock_key", "record", "listed", "declared_type", "perform", "shape",
                 "named", "unit", "optional", "fresh", "step", "variable")

    def __init__(self, name: str, kind: str, safety: str | None, *, mock_key: str | None = None,
                 record: str | None = None, listed: bool = False, declared_type: bool = False,
                 perform: str | None = None, shape: str | None = None, named: bool = False, unit: bool = False,
                 optional: bool = False, fresh: bool = False, step: bool = True, variable: bool = False) -> None:
        self.name = name
        self.kind = kind
        self.safety = safety
        self.mock_key = mock_key
        self.record = record
        self.listed = listed
        self.declared_type = declared_type
        self.perform = perform
        self.shape = shape
        self.named = named
        self.unit = unit
        self.optional = optional
        self.fresh = fresh
        self.step = step
        self.variable = variable

    def __repr__(self) -> str:
        return f"EffectBuiltin({self.name!r}, {self.kind!r})"


_READ, _SAME, _NEW = "read_only", "idempotent", "destructive"

EFFECT_BUILTINS: dict[str, EffectBuiltin] = {b.name: b for b in (
    # ---- io (stdlib/io.sg): reading the world may be done again, writing a whole file or making a directory
    # has the same effect twice, appending does not
    EffectBuiltin("read_file", IO, _READ, perform="native"),
    EffectBuiltin("write_file", IO, _SAME, perform="native", unit=True),
    EffectBuiltin("append_file", IO, _NEW, perform="native", unit=True),
    EffectBuiltin("delete_file", IO, _SAME, perform="native", unit=True),
    EffectBuiltin("make_dir", IO, _SAME, perform="native", unit=True),
    EffectBuiltin("list_dir", IO, _READ, perform="native"),
    EffectBuiltin("file_exists", IO, _READ, perform="native"),
    EffectBuiltin("read_line", IO, _READ, perform="native", fresh=True),
    EffectBuiltin("read_all", IO, _READ, perform="native", fresh=True),
    EffectBuiltin("ask", IO, _READ, fresh=True),
    EffectBuiltin("sleep_ms", IO, _READ, unit=True),
    EffectBuiltin("now_ms", IO, _READ, perform="native"),
    EffectBuiltin("now_s", IO, _READ, perform="native"),
    EffectBuiltin("env", IO, _READ, perform="native", optional=True, variable=True),
    EffectBuiltin("env_or", IO, _READ, perform="native", variable=True),
    # ---- dynamic MCP (stdlib/mcp.sg)
    EffectBuiltin("mcp_connect", MCP, _READ, mock_key="mcp.connect", perform="connect"),
    EffectBuiltin("mcp_list_tools", MCP, _READ, mock_key="mcp.list_tools", perform="list_tools"),
    EffectBuiltin("mcp_tools", MCP, _READ, mock_key="mcp.list_tools", record="McpTool", listed=True,
                  perform="listing", shape="tool_objects"),
    EffectBuiltin("mcp_server_info", MCP, _READ, mock_key="mcp.server_info", record="McpServerInfo",
                  declared_type=True, perform="server_info", shape="server_info_object"),
    EffectBuiltin("mcp_connection", MCP, None, record="McpConnection", step=False),
    EffectBuiltin("mcp_call", MCP, None, mock_key="mcp.call", perform="call", named=True),
    EffectBuiltin("mcp_disconnect", MCP, _SAME, mock_key="mcp.disconnect", perform="disconnect", unit=True),
    EffectBuiltin("mcp_resources", MCP, _READ, mock_key="mcp.resources", record="McpResource", listed=True,
                  declared_type=True, perform="resources", shape="resources_objects"),
    EffectBuiltin("mcp_resource_templates", MCP, _READ, mock_key="mcp.resource_templates",
                  record="McpResourceTemplate", listed=True, declared_type=True, perform="resource_templates",
                  shape="resource_templates_objects"),
    EffectBuiltin("mcp_read_resource", MCP, _READ, mock_key="mcp.read_resource", perform="read_resource",
                  named=True),
    EffectBuiltin("mcp_prompts", MCP, _READ, mock_key="mcp.prompts", record="McpPrompt", listed=True,
                  declared_type=True, perform="prompts", shape="prompts_objects"),
    EffectBuiltin("mcp_get_prompt", MCP, _READ, mock_key="mcp.get_prompt", perform="get_prompt", named=True),
)}

# The builtins of each kind, in the table's order.
IO_BUILTINS = tuple(name for name, b in EFFECT_BUILTINS.items() if b.kind == IO)
MCP_BUILTINS = tuple(name for name, b in EFFECT_BUILTINS.items() if b.kind == MCP)
# The `mock tool mcp.<key>` keys (SPEC §9.3), each once.
MCP_MOCK_KEYS = tuple(dict.fromkeys(b.mock_key[len("mcp."):] for b in EFFECT_BUILTINS.values() if b.mock_key))
