"""`sage serve [PATH] [--stdio | --http [HOST:]PORT] [--list]`: the program's `#[mcp_tool]` agents as an MCP
server (SPEC §21). Everything the server says goes to stderr: over stdio, stdout carries the protocol only."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

NOTHING = 'error: nothing to serve: no agent is marked #[mcp_tool = "…"]\n'


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("path", nargs="?", metavar="PATH")
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    transport.add_argument("--http", metavar="[HOST:]PORT",
                           help="serve streamable HTTP at http://HOST:PORT/mcp (default host 127.0.0.1)")
    transport.add_argument("--list", action="store_true",
                           help="print the tools as tools/list returns them, as one JSON document, and exit")


def log_line(text: str) -> None:
    try:
        sys.stderr.write(f"sage serve: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):   # stderr is gone: the server keeps serving
        pass


def run_serve(args: Any) -> int:
    from ..engine.program import CheckFailed, compile_session
    from .project_entry import open_entry
    opened = open_entry(args.path)
    if isinstance(opened, int):
        return opened
    session, entry = opened
    try:
        program = compile_session(session, entry, require_run=False)
    except CheckFailed as failed:
        from .run import report_diagnostics
        report_diagnostics(failed.diagnostics)
        return 1
    settings = program.session.settings
    # A host starts the server from anywhere (Claude Desktop: from `/`): the program's relative paths, like
    # those of `sage run` in its project, are the project's.
    os.chdir(settings.root)
    serve = settings.serve
    notes: list[str] = []
    from ..serve.catalog import build_catalogue
    catalogue = build_catalogue(program.root, settings, notes)
    for note in notes:
        sys.stderr.write(note + "\n")
    if not catalogue.definitions:
        sys.stderr.write(NOTHING)
        return 1
    if args.list:
        sys.stdout.write(json.dumps(catalogue.listing(), ensure_ascii=False, indent=2) + "\n")
        return 0
    transport, address = _transport(args, serve)
    if transport == "http":
        try:
            host, port = _address(address, serve)
        except ValueError as exc:
            sys.stderr.write(f"error: --http {address}: {exc}\n")
            return 2
    token = None
    if serve.auth == "bearer":
        token = os.environ.get(serve.token_env or "")
        if not token:
            sys.stderr.write(f"error: [serve] auth = \"bearer\": the variable {serve.token_env} holding the token "
                             "is not set\n")
            return 1
    sock = None
    if transport == "http":
        from ..serve.transports import bind
        try:
            sock = bind(host, port)
        except OSError as exc:
            sys.stderr.write(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
            return 1
    from ..effects.world import stop_point
    from ..mcp.shared import shared_pool
    from ..serve.calls import EngineRunner
    from ..serve.server import ServeApp
    project = settings.project
    name = serve.name or project.name or os.path.basename(settings.root)
    shared = shared_pool(settings.root, settings.tools.servers, settings.mcp, stop_point)
    app = ServeApp(catalogue, serve, name, serve.version or project.version, EngineRunner(program, shared, serve.model == "client"),
                   log_line)
    import anyio
    try:
        if sock is None:
            from ..serve.transports import serve_stdio
            return anyio.run(serve_stdio, app)
        from ..serve.transports import serve_http
        anyio.run(serve_http, app, sock, token)
        return 0
    finally:
        if shared is not None:
            shared.close_all()


def _transport(args: Any, serve: Any) -> tuple[str, str | None]:
    if args.http is not None:
        return "http", args.http
    if args.stdio:
        return "stdio", None
    return serve.transport, None


def _address(text: str | None, serve: Any) -> tuple[str, int]:
    """`[HOST:]PORT` of --http (or the `[serve]` host and port)."""
    if text is None:
        return serve.host, serve.port
    host, sep, port = text.rpartition(":")
    if not sep:
        host = serve.host
    host = host.strip("[]") or serve.host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("expected [HOST:]PORT with a port from 0 to 65535")
    return host, int(port)
