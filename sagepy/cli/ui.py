"""`sage ui [PATH] [--host HOST] [--port PORT] [--no-open]` (SPEC §24): the web console of the project's durable
runs and eval reports (sagepy/console/, imported only here)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH", help="a .sg file or the project directory (default: .)")
    parser.add_argument("--host", metavar="HOST", default="127.0.0.1",
                        help="the address to serve on (default: 127.0.0.1; another than a loopback address needs "
                             "SAGE_UI_TOKEN)")
    parser.add_argument("--port", metavar="PORT", type=_port, default=8470, help="the port (default: 8470)")
    parser.add_argument("--no-open", action="store_true", help="do not open a browser")


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, found '{text}'")
    return int(text)


def run_ui_command(args: argparse.Namespace) -> int:
    from .project_entry import open_session
    opened = open_session(args.path)
    if isinstance(opened, int):
        return opened
    session, _ = opened
    from ..console.server import serve
    return serve(session, args.host, args.port, not args.no_open)
