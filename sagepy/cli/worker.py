"""`sage worker [PATH] [--queue NAME] [--concurrency N] [--drain] [--any-version] [--poll-ms MS]` (SPEC §14.2):
the command's side of sagepy.workers.worker — options, the project, its store and its program version."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

SQLITE_POLL_MS = 250
POSTGRES_POLL_MS = 1000   # a fallback: NOTIFY wakes a PostgreSQL worker at once


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH", help="a .sg file or the project directory (default: .)")
    parser.add_argument("--queue", metavar="NAME", default="default", help="the queue to take runs from "
                                                                            "(default: default)")
    parser.add_argument("--concurrency", metavar="N", type=_positive, default=1,
                        help="runs executed at once, each in a process of its own (default 1)")
    parser.add_argument("--drain", action="store_true", help="exit once no run is left to claim")
    parser.add_argument("--any-version", action="store_true",
                        help="also execute runs submitted with other versions of the program")
    parser.add_argument("--poll-ms", metavar="MS", type=_positive,
                        help="how often to look for runs (default 250 on SQLite; PostgreSQL is woken at once and "
                             "polls every 1000 as a fallback)")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, found '{text}'")
    return int(text)


def run_worker_command(args: argparse.Namespace) -> int:
    from ..diagnostics import display_path
    from ..project import ProjectError
    from ..session import Session
    from ..workers.version import session_version
    from ..workers.worker import Worker, WorkerOptions
    from .queue import with_store
    try:
        session, explicit = Session.open(args.path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    settings = session.settings
    if settings.store_diagnostics:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(settings.store_diagnostics) + "\n")
        return 1
    entry = explicit or session.entry_file()
    if not os.path.isfile(entry):
        sys.stderr.write(f"error: no entry file found (looked for {display_path(entry)})\n")
        return 1

    def work(store: Any) -> int:
        postgres = type(store).__name__ == "PostgresStore"
        poll_ms = args.poll_ms or (POSTGRES_POLL_MS if postgres else SQLITE_POLL_MS)
        options = WorkerOptions(args.path, args.queue, args.concurrency, args.drain, args.any_version,
                                poll_ms / 1000, settings.persistence.max_recoveries)
        return Worker(store, session_version(session, entry), options).run()
    return with_store(session, work)
