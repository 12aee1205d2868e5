"""`sage runs submit|wait|cancel|logs` (SPEC §14.2): queueing runs for workers, waiting for them, stopping them
and reading what they printed.

`submit` works on the project of PATH (default: the current directory), the others on the project of the
current directory, as every `sage runs` command does. Errors go to stderr as `error: …` (exit 1).
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..session import Session

COMMANDS = ("submit", "wait", "cancel", "logs")
TIMEOUT_EXIT = 124
FOLLOW_POLL_S = 0.2
# the exit code `sage runs wait` gives a run that stopped without an exit code of its own
_STATUS_EXIT = {"halted": 3, "paused": 5, "cancelled": 130}


class QueueError(Exception):
    """A user-facing error: str() is the whole message (`error: …`), args[1] the exit code when not 1."""


def add_arguments(sub: Any) -> None:
    """The queue's subcommands of `sage runs` (`sub`: its subparsers)."""
    submit = sub.add_parser("submit", help="queue a run for a worker",
                            description="Check the program and queue a run of it for `sage worker`; prints the "
                                        "run id. Arguments after `--` are what the program's args() returns.")
    submit.add_argument("path", nargs="?", metavar="PATH", help="a .sg file or the project directory (default: .)")
    submit.add_argument("--queue", metavar="NAME", default="default", help="the queue (default: default)")
    wait = sub.add_parser("wait", help="wait until a run ends, halts or pauses",
                          description="Wait until the run is completed, failed, halted, paused or cancelled, "
                                      "then exit with its exit code.")
    wait.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    wait.add_argument("--timeout-s", metavar="N", type=_seconds, help="give up after N seconds (exit 124)")
    cancel = sub.add_parser("cancel", help="cancel a run",
                            description="Cancel a run: a queued, interrupted, halted or paused run at once, a "
                                        "running one before its next step.")
    cancel.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    logs = sub.add_parser("logs", help="print what a run printed",
                          description="Print a run's stored output in order: its stdout lines to stdout, its "
                                      "stderr lines to stderr.")
    logs.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing until the run ends")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds ≥ 0, found '{text}'")
    return value


def run_queue_command(command: str, args: argparse.Namespace) -> int:
    from ..project import ProjectError
    from ..session import Session
    try:
        session, explicit = Session.open(args.path if command == "submit" else None)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    if session.settings.store_diagnostics:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(session.settings.store_diagnostics) + "\n")
        return 1

    def command_on(store: Any) -> int:
        try:
            if command == "submit":
                return _submit(session, explicit, args, store)
            return {"wait": _wait, "cancel": _cancel, "logs": _logs}[command](args, store)
        except QueueError as exc:
            sys.stderr.write(str(exc.args[0]) + "\n")
            return exc.args[1] if len(exc.args) > 1 else 1
    return with_store(session, command_on)


def with_store(session: Session, command: Callable[[Any], int]) -> int:
    """`command` on the project's durable store (created when missing), closed afterwards; exit 1 without
    `[persistence]` or when the store cannot serve, opening or in use (worded as `sage run` words it)."""
    from ..session import store_open_failure
    from ..store.base import Busy, NewerFormat, Unavailable
    from ..store.config import StoreConfigError, open_store
    target = store = None
    try:
        target = session.settings.state_target()
        if target is None:
            from ..runtime.durable import NEEDS_PERSISTENCE
            sys.stderr.write(NEEDS_PERSISTENCE + "\n")
            return 1
        store = open_store(target)
        return command(store)
    except (NewerFormat, Busy, Unavailable, StoreConfigError) as exc:
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return 1
    finally:
        if store is not None:
            store.close()


def find_run(store: Any, run_id: str) -> Any:
    from ..runs.service import NoRun, find_run as find_service_run
    try:
        return find_service_run(store, run_id)
    except NoRun as exc:
        raise QueueError(f"error: {exc}") from None


# ---------------------------------------------------------------- submit

def _submit(session: Session, explicit: str | None, args: argparse.Namespace, store: Any) -> int:
    from ..runs import service
    from .run import report_diagnostics
    try:
        submitted = service.submit(session, store, explicit, list(args.program_args), args.queue)
    except service.NoEntry as exc:
        raise QueueError(f"error: no entry file found (looked for {exc.entry})") from None
    except service.CheckFailed as exc:
        report_diagnostics(exc.diagnostics)
        return 1
    print(submitted.run_id)
    return 0


# ---------------------------------------------------------------- wait

def shown(run: Any) -> str:
    from ..store.leases import shown_status
    return shown_status(run)


def _wait(args: argparse.Namespace, store: Any) -> int:
    from ..store.queue import SETTLED
    run = find_run(store, args.run_id)
    deadline = None if args.timeout_s is None else time.monotonic() + args.timeout_s
    while run.status not in SETTLED:
        if deadline is not None and time.monotonic() >= deadline:
            limit = f"{args.timeout_s:g}"
            raise QueueError(f"error: run {run.id} is still {shown(run)} after {limit} s", TIMEOUT_EXIT)
        time.sleep(FOLLOW_POLL_S if deadline is None else max(0.0, min(FOLLOW_POLL_S, deadline - time.monotonic())))
        run = store.get_run(run.id)
    code = run.exit_code if run.exit_code is not None else _STATUS_EXIT.get(run.status, 0)
    sys.stderr.write(f"run {run.id} {run.status} (exit {code})\n")
    return code


# ---------------------------------------------------------------- cancel

def _cancel(args: argparse.Namespace, store: Any) -> int:
    from ..runs import service
    try:
        cancelled = service.cancel(store, args.run_id)
    except service.NoRun as exc:
        raise QueueError(f"error: {exc}") from None
    except service.AlreadyEnded as exc:
        raise QueueError(f"error: run {exc.run_id} already ended with exit code {exc.exit_code}") from None
    sys.stderr.write(f"run {cancelled.run_id} cancelled\n")
    return 0


# ---------------------------------------------------------------- logs

def _logs(args: argparse.Namespace, store: Any) -> int:
    from ..store.queue import SETTLED
    run = find_run(store, args.run_id)
    seen = 0
    while True:
        ended = not args.follow or run.status in SETTLED
        for number, stream, line in store.output(run.id, seen):
            out = sys.stdout if stream == "stdout" else sys.stderr
            out.write(line + "\n")
            out.flush()
            seen = number
        if ended:   # read once more after the run ended: its last lines were stored before the end
            return 0
        time.sleep(FOLLOW_POLL_S)
        run = store.get_run(run.id)
