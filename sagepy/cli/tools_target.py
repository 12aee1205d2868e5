"""What the `sage tools` subcommands share: the server a command names (configured or ad-hoc), where
ad-hoc servers log, usage errors and the declarations of §10.4 (secrets are masked by sagepy.secrecy)."""
from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..diagnostics import Diagnostic, format_diagnostics

if TYPE_CHECKING:
    from ..grove.servers import ServerConfig
    from ..settings import Settings


def report(diags: list[Diagnostic]) -> None:
    if diags:
        sys.stderr.write(format_diagnostics(diags) + "\n\n")


def resolve_target(args: argparse.Namespace, settings: Settings) -> tuple[str | None, ServerConfig] | int:
    """The server the arguments name (NAME, `--stdio CMD` or `--http URL`): (configured name or None,
    its configuration), or an exit code after the error was printed."""
    from ..binding import AmbiguousBinding
    from ..mcptools.inspect import AdhocError, adhoc_config, parse_pairs, with_extras
    chosen = [x for x in (args.name, args.stdio, args.http) if x is not None]
    if len(chosen) != 1:
        return usage(args, "give exactly one of NAME, --stdio CMD or --http URL")
    if args.stdio is not None and args.header:
        return usage(args, "--header applies to HTTP servers only")
    if args.http is not None and args.env:
        return usage(args, "--env applies to stdio servers only")
    try:
        env = parse_pairs(args.env, "--env")
        headers = parse_pairs(args.header, "--header")
        if args.name is None:
            return None, adhoc_config(args.stdio, args.http, env, headers)
        try:
            config = settings.tools.bind(args.name)
        except AmbiguousBinding as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
        if config is None:
            report(settings.tool_diagnostics)
            known = ", ".join(sorted(settings.tools.servers)) or "none"
            sys.stderr.write(f"error: no [tools.{args.name}] entry in grove.toml (configured: {known})\n")
            return 1
        return config.name, with_extras(config, env, headers)
    except AdhocError as exc:
        return usage(args, str(exc))


def log_dir(settings: Settings) -> str | None:
    """Where server logs go: the project's `.sage/logs` (None), or outside a project a `logs` directory in
    the user cache (a temporary directory when caching is off), never the current directory."""
    if settings.grove_path is not None:
        return None
    import tempfile
    base = settings.overrides.cache_dir or os.path.join(tempfile.gettempdir(), f"sagepy-{os.getuid()}")
    return os.path.join(base, "logs")


def usage(args: argparse.Namespace, message: str) -> int:
    sys.stderr.write(f"usage: sage tools {args.tools_command} (NAME | --stdio CMD | --http URL) …\n"
                     f"sage tools {args.tools_command}: error: {message}\n")
    return 2


def declarations(name: str | None, description: dict) -> str:
    """The Sage declarations of §10.4 for a described server (configured name, or None for an ad-hoc one)."""
    import datetime

    from ..mcptools.generate import generate, tool_block_name
    return generate(description["tools"], block_name=tool_block_name(name, description["name"]),
                    server_name=description["name"], server_version=description["version"],
                    protocol=description["protocol"], today=datetime.date.today().isoformat())
