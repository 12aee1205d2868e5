"""Assembling the effects chain of one run or test: the one place that lists the layers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .boundary import Effects
from .chain import compose
from .real import RealLayer
from .trace import TraceLayer, Tracer

if TYPE_CHECKING:
    from ..settings import Settings
    from .journal import Journal
    from .mocks import MockQueues


def build_effects(runtime: Any, settings: Settings, io_builtins: dict[str, Callable[..., Any]], *,
                  trace_path: str | None = None, trace_stderr: bool = False, mocks: MockQueues | None = None,
                  real_llm: bool = False, journal: Journal | None = None) -> Effects:
    """The effects of one `sage run`, or of one test when `mocks` are the test's queues (the mocks layer
    first; `real_llm`: `sage test --real-llm`); `journal`: that of a durable run (SPEC §14: `sage run` with
    `[persistence]`, unless `--no-journal`; a test never journals). Sets `runtime.effects`."""
    effects = Effects(runtime, settings, Tracer(trace_path, trace_stderr), mocks, real_llm)
    effects.journal = journal
    effects.perform = compose(layers(effects, io_builtins))
    runtime.effects = effects
    return effects


def layers(effects: Effects, io_builtins: dict[str, Callable[..., Any]]) -> list:
    """The chain, outermost first."""
    chain: list = []
    if effects.gated:   # a decision is taken before anything else happens to a call (SPEC §17.1)
        from .approvals import ApprovalLayer
        chain.append(ApprovalLayer(effects.people))
    if effects.mocks is not None:
        from .mocks import MockLayer
        chain.append(MockLayer(effects))
    if effects.tracer.on:   # tracing is decided once per run: without it, steps skip the layer altogether
        chain.append(TraceLayer(effects.tracer))
    if effects.journal is not None:
        from .journal import JournalLayer
        chain.append(JournalLayer(effects.journal))
    chain.append(RealLayer(effects.world, io_builtins))
    return chain
