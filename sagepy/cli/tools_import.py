"""`sage tools import [FILE] [--generate DIR]` and `sage tools add NAME (-- CMD ARGS… | --url URL)` (SPEC
§10.2): MCP servers into grove.toml without retyping them.

New `[tools.<Name>]` tables are appended to grove.toml (created in the current directory outside a project);
the text already there is kept byte for byte, and a name that is taken (ignoring case, as tool blocks bind)
is left alone and reported. What was added goes to stdout, notes to stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings


def add_arguments(sub: Any) -> None:
    """The `import` and `add` subcommands of `sage tools`."""
    imp = sub.add_parser("import", help="add the MCP servers of another host's config to grove.toml",
                         description="Read an mcpServers (Claude Desktop, Cursor, Windsurf) or servers (VS "
                                     "Code) JSON config — FILE, or the hosts' usual config files — and append "
                                     "a [tools.<Name>] table per server to grove.toml.")
    imp.add_argument("file", nargs="?", metavar="FILE", help="a host's JSON config file")
    imp.add_argument("--generate", metavar="DIR",
                     help="also write DIR/<name>.sg declarations for every server that answers")
    from .tools_call import intermixed
    add = intermixed(sub.add_parser("add", help="add one MCP server to grove.toml",
                         description="Append a [tools.NAME] table to grove.toml: a stdio server given after "
                                     "`--`, or an HTTP server given with --url.",
                         usage="sage tools add NAME (-- CMD ARGS… | --url URL) [--env K=V]… [--header K=V]…"))
    add.add_argument("name", metavar="NAME", help="the table name (the tool block that binds to it)")
    add.add_argument("server_command", nargs="*", help=argparse.SUPPRESS)
    add.add_argument("--url", metavar="URL", help="a Streamable HTTP server")
    add.add_argument("--env", action="append", metavar="K=V", help="environment for a stdio server")
    add.add_argument("--header", action="append", metavar="K=V", help="header for an HTTP server")


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    from ..mcptools.host_configs import HostConfigError, convert, read_servers, usual_locations
    grove = _grove(settings)
    if grove is None:
        return 1
    if args.file is not None:
        files = [args.file]
    else:
        files = [path for path in usual_locations(settings.root) if os.path.isfile(path)]
        if not files:
            sys.stderr.write("error: no MCP config found; looked in:\n" +
                             "".join(f"  {path}\n" for path in usual_locations(settings.root)) +
                             "  = help: name the file: sage tools import FILE\n")
            return 1
    taken = {name.lower(): name for name in settings.tools}
    added: list[Any] = []
    for path in files:
        try:
            entries = read_servers(path)
        except HostConfigError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
        for source_name, entry in entries.items():
            converted = convert(source_name, entry, settings.root)
            where = f"'{source_name}' ({_shown(path)})"
            if converted.table is None:
                sys.stderr.write(f"skipped {where}: {converted.reason}\n")
            elif converted.name.lower() in taken:
                sys.stderr.write(f"skipped {where}: [tools.{taken[converted.name.lower()]}] already exists\n")
            else:
                taken[converted.name.lower()] = converted.name
                added.append(converted)
    if not added:
        print("nothing to add")
        return 0
    if not _append(grove, [(c.name, c.table) for c in added]):
        return 1
    for converted in added:
        print(f"added [tools.{converted.name}] {_target(converted.table)}")
        if converted.inputs:
            names = ", ".join(converted.inputs)
            sys.stderr.write(f"note: [tools.{converted.name}] reads {names} from the environment (it was an "
                             "input prompt of the host)\n")
    if args.generate is not None:
        return _generate_all(args.generate, added, grove)
    return 0


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    command = args.server_command
    if bool(command) == bool(args.url):
        return _usage("give either -- CMD ARGS… or --url URL")
    if command and args.header:
        return _usage("--header applies to HTTP servers only")
    if args.url and args.env:
        return _usage("--env applies to stdio servers only")
    try:
        env = _pairs(args.env, "--env")
        headers = _pairs(args.header, "--header")
    except ValueError as exc:
        return _usage(str(exc))
    grove = _grove(settings)
    if grove is None:
        return 1
    taken = next((name for name in settings.tools if name.lower() == args.name.lower()), None)
    if taken is not None:
        sys.stderr.write(f"error: [tools.{taken}] already exists in grove.toml\n")
        return 1
    table: dict[str, Any] = {"command": command[0]} if command else {"url": args.url}
    if command[1:]:
        table["args"] = command[1:]
    if env:
        table["env"] = env
    if headers:
        table["headers"] = headers
    if not _append(grove, [(args.name, table)]):
        return 1
    print(f"added [tools.{args.name}] {_target(table)}")
    return 0


def _pairs(pairs: list[str] | None, option: str) -> dict[str, str]:
    """`K=V` values as written: `$TOKEN` (quoted in the shell) becomes a `$` reference in grove.toml."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{option} expects K=V, got '{pair}'")
        out[key] = value
    return out


def _usage(message: str) -> int:
    sys.stderr.write("usage: sage tools add NAME (-- CMD ARGS… | --url URL) [--env K=V]… [--header K=V]…\n"
                     f"sage tools add: error: {message}\n")
    return 2


def _grove(settings: Settings) -> str | None:
    """The grove.toml to append to (the current directory's, new, outside a project); None after an error."""
    if settings.grove_path is None:
        return os.path.join(os.getcwd(), "grove.toml")
    if settings.toml_broken:
        sys.stderr.write(f"error: {_shown(settings.grove_path)} is not valid TOML; fix it first "
                         "(sage check shows where)\n")
        return None
    return settings.grove_path


def _append(grove: str, tables: list[tuple[str, dict]]) -> bool:
    from ..mcptools.host_configs import appended, toml_table
    try:
        with open(grove, "rb") as fh:
            before = fh.read().decode("utf-8")
    except FileNotFoundError:
        before = ""
    except (OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"error: cannot read {_shown(grove)}: {exc}\n")
        return False
    text = appended(before, [toml_table(name, table) for name, table in tables])
    try:
        with open(grove, "wb") as fh:
            fh.write(text.encode("utf-8"))
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {_shown(grove)}: {exc.strerror}\n")
        return False
    return True


def _target(table: dict) -> str:
    from ..secrecy import mask_url, masked_command_line
    if "command" in table:
        return masked_command_line(table["command"], table.get("args", []))
    return mask_url(table["url"])


def _generate_all(directory: str, added: list[Any], grove: str) -> int:
    """`--generate DIR`: declarations for every added server that answers, from the grove.toml just written."""
    from ..mcp.failures import McpFailure
    from ..mcptools.inspect import describe_servers
    from ..render import spinner
    from ..session import Session
    from .tools_target import declarations
    session, _ = Session.open(os.path.dirname(grove))
    settings = session.settings
    servers = {}
    for converted in added:
        if converted.name in settings.tools.servers:
            servers[converted.name] = settings.tools.servers[converted.name]
        else:
            sys.stderr.write(f"✗ {converted.name} — its table is not valid (sage tools list shows why)\n")
    with spinner(f"connecting to {len(servers)} server{'s' if len(servers) != 1 else ''}…"):
        results = describe_servers(settings.root, servers, settings.mcp) if servers else {}
    os.makedirs(directory, exist_ok=True)
    for name, result in results.items():
        if isinstance(result, McpFailure):
            sys.stderr.write(f"✗ {name} — {result.display()} (no declarations written)\n")
            continue
        path = os.path.join(directory, _file_stem(name) + ".sg")
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(declarations(name, result))
        except OSError as exc:
            sys.stderr.write(f"error: cannot write {_shown(path)}: {exc.strerror}\n")
            return 1
        print(f"wrote {_shown(path)}")
    return 0


def _file_stem(name: str) -> str:
    """`McpTracker` → `mcp_tracker`."""
    import re
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _shown(path: str) -> str:
    from ..diagnostics import display_path
    return display_path(os.path.abspath(path))
