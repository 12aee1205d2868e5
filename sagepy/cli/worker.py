"""`sage worker [PATH] [--queue NAME] [--concurrency N] [--drain] [--any-version] [--poll-ms MS]
[--isolation thread|process]` (SPEC §14.2): the command's side of sagepy.workers.worker — options, the project,
its store, its program version, and how runs execute (threads of this process running the program compiled
once, sagepy.engine.queued, or a child process each)."""
from __future__ import annotations

import argparse
from typing import Any

SQLITE_POLL_MS = 250
CONCURRENCY = {"thread": 256, "process": 1}   # runs at once by default
POSTGRES_POLL_MS = 1000   # a fallback: NOTIFY wakes a PostgreSQL worker at once


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", metavar="PATH", help="a .sg file or the project directory (default: .)")
    parser.add_argument("--queue", metavar="NAME", default="default", help="the queue to take runs from "
                                                                            "(default: default)")
    parser.add_argument("--concurrency", metavar="N", type=_positive,
                        help="runs executed at once (default 256 with --isolation thread, 1 with process)")
    parser.add_argument("--isolation", choices=("thread", "process"), default="thread",
                        help="thread (default): runs execute in this process, sharing the program compiled once; "
                             "process: each run in a child process of its own")
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
    from ..workers.version import session_version
    from ..workers.worker import Worker, WorkerOptions
    from .project_entry import entry_file, open_session
    from .queue import with_store
    opened = open_session(args.path)
    if isinstance(opened, int):
        return opened
    session, explicit = opened
    settings = session.settings
    if settings.store_diagnostics:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(settings.store_diagnostics) + "\n")
        return 1
    entry = entry_file(session, explicit)
    if isinstance(entry, int):
        return entry

    program = None
    if args.isolation == "thread":
        from ..engine.program import CheckFailed, compile_session
        from .run import report_diagnostics
        try:
            program = compile_session(session, entry)
        except CheckFailed as failed:
            report_diagnostics(failed.diagnostics)
            return 1

    def work(store: Any) -> int:
        postgres = type(store).__name__ == "PostgresStore"
        poll_ms = args.poll_ms or (POSTGRES_POLL_MS if postgres else SQLITE_POLL_MS)
        concurrency = args.concurrency or CONCURRENCY[args.isolation]
        options = WorkerOptions(args.path, args.queue, concurrency, args.drain, args.any_version,
                                poll_ms / 1000, settings.persistence.max_recoveries)
        if program is None:
            return Worker(store, session_version(session, entry), options).run()
        return _thread_worker(session, program, store, options)
    return with_store(session, work)


def _thread_worker(session: Any, program: Any, store: Any, options: Any) -> int:
    """A worker whose runs are threads of this process, on a connection to the store of their own."""
    from ..engine.queued import ThreadLauncher
    from ..workers.worker import Worker
    version = program.version
    runs = session.open_store()
    try:
        from ..workers.version import program_version, version_files
        files = version_files(session, program.modules)

        def changed() -> bool:
            return program_version(session.root, files) != version
        return Worker(store, version, options, ThreadLauncher(program, runs.backend, version), changed).run()
    finally:
        runs.close()
