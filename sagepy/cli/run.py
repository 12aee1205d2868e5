"""`sage run`: load, compile and run a program's entry agent; exit codes of SPEC §4.9.

A run without `[persistence]` imports nothing of the durable store (sagepy.store, runtime/durable)."""
from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from ..deepstack import deep_recursion, start_thread
from ..diagnostics import Diagnostic, display_path, format_diagnostics, format_location_block
from ..runtime.agents import AgentInstance, Runtime
from ..runtime.lifecycle import run_lifecycle
from ..syntax import ast as A

if TYPE_CHECKING:
    from ..session import Session


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
    # Sage calls nest several Python frames deep: the limit is raised while the program runs and restored
    # afterwards (sagepy.deepstack), so that the caller's thread (pytest's, for an in-process run) keeps its
    # small C stack's limit
    with deep_recursion():
        return _run_program(session, entry_path, trace_file, trace_stderr, program_args or [], resume, journal,
                            whole_process)


def _run_program(session: Session, entry_path: str, trace_file: str | None, trace_stderr: bool,
                 program_args: list[str], resume: str | None, journal: bool, whole_process: bool) -> int:
    from ..session import store_open_failure
    trace = session.trace_target(trace_file, trace_stderr)
    target = None
    if session.settings.persistence.present or resume is not None:
        from ..store.config import StoreConfigError
        try:
            target = session.settings.state_target()
        except StoreConfigError as exc:
            sys.stderr.write(store_open_failure(None, exc) + "\n")
            return 1
    if target is None:   # no [persistence]: `@persistent` fields live in process memory, nothing journals
        if resume is not None:
            from ..runtime.durable import NEEDS_PERSISTENCE
            sys.stderr.write(NEEDS_PERSISTENCE + "\n")
            return 1
        from ..effects.trace import TraceFileError
        try:
            runtime = session.build_runtime(trace=trace, program_args=program_args, export=display_path(entry_path))
        except TraceFileError as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
        try:
            return _run_runtime(session, runtime, entry_path, None, whole_process)
        finally:
            runtime.effects.close()
            runtime.store.close()
    from ..effects.trace import TraceFileError
    from ..store.base import Busy, NewerFormat, Unavailable
    from ..store.config import StoreConfigError
    durable = journal or resume is not None
    try:
        runtime = session.build_runtime(trace=trace, persistent=True, durable=durable, program_args=program_args,
                                        export=display_path(entry_path))
    except (Unavailable, NewerFormat, StoreConfigError) as exc:   # SPEC §4.8, §14: refused before anything runs
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return 1
    except TraceFileError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    try:
        if not durable:
            return _run_runtime(session, runtime, entry_path, None, whole_process)
        from ..runtime.durable import DurableExit, DurableRun
        try:   # a finished run is refused before anything is loaded
            run = DurableRun.prepare(runtime.store.backend, resume)
        except DurableExit as exc:
            sys.stderr.write(exc.message + "\n")
            return exc.code
        return _run_runtime(session, runtime, entry_path, run, whole_process)
    except (Busy, Unavailable) as exc:   # the run's record could not be read or written
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return 1
    finally:
        runtime.effects.close()
        runtime.store.close()


def _run_runtime(session: Session, runtime: Runtime, entry_path: str, run: Any, whole_process: bool) -> int:
    """Compile and run the entry agent on `runtime`; `run`: the runtime.durable.DurableRun of a durable run."""
    effects = runtime.effects
    program, diags = session.compile(entry_path, runtime, prestart=True)
    run_decl = None
    for item in program.root.items:
        if isinstance(item, A.RunDecl):
            run_decl = item
    compiler = getattr(program, "compiler", None)
    if run_decl is None and not any(d.severity == "error" for d in diags):
        diags.append(Diagnostic("E041", "the entry file has no `run` declaration", entry_path, None,
                                hint="end the file with `run Main;` naming the entry agent"))
    target = compiler.entry_target(run_decl.name) if run_decl is not None and compiler is not None else None
    if run is not None:
        from ..runtime.durable import DurableExit
        from ..workers.version import program_version, version_files
        try:   # a worker's run of a changed program is left before anything is reported
            run.check_version(program_version(session.root, version_files(session, [m.path for m in program.modules])))
        except DurableExit as exc:
            return exc.code
    if any(d.severity == "error" for d in diags):
        report_diagnostics(diags)
        return 1
    if run is not None:
        from ..runtime.durable import DurableExit
        try:
            run.start(display_path(entry_path), runtime, effects.journal)
        except DurableExit as exc:
            sys.stderr.write(exc.message + "\n")
            return exc.code
    if whole_process:
        # What loading and compiling left (modules, the parser, the prelude, the ASTs and their closures) lives
        # until the process ends: frozen, it is skipped by the collections of the run and of the interpreter's
        # shutdown, which would otherwise walk it several times (a fifth of a first run's time, with the parser).
        # The collector, off while they were made (cli/main), runs again for the program's own objects.
        gc.freeze()
        gc.enable()
    started = time.monotonic()
    effects.trace(None, "run.start", {"entry": run_decl.name})
    code, ending = 1, "stopped"
    try:
        code, ending = _run_agent(runtime, target, run.journal if run is not None else None)
    finally:
        effects.trace(None, "run.end", {"exit_code": code, "duration_ms": int((time.monotonic() - started) * 1000)})
        if run is not None:
            run.finish(code, ending)
    return code


def _run_agent(runtime: Runtime, agent: Any, journal: Any) -> tuple[int, str]:
    """Run the entry agent or supervisor: (exit code, how the run ended: `completed`, `failed`, `halted`,
    `paused` or `stopped` — a signal or a journal divergence, after which a durable run stays resumable)."""
    from ..runtime.supervisors import SupervisorPlan, start_supervisor
    finished = threading.Event()
    if isinstance(agent, SupervisorPlan):
        inst = start_supervisor(runtime, agent, None, number=0)

        def body() -> None:
            inst.done.wait()
            finished.set()
    else:
        inst = AgentInstance(runtime, agent, 0, None)
        runtime.register(inst)

        def body() -> None:
            try:
                run_lifecycle(inst, entry=True)
            finally:
                finished.set()

    interrupted: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and runtime.effects is not None and runtime.effects.interrupt_form():
            return
        interrupted.append(130 if signum == signal.SIGINT else 143)
        finished.set()

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:
            pass
    try:
        thread = start_thread(body, inst.display_name)
        if not isinstance(agent, SupervisorPlan):
            inst.thread = thread
        while not finished.wait(0.1):
            if journal is not None and journal.stopped.is_set():
                break
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if interrupted:
        runtime.stop_all()
        runtime.shutdown(grace_seconds=2.0)
        return interrupted[0], "stopped"
    if journal is None or not journal.stopped.is_set():
        runtime.shutdown(grace_seconds=2.0)
    if journal is not None and journal.stopped.is_set():   # a halt or a divergence, maybe in an `on stop`
        runtime.stop_all()
        runtime.shutdown(grace_seconds=2.0)
        if journal.stop_message:   # a pause says which steps wait once the run has released its lease
            runtime.write_err(journal.stop_message)
        return journal.stop_code, journal.kind if journal.kind in ("halted", "cancelled", "paused") else "stopped"
    for failed in runtime.unawaited_failures():
        if failed is inst:
            continue
        runtime.write_err(f"warning: agent {failed.display_name} failed and was never awaited: "
                          f"{failed.error.display()}")
    if inst.error is not None:
        report_unhandled(inst.display_name, inst.error)
        return 1, "failed"
    result = inst.result
    if type(result) is int:
        return max(0, min(255, result)), "completed"
    return 0, "completed"


def report_unhandled(agent_name: str, error: Any) -> None:
    code = error.code
    head = f"error[{code}]" if code else "error"
    head += f": unhandled error in agent {error.agent or agent_name}: {error.display()}"
    file, span = (error.span if error.span else (None, None))
    from ..render import write_diagnostics
    write_diagnostics(format_location_block(file, span, head) + "\n")

