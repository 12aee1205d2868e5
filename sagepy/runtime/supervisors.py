"""Supervisors (SPEC §4.7): children started in order, restarted by policy and strategy, intensity-limited.

A running supervisor is an `AgentInstance` whose thread runs `supervise` instead of an agent lifecycle, so a
supervisor can be a child of another supervisor and be stopped like any agent.
"""
from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Any

from ..deepstack import start_thread
from ..effects.step import set_current_context
from .agents import AgentInstance
from ..core.errors import AgentCancelled, SageRaise
from .lifecycle import spawn
from ..core.values import ErrorValue

if TYPE_CHECKING:
    from .compile.context import Compiling


class ChildPlan:
    __slots__ = ("name", "kind", "target", "restart", "fields", "nslots", "llm_overrides")

    def __init__(self, name: str, restart: str) -> None:
        self.name = name
        self.kind = ""            # "agent" | "supervisor"
        self.target: Any = None   # CompiledAgent or SupervisorPlan
        self.restart = restart
        self.fields: list[tuple[str, Any]] = []
        self.nslots = 1
        self.llm_overrides: dict | None = None


class SupervisorPlan:
    """A compiled supervisor declaration."""

    __slots__ = ("name", "strategy", "children", "message_handlers", "handlers", "persistent_types", "persistent")

    def __init__(self, name: str, strategy: str) -> None:
        self.name = name
        self.strategy = strategy
        self.children: list[ChildPlan] = []
        # an AgentInstance reads these of its `agent`; a supervisor has no handlers of its own
        self.message_handlers: list = []
        self.handlers: dict = {}
        self.persistent_types: dict = {}
        self.persistent: list = []


def compile_supervisor(c: Compiling, decl: Any, plan: SupervisorPlan) -> None:
    """Compile the children of one supervisor declaration (the checker resolved and checked them)."""
    for child in decl.children:
        spec = ChildPlan(child.name, child.restart)
        target = c.scope.lookup(child.name)
        spec.kind = target.kind
        spec.target = c.runtime_item(target)
        spec.fields = [(name, c.expr(value)) for name, value, _span in child.fields]
        spec.nslots = child.nslots
        for _role, handler_name in child.handlers:
            handler = c.scope.lookup(handler_name)
            spec.llm_overrides = {key: lit.value for key, lit, _span in handler.decl.entries
                                  if key in ("model", "temperature", "max_tokens")}
        plan.children.append(spec)


def supervise(inst: AgentInstance, plan: SupervisorPlan) -> None:
    """Run the children until none is running or due to restart; raise E209 past the intensity limit."""
    runtime = inst.runtime
    limits = runtime.effects.settings.supervision
    max_restarts = limits.max_restarts
    window = float(limits.within_seconds)
    children: list[AgentInstance | None] = [None] * len(plan.children)
    restarts: collections.deque = collections.deque()
    starts = [0] * len(plan.children)   # per child, restarts included
    # SPEC §14: a child's path is `<supervisor path>/<Child>#<k>`, k counting that child's starts. Paths must
    # be unique and the same on every execution: when several children run the same agent, their starts
    # interleave in declaration order (first starts #1, #2, …, then each child's restarts in its own slots).
    same_name = [[j for j, other in enumerate(plan.children) if other.name == spec.name] for spec in plan.children]

    def start(i: int) -> None:
        spec = plan.children[i]
        frame = [None] * spec.nslots
        frame[0] = inst
        fields = {name: code(frame) for name, code in spec.fields}
        starts[i] += 1
        group = same_name[i]
        path = f"{inst.path}/{spec.name}#{(starts[i] - 1) * len(group) + group.index(i) + 1}"
        if spec.kind == "agent":
            child = spawn(spec.target, fields, inst, runtime, path, spec.llm_overrides)
        else:
            child = start_supervisor(runtime, spec.target, inst, path=path)
        children[i] = child

    def stop(indexes: list[int]) -> None:
        for i in indexes:
            child = children[i]
            if child is not None and not child.done.is_set():
                child.request_stop()
        for i in indexes:
            child = children[i]
            if child is not None:
                child.done.wait(5)

    try:
        for i in range(len(children)):
            start(i)
        while True:
            if inst.cancelled:
                stop(list(range(len(children))))
                return
            ended = [i for i, ch in enumerate(children) if ch is not None and ch.done.is_set()]
            for i in ended:
                child = children[i]
                if child is None or not child.done.is_set():
                    continue   # restarted meanwhile by a strategy
                spec = plan.children[i]
                failed = child.error is not None and not child.quiet_failure
                due = spec.restart == "Permanent" or (spec.restart == "Transient" and failed)
                # a restart answers a failure; a failed Temporary child is reported at exit like any agent
                # that failed and was never awaited (SPEC §4.5)
                child.awaited = due
                if not due:
                    children[i] = None
                    continue
                now = time.monotonic()
                # a child that ended while replaying its journal (a resumed durable run) ended in the recorded
                # run, at that run's pace: replayed sleeps take no time, so its restart does not count
                if not (child.replay_until and child.steps <= child.replay_until):
                    restarts.append(now)
                while restarts and now - restarts[0] > window:
                    restarts.popleft()
                if len(restarts) > max_restarts:
                    stop(list(range(len(children))))
                    raise SageRaise(ErrorValue("Agent", f"restart intensity exceeded ({max_restarts + 1} restarts in "
                                               f"{int(window) if window == int(window) else window} s)", "E209"))
                if plan.strategy == "OneForOne":
                    group = [i]
                elif plan.strategy == "OneForAll":
                    group = list(range(len(children)))
                else:
                    group = list(range(i, len(children)))
                stop([j for j in group if j != i])
                for j in group:
                    if plan.children[j].restart == "Temporary" and j != i:
                        children[j] = None
                        continue
                    start(j)
            if all(ch is None for ch in children):
                return
            inst.cancel_event.wait(0.02)
    except AgentCancelled:
        stop(list(range(len(children))))


def start_supervisor(runtime: Any, plan: SupervisorPlan, parent: Any, number: int | None = None,
                     path: str | None = None) -> AgentInstance:
    """Start a supervisor in its own thread: the entry (number 0, path its name) or a child."""
    inst = AgentInstance(runtime, plan, runtime.next_number(plan.name) if number is None else number, parent, path)
    runtime.register(inst)

    def body() -> None:
        set_current_context(inst)   # children's field initialisers run here
        try:
            supervise(inst, plan)
        except SageRaise as exc:
            inst.error = exc.error
            if exc.error.agent is None:
                exc.error.agent = inst.display_name
        finally:
            inst.result_ready.set()
            inst.done.set()
    inst.thread = start_thread(body, inst.display_name)
    return inst
