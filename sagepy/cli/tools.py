"""`sage tools list|inspect|generate|verify` (SPEC §10.2, §10.4): the project's MCP servers from the
command line; `call`, `import` and `add` live in modules of their own (tools_call, tools_import).

`list` only reads grove.toml; the other commands connect through `sagepy.mcptools.inspect`, which imports the
MCP SDK only when a server is really contacted. Reports go to stdout, errors and diagnostics to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from ..diagnostics import Diagnostic, display_path
from ..secrecy import mask_url, masked_command_line
from .groups import open_group
from .tools_target import declarations, log_dir, report, resolve_target

if TYPE_CHECKING:
    from ..grove.servers import ServerConfig
    from ..settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommands of the `tools` parser that `sage` creates."""
    sub = parser.add_subparsers(dest="tools_command", metavar="COMMAND", parser_class=type(parser))
    sub.add_parser("list", help="list the MCP servers of grove.toml",
                   description="One line per [tools.X] entry: name, transport, auth, command line or URL.")
    inspect = sub.add_parser("inspect", help="connect to a server and describe its tools",
                             description="Connect to a configured server (NAME) or an ad-hoc one and report "
                                         "its identity, capabilities and tools.")
    _add_target(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    generate = sub.add_parser("generate", help="write Sage declarations for a server's tools",
                              description="Write a `pub tool` block (and the records and enums it needs) for "
                                          "the server's tools to FILE or stdout.")
    _add_target(generate)
    generate.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    sub.add_parser("verify", help="connect to every configured server",
                   description="Connect to every [tools.X] server and report whether it works.")
    from .tools_call import add_arguments as add_call_arguments
    from .tools_import import add_arguments as add_import_arguments
    from .tools_read import add_arguments as add_read_arguments
    add_call_arguments(sub)
    add_import_arguments(sub)
    add_read_arguments(sub)


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="a [tools.NAME] entry of grove.toml")
    parser.add_argument("--stdio", metavar="CMD", help='an ad-hoc stdio server: "command args…"')
    parser.add_argument("--http", metavar="URL", help="an ad-hoc Streamable HTTP server")
    parser.add_argument("--env", action="append", metavar="K=V", help="extra environment for a stdio server")
    parser.add_argument("--header", action="append", metavar="K=V", help="extra header for an HTTP server")


def run_tools_command(args: argparse.Namespace) -> int:
    opened = open_group(args, "tools", ("list", "inspect", "generate", "verify", "call", "import", "add", "read",
                                        "prompt"))
    if isinstance(opened, int):
        return opened
    command, session = opened
    handler = {"list": _list, "inspect": _inspect, "generate": _generate, "verify": _verify,
               "call": _call, "import": _import, "add": _add, "read": _read, "prompt": _prompt}[command]
    return handler(args, session.settings)


# ---------------------------------------------------------------- configuration

def _servers(settings: Settings) -> tuple[dict, list[Diagnostic]]:
    """The valid `[tools.X]` entries and the E090 diagnostics of grove.toml's MCP tables."""
    return settings.tools.servers, list(settings.tool_diagnostics)


# ---------------------------------------------------------------- list

def _list(args: argparse.Namespace, settings: Settings) -> int:
    servers, diags = _servers(settings)
    report(diags)
    if not servers:
        if not diags:
            print("no MCP tools configured")
        return 1 if diags else 0
    rows = [(name, c.transport, c.auth, _target_text(c)) for name, c in servers.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 1 if diags else 0


def _target_text(config: ServerConfig) -> str:
    if config.transport == "stdio":
        return masked_command_line(config.command or "", config.args)
    if config.transport == "http":
        return mask_url(config.url or "")
    return f"{config.module} (object {config.object})"


# ---------------------------------------------------------------- inspect and generate

def _describe_target(args: argparse.Namespace, settings: Settings,
                     catalogue: bool = False) -> tuple[str | None, dict] | int:
    """Connect to the server the arguments name: (configured name or None, description), or an exit code."""
    from ..mcp.failures import McpFailure
    from ..mcptools.inspect import describe_servers
    from ..render import spinner
    target = resolve_target(args, settings)
    if isinstance(target, int):
        return target
    name, config = target
    with spinner(f"connecting to {name or config.name}…"):
        result = describe_servers(settings.root, {config.name: config}, settings.mcp, catalogue=catalogue,
                                  log_dir=log_dir(settings))[config.name]
    if isinstance(result, McpFailure):
        sys.stderr.write(f"error: {result.display()}\n")
        return 1
    return name, result


def _inspect(args: argparse.Namespace, settings: Settings) -> int:
    from ..mcptools.inspect import json_report, text_report
    found = _describe_target(args, settings, catalogue=True)
    if isinstance(found, int):
        return found
    _name, description = found
    if args.json:
        print(json.dumps(json_report(description), ensure_ascii=False, indent=2))
    else:
        print(text_report(description))
    return 0


def _generate(args: argparse.Namespace, settings: Settings) -> int:
    found = _describe_target(args, settings)
    if isinstance(found, int):
        return found
    name, description = found
    source = declarations(name, description)
    if args.output is None:
        sys.stdout.write(source)
        return 0
    try:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(source)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {args.output}: {exc.strerror}\n")
        return 1
    sys.stderr.write(f"wrote {display_path(os.path.abspath(args.output))}\n")
    return 0


def _call(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_call import run_call
    return run_call(args, settings)


def _read(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_read import run_read
    return run_read(args, settings)


def _prompt(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_read import run_prompt
    return run_prompt(args, settings)


def _import(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_import import run_import
    return run_import(args, settings)


def _add(args: argparse.Namespace, settings: Settings) -> int:
    from .tools_import import run_add
    return run_add(args, settings)


# ---------------------------------------------------------------- verify

def _verify(args: argparse.Namespace, settings: Settings) -> int:
    from ..mcp.failures import McpFailure
    from ..mcptools.inspect import describe_servers
    from ..mcptools.verify import quiet_safety, safety_diagnostics, unset_variable_diagnostics
    from ..render import spinner
    servers, diags = _servers(settings)
    if not servers:
        report(diags)
        if not diags:
            print("no MCP tools configured")
        return 1 if diags else 0
    unset = {name: unset_variable_diagnostics(config, settings.grove_path) for name, config in servers.items()}
    reachable = {name: quiet_safety(config) for name, config in servers.items() if not unset[name]}
    with spinner(f"connecting to {len(reachable)} server{'s' if len(reachable) != 1 else ''}…"):
        results = describe_servers(settings.root, reachable, settings.mcp) if reachable else {}
    failed = False
    for name, config in servers.items():
        result = results.get(name)
        if unset[name]:
            failed = True
            diags += unset[name]
            print(f"✗ {name} — {unset[name][0].message}")
        elif isinstance(result, McpFailure):
            failed = True
            print(f"✗ {name} — {result.display()}")
        elif result is not None:
            count = len(result["tools"])
            protocol = result["protocol"] or "unknown"
            print(f"✓ {name} — {count} tool{'s' if count != 1 else ''} (protocol {protocol})")
            diags += safety_diagnostics(config, [t.get("name") for t in result["tools"]], settings.grove_path)
    sys.stdout.flush()
    report(diags)
    return 1 if failed or any(d.severity == "error" for d in diags) else 0
