"""`sage tools call NAME.TOOL [k=v …] [--json OBJECT]` (SPEC §10.2): one call to any MCP tool from the shell.

The server is a configured one (`NAME.`) or an ad-hoc one (`--stdio CMD`, `--http URL`, then the first
argument is the tool alone). `k=v` values are typed by the tool's input schema: a property that can only be a
string takes the text as it is (`zip=01234` stays a string), any other is parsed as JSON when it parses to an
allowed type, else taken as a string, so the server reports the mismatch itself. The text items of the result
(or the JSON of its `structuredContent`) go to stdout; a result with `isError` or a failed call is
`error: …` on stderr, exit 1.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
               type(None): "null"}


def add_arguments(sub: Any) -> None:
    """The `call` subcommand of `sage tools`."""
    call = intermixed(sub.add_parser("call", help="call one tool of a server",
                          description="Connect to a configured server (NAME.TOOL) or an ad-hoc one (--stdio "
                                      "CMD or --http URL, then TOOL alone), call the tool once and print its "
                                      "result. k=v values are typed by the tool's input schema."))
    call.add_argument("tool", metavar="NAME.TOOL", help="a [tools.NAME] entry and one of its tools")
    call.add_argument("pairs", nargs="*", metavar="k=v", help="an argument of the tool")
    call.add_argument("--json", metavar="OBJECT", dest="json_arguments",
                      help="the arguments as one JSON object (k=v pairs are added on top)")
    call.add_argument("--stdio", metavar="CMD", help='an ad-hoc stdio server: "command args…"')
    call.add_argument("--http", metavar="URL", help="an ad-hoc Streamable HTTP server")
    call.add_argument("--env", action="append", metavar="K=V", help="extra environment for a stdio server")
    call.add_argument("--header", action="append", metavar="K=V", help="extra header for an HTTP server")


def intermixed(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser, changed to accept options between positionals (`t a=1 --json '{…}' b=2`), which plain
    argparse refuses once an option has ended the run of positionals."""
    class Intermixed(type(parser)):  # type: ignore[misc]
        mixing = False

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            if self.mixing:   # parse_known_intermixed_args calls back into this method
                return super().parse_known_args(args, namespace)
            self.mixing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self.mixing = False
    parser.__class__ = Intermixed
    return parser


def run_call(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_target import log_dir, resolve_target, usage
    if args.stdio is None and args.http is None:
        args.name, dot, remote = args.tool.partition(".")
        if not dot or not args.name or not remote:
            return usage(args, f"expected NAME.TOOL, got '{args.tool}'")
    else:
        args.name, remote = None, args.tool
    try:
        given = _json_object(args.json_arguments)
        pairs = _pairs(args.pairs)
    except ValueError as exc:
        return usage(args, str(exc))
    target = resolve_target(args, settings)
    if isinstance(target, int):
        return target
    _name, config = target
    return _call(settings, config, remote, given, pairs, log_dir(settings))


def _json_object(text: str | None) -> dict:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--json is not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ValueError("--json expects a JSON object")
    return value


def _pairs(pairs: list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"arguments are k=v, got '{pair}'")
        out.append((key, value))
    return out


def _call(settings: Settings, config: Any, remote: str, given: dict, pairs: list[tuple[str, str]],
          logs: str | None) -> int:
    from ..mcp.elicitation import TerminalElicitation
    from ..mcp.failures import McpFailure
    from ..mcp.pool import ConnectionPool
    from ..mcp.results import dynamic_text, error_text
    from ..render import spinner
    # A server's questions during the call are answered as `sage run` answers them (§8.7).
    manager = ConnectionPool(settings.root, {config.name: config}, settings.mcp, log_dir=logs,
                             elicitation=TerminalElicitation())
    try:
        with spinner(f"calling {remote} on {config.name}…"):
            tools = manager.describe(config.name)["tools"]
            tool = next((t for t in tools if t.get("name") == remote), None)
            if tool is None:
                sys.stderr.write(f"error: {_unknown_tool(config.name, remote, tools)}\n")
                return 1
            arguments = {**given, **typed_arguments(pairs, tool.get("inputSchema"))}
            result = manager.call_tool(config.name, remote, arguments)
    except McpFailure as failure:
        sys.stderr.write(f"error: {failure.display()}\n")
        return 1
    finally:
        manager.close_all()
    if result.get("isError"):
        sys.stderr.write(f"error: MCP tool error: {error_text(result)}\n")
        return 1
    text = dynamic_text(result)
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _unknown_tool(server: str, remote: str, tools: list[dict]) -> str:
    from ..diagnostics import did_you_mean
    names = [t.get("name", "") for t in tools]
    message = f"server '{server}' offers no tool '{remote}'"
    hint = did_you_mean(remote, names, cutoff=0.6)
    if hint:
        return f"{message}; {hint}"
    return f"{message}; it offers: {', '.join(names)}" if names else f"{message}; it offers none"


def typed_arguments(pairs: list[tuple[str, str]], schema: Any) -> dict:
    """`k=v` pairs as a JSON object, each value typed by the property's schema (see the module docstring)."""
    from ..mcptools.inspect import resolve_ref, schema_defs
    schema = schema if isinstance(schema, dict) else {}
    defs = schema_defs(schema)
    properties = resolve_ref(schema, defs).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    return {key: _typed(value, _allowed_types(properties.get(key), defs)) for key, value in pairs}


def _typed(text: str, allowed: set[str]) -> Any:
    if allowed == {"string"}:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    kind = _JSON_TYPES.get(type(value))
    if not allowed or kind in allowed or (kind == "integer" and "number" in allowed):
        return value
    return text


def _allowed_types(schema: Any, defs: Any) -> set[str]:
    """The JSON types a property schema admits; empty when it does not say (anything goes)."""
    from ..mcptools.inspect import resolve_ref
    schema = resolve_ref(schema, defs)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            found = [_allowed_types(option, defs) for option in options]
            return set() if any(not f for f in found) else set().union(*found)
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return {_JSON_TYPES.get(type(v), "string") for v in enum}
    return set()
