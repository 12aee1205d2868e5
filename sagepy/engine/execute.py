"""One run of a compiled Program (SPEC §20): build the run's Runtime and effects chain from its Host, create
or resume the durable run, start the entry agent, wait for its end or a stop, and say how it ended.

Everything the run says goes through the Host (`host.err` for notices, `host.unhandled` for an uncaught
error); nothing here prints, exits or installs signal handlers: the CLI turns signals into `host.stop`.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from .outcome import COMPLETED, FAILED, RunOutcome, status_of

_SWITCH_INTERVAL_S = 0.0002   # see _lower_switch_interval


def _lower_switch_interval() -> None:
    """Lowered once a run first needs an MCP server, while few callers wait for the event loop at once; a caller
    that chose less keeps it. An MCP call's answer comes from the thread driving the event loop, and the agent
    waiting for it then waits for the GIL: CPython's default 5 ms makes it wait out the driver's bookkeeping (20
    agents against server-everything: 2.25x the raw SDK's time at 5 ms, 1.89x at 0.2 ms; 500 sequential calls
    to the suite server: 1.35x against 1.09x). Not with many threads runnable at once: switching every 0.2 ms
    then costs more than it gives, so the interval goes back up while the loop is crowded (2,000 agents making
    5 MCP calls each: 135 s, 90 s of it system time, at 0.2 ms; 35 s at 5 ms), and it is not lowered for runs
    that never call an MCP server (200 queued runs of 3 model calls: 37 ms of CPU a run against 17 ms at 5 ms;
    an eval's replay 1.9x the CPU a case)."""
    from ..aio import watch_crowd
    crowded = sys.getswitchinterval()
    quiet = min(crowded, _SWITCH_INTERVAL_S)
    watch_crowd(lambda now_crowded: sys.setswitchinterval(crowded if now_crowded else quiet))


if TYPE_CHECKING:
    from ..runtime.agents import Runtime
    from ..session import Session
    from .host import Host


class Program(Protocol):
    """What a run reads of its compiled program (sagepy.engine.program.Program, which calls this module)."""

    session: Session
    path: str
    entry: str | None
    uses: frozenset[str]

    @property
    def version(self) -> str: ...

    def agent(self, name: str) -> Any: ...


def execute(program: Program, host: Host, args: Sequence[str] | Mapping[str, Any], entry: str | None,
            run_id: str | None, resume: bool) -> RunOutcome:
    from ..deepstack import deep_recursion
    target, fields, program_args = _entry(program, args, entry)
    # Sage calls nest several Python frames deep: the limit is raised while the program runs and restored
    # afterwards, so that the caller's thread keeps its own
    with deep_recursion():
        return _execute(program, host, target, fields, program_args, run_id, resume)


def _entry(program: Program, args: Any, entry: str | None) -> tuple[Any, dict, list[str]]:
    """The agent to start, its fields (Sage values) and what `args()` returns. A caller's mistake (an unknown
    agent, fields that do not fit) raises ValueError: it is not the program's failure."""
    name = entry if entry is not None else program.entry
    if name is None:
        raise ValueError("the program has no `run` declaration: name the agent to run with entry=")
    target = program.agent(name)
    if target is None:
        raise ValueError(f"no agent {name} in {program.path}")
    if entry is None:
        if isinstance(args, Mapping):
            raise ValueError("args of the entry agent are the program's arguments: a sequence of strings")
        return target, {}, [str(a) for a in args]
    if not isinstance(args, Mapping):
        raise ValueError(f"args of agent {name} are its fields, as a dict")
    return target, _fields(target, dict(args)), []


def _fields(target: Any, given: dict) -> dict:
    from ..core.convert import ConversionError, from_json
    from ..core.types import OptionT
    from ..core.values import NONE
    info = target.decl.info
    fields: dict = {}
    for fname, field in info.fields.items():
        if field.persistent:
            continue
        if fname not in given:
            if isinstance(field.type, OptionT):
                fields[fname] = NONE
                continue
            raise ValueError(f"agent {target.name}: missing field {fname}")
        try:
            fields[fname] = from_json(given.pop(fname), field.type)
        except ConversionError as exc:
            raise ValueError(f"agent {target.name}: field {fname}: {exc}") from None
    if given:
        raise ValueError(f"agent {target.name} has no field {sorted(given)[0]}")
    return fields


def _execute(program: Program, host: Host, target: Any, fields: dict, program_args: list[str],
             run_id: str | None, resume: bool) -> RunOutcome:
    from ..diagnostics import display_path
    session = program.session
    settings = session.settings
    persistent = settings.persistence.present or resume
    if resume and not settings.persistence.present:
        from ..runtime.durable import NEEDS_PERSISTENCE
        host.err(NEEDS_PERSISTENCE)
        return RunOutcome(FAILED, 1)
    store = host.store
    if store is None and persistent:
        from ..session import store_open_failure
        from ..store.base import NewerFormat, Unavailable
        from ..store.config import StoreConfigError
        try:
            store = session.open_store()
        except (Unavailable, NewerFormat, StoreConfigError) as exc:   # refused before anything runs
            host.err(store_open_failure(_target(settings), exc))
            return RunOutcome(FAILED, 1)
    durable = persistent and (host.durable is not False or resume)
    from ..effects.trace import TraceFileError
    try:
        runtime = runtime_for(session, host, store=store, durable=durable, program_args=program_args,
                              export=display_path(program.path) if host.telemetry else None)
    except TraceFileError as exc:   # refused before anything runs, like a store that cannot be opened
        if store is not None and host.store is None:
            store.close()
        host.err(str(exc))
        return RunOutcome(FAILED, 1)
    runtime.effects.prestart(set(program.uses))   # a test's or a replayed run's facts start no server
    try:
        if not durable:
            return _run(program, host, runtime, target, fields, None)
        from ..runtime.durable import DurableExit, DurableRun
        from ..store.base import Busy, Unavailable
        try:
            try:
                run = DurableRun.prepare(runtime.store.backend, (run_id or "last") if resume else None, host.err,
                                         host.claim, host.leases)
                run.check_version(program.version)
                run.start(display_path(program.path), runtime, runtime.effects.journal, run_id)
            except DurableExit as exc:
                if exc.message:
                    host.err(exc.message)
                # an ended run keeps its status; a run this process may not execute now failed to run here
                return RunOutcome(exc.status or FAILED, exc.code, run_id=run_id if resume else None)
            if host.trace_file:
                _index_trace(program.session.root, run.run_id, host.trace_file)
            return _run(program, host, runtime, target, fields, run)
        except (Busy, Unavailable) as exc:   # the run's record could not be read or written
            from ..session import store_open_failure
            host.err(store_open_failure(_target(settings), exc))
            return RunOutcome(FAILED, 1)
    finally:
        host.effects = None
        runtime.effects.close()
        if host.store is None:
            runtime.store.close()


def runtime_for(session: Session, host: Host, *, store: Any = None, durable: bool = False,
                program_args: Sequence[str] = (), export: str | None = None) -> Runtime:
    """A run's Runtime and effects chain, assembled from its Host (a test's too: `sage test` runs each test
    block on a runtime of its own); `store`: the opened `@persistent` store, else process memory; `durable`:
    the chain journals into it; `export`: the entry file as displayed, when spans may be exported."""
    runtime = session.build_runtime(out=host.out, err=host.err, store=store, durable=durable,
                                    trace=(host.trace_file, host.trace_stderr), mocks=host.mocks,
                                    real_llm=host.real_llm, program_args=list(program_args), export=export,
                                    io=host.io_functions(), cassette=host.cassette)
    host.effects = runtime.effects
    runtime.effects.world.on_mcp = _lower_switch_interval   # the engine owns the interpreter's switch interval
    if host.people is not None:
        runtime.effects.answer_with(host.people)
    runtime.effects.world.shared_mcp = host.mcp
    runtime.effects.world.model = host.model
    return runtime


def _index_trace(root: str, run_id: str, trace_file: str) -> None:
    """A durable run's trace is found by its id (the web console's timeline, SPEC §24): a link
    `.sage/traces/<run id>.ndjson` to the file the run writes. Without it the run goes on all the same."""
    import os
    link = os.path.join(root, ".sage", "traces", run_id + ".ndjson")
    try:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(trace_file), link)
    except OSError:
        pass


def _target(settings: Any) -> Any:
    try:
        return settings.state_target()
    except Exception:   # the same problem opening the store reported: the message names no target then
        return None


def _run(program: Program, host: Host, runtime: Runtime, target: Any, fields: dict, run: Any) -> RunOutcome:
    effects = runtime.effects
    started = time.monotonic()
    effects.trace(None, "run.start", {"entry": target.name})
    code, ending, inst = 1, "stopped", None
    try:
        code, ending, inst = _run_agent(host, runtime, target, fields, run.journal if run is not None else None)
    finally:
        effects.trace(None, "run.end", {"exit_code": code, "duration_ms": int((time.monotonic() - started) * 1000)})
        if run is not None:
            run.finish(code, ending)
    value = error = None
    if inst is not None and ending == COMPLETED:
        value = inst.result
    elif inst is not None and inst.error is not None and ending == FAILED:
        error = inst.error.display()
    return RunOutcome(status_of(ending, code), code, value, error, run.run_id if run is not None else None,
                      _usage(effects))


def _wait_for_any(finished: threading.Event, cancel: threading.Event, stopped: threading.Event | None) -> None:
    """Until the entry agent finished, the run was told to stop or its journal stopped: woken by the events
    themselves (sagepy.wake), or polled when the caller's cancel event is a plain one."""
    watched = [event for event in (finished, cancel, stopped) if event is not None]
    if not _wakes(*watched):
        while not finished.wait(0.1):
            if cancel.is_set() or (stopped is not None and stopped.is_set()):
                return
        return
    wake = threading.Event()
    for event in watched:
        event.also_wake(wake)
    try:
        while not any(event.is_set() for event in watched):
            wake.wait()
            wake.clear()
    finally:
        for event in watched:
            event.forget(wake)


def _wakes(*events: threading.Event | None) -> bool:
    from ..wake import WakingEvent
    return all(event is None or isinstance(event, WakingEvent) for event in events)


class _StopAgents:
    """Set by the run's cancel event or its journal's stop event when the entry agent runs on the caller's
    thread, which cannot wait for them: asks every agent of the run to stop before its next step."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def set(self) -> None:
        self.runtime.stop_all()


def _run_here(body: Any, runtime: Runtime, cancel: Any, stopped: Any) -> bool:
    """Run the entry agent on this thread, a large-stack one already (a served call's): no thread to start and
    none to wait for. Whether the run was told to stop before the agent finished."""
    watched = [event for event in (cancel, stopped) if event is not None]
    stop = _StopAgents(runtime)
    for event in watched:
        event.also_wake(stop)
    try:
        body()
    finally:
        for event in watched:
            event.forget(stop)
    return cancel.is_set()


def _usage(effects: Any) -> dict:
    return effects.usage_summary()


def _run_agent(host: Host, runtime: Runtime, agent: Any, fields: dict, journal: Any) -> tuple[int, str, Any]:
    """Run the entry agent or supervisor: (exit code, how the run ended: `completed`, `failed`, `halted`,
    `paused`, `cancelled` or `stopped` — told to stop, or a journal divergence, after which a durable run stays
    resumable —, the entry agent's instance)."""
    from ..deepstack import on_deep_stack, start_thread
    from ..runtime.agents import AgentInstance
    from ..runtime.lifecycle import run_lifecycle
    from ..runtime.supervisors import SupervisorPlan, start_supervisor
    from ..wake import WakingEvent
    finished = WakingEvent()
    cancel = host.cancel
    if isinstance(agent, SupervisorPlan):
        inst = start_supervisor(runtime, agent, None, number=0)

        def body() -> None:
            inst.done.wait()
            finished.set()
    else:
        inst = AgentInstance(runtime, agent, 0, None)
        inst.fields = fields
        runtime.register(inst)

        def body() -> None:
            try:
                run_lifecycle(inst, entry=True)
            finally:
                finished.set()
    stopped = journal.stopped if journal is not None else None
    if not isinstance(agent, SupervisorPlan) and on_deep_stack() and _wakes(cancel, stopped):
        inst.thread = threading.current_thread()
        told_to_stop = _run_here(body, runtime, cancel, stopped)
    else:
        thread = start_thread(body, inst.display_name)
        if not isinstance(agent, SupervisorPlan):
            inst.thread = thread
        _wait_for_any(finished, cancel, stopped)
        told_to_stop = cancel.is_set() and not finished.is_set()
    if told_to_stop:
        runtime.stop_all()
        runtime.shutdown(grace_seconds=2.0)
        return host.cancel_code, "stopped", inst
    if journal is None or not journal.stopped.is_set():
        runtime.shutdown(grace_seconds=2.0)
    if journal is not None and journal.stopped.is_set():   # a halt or a divergence, maybe in an `on stop`
        runtime.stop_all()
        runtime.shutdown(grace_seconds=2.0)
        if journal.stop_message:   # a pause says which steps wait once the run has released its lease
            runtime.write_err(journal.stop_message)
        return journal.stop_code, journal.kind if journal.kind in ("halted", "cancelled", "paused") else "stopped", inst
    cassette = host.cassette
    if cassette is not None and cassette.missed is not None:   # a replay miss stopped the run (SPEC §22.2)
        host.err(cassette.missed)
        return 1, FAILED, inst
    for failed in runtime.unawaited_failures():
        if failed is inst:
            continue
        runtime.write_err(f"warning: agent {failed.display_name} failed and was never awaited: "
                          f"{failed.error.display()}")
    if inst.error is not None:
        host.unhandled(inst.display_name, inst.error)
        return 1, FAILED, inst
    result = inst.result
    if type(result) is int:
        return max(0, min(255, result)), COMPLETED, inst
    return 0, COMPLETED, inst
