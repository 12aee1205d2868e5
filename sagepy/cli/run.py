"""`sage run`: compile the program, run its entry agent on a terminal Host, and exit as SPEC §4.9 says.

The engine (sagepy.engine) does the run; this module parses nothing itself, turns Ctrl-C and SIGTERM into a
stop of the run, and words what the engine reports. A run without `[persistence]` imports nothing of the
durable store (sagepy.store, runtime/durable)."""
from __future__ import annotations

import gc
import signal
import sys
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, format_diagnostics, format_location_block
from ..engine.host import Host, unhandled_head

if TYPE_CHECKING:
    from ..engine.program import CheckFailed, Program
    from ..session import Session


class TerminalHost(Host):
    """The terminal's host: the run's output on stdout and stderr, an uncaught error drawn with its source."""

    def unhandled(self, agent: str, error: Any) -> None:
        from ..render import write_diagnostics
        file, span = error.span if error.span else (None, None)
        write_diagnostics(format_location_block(file, span, unhandled_head(agent, error)) + "\n")


def report_diagnostics(diags: list[Diagnostic]) -> None:
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(errors) + "\n")


def run_entry(session: Session, entry_path: str, trace_file: str | None = None, trace_stderr: bool = False,
              program_args: list[str] | None = None, resume: str | None = None, journal: bool = True,
              whole_process: bool = False) -> int:
    """Run the entry file; `resume`: the RUN_ID (or `last`) of a durable run to resume; `journal`: False
    for `--no-journal` (SPEC §14: with `[persistence]` every run is durable unless told otherwise);
    `whole_process`: the run is the process (the `sage` command), which ends when it does."""
    from ..engine.program import CheckFailed, compile_session
    claim = None
    if resume is not None:   # a worker's run in a process of its own: it dies with the worker
        from ..workers.child import WorkerClaim
        claim = WorkerClaim.from_environment()
    store, refused = _open_store(session, resume, claim)
    if refused is not None:
        return refused
    try:
        try:
            program = compile_session(session, entry_path)
        except CheckFailed as failed:
            return _refused(session, failed, store, resume, claim)
        if whole_process:
            # What loading and compiling left (modules, the parser, the prelude, the ASTs and their closures)
            # lives until the process ends: frozen, it is skipped by the collections of the run and of the
            # interpreter's shutdown, which would otherwise walk it several times (a fifth of a first run's time,
            # with the parser). The collector, off while they were made (cli/main), runs again for the
            # program's own objects.
            gc.freeze()
            gc.enable()
        trace = session.trace_target(trace_file, trace_stderr)
        host = TerminalHost(store=store, durable=journal or resume is not None, trace_file=trace[0],
                            trace_stderr=trace[1])
        host.claim = claim
        return _run_with_signals(program, host, program_args or [], resume)
    finally:
        if store is not None:
            store.close()


def _open_store(session: Session, resume: str | None, claim: Any) -> tuple[Any, int | None]:
    """The project's store of a run with `[persistence]` (or None), or the exit code of a refusal: a store
    that cannot be opened, or a run to resume that has ended, is refused before the program is loaded."""
    from ..session import store_open_failure
    if not session.settings.persistence.present and resume is None:
        return None, None
    from ..store.config import StoreConfigError
    try:
        target = session.settings.state_target()
    except StoreConfigError as exc:
        sys.stderr.write(store_open_failure(None, exc) + "\n")
        return None, 1
    if target is None:
        from ..runtime.durable import NEEDS_PERSISTENCE
        sys.stderr.write(NEEDS_PERSISTENCE + "\n")
        return None, 1
    from ..store.base import Busy, NewerFormat, Unavailable
    try:
        store = session.open_store()
    except (Unavailable, NewerFormat, StoreConfigError) as exc:   # SPEC §4.8, §14: refused before anything runs
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return None, 1
    if resume is None:
        return store, None
    from ..runtime.durable import DurableExit, DurableRun
    try:
        DurableRun.prepare(store.backend, resume, _stderr_line, claim)
    except DurableExit as exc:
        store.close()
        sys.stderr.write(exc.message + "\n")
        return None, exc.code
    except (Busy, Unavailable) as exc:
        store.close()
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return None, 1
    return store, None


def _refused(session: Session, failed: CheckFailed, store: Any, resume: str | None, claim: Any) -> int:
    """A program with errors is reported, unless it is a worker's run whose files changed since the worker
    started: that run is left, before anything is reported, for a worker of its version (SPEC §14.2)."""
    if store is not None and resume is not None:
        from ..runtime.durable import DurableExit, DurableRun
        from ..workers.version import program_version, version_files
        try:
            run = DurableRun.prepare(store.backend, resume, _stderr_line, claim)
            run.check_version(program_version(session.root, version_files(session, failed.modules)))
        except DurableExit as exc:
            return exc.code
    report_diagnostics(failed.diagnostics)
    return 1


def _run_with_signals(program: Program, host: Host, program_args: list[str], resume: str | None) -> int:
    """Ctrl-C and SIGTERM stop the run before its next step (exit 130 and 143); Ctrl-C while a terminal form
    is open closes the form instead."""
    def on_signal(signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and host.interrupt_form():
            return
        host.stop(130 if signum == signal.SIGINT else 143)

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:   # not the main thread (an in-process run of the tests): no handlers
            pass
    try:
        outcome = program.run(args=program_args, host=host, run_id=resume, resume=resume is not None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return outcome.exit_code


def _stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
