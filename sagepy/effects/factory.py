"""Assembling the effects chain of one run, test or check: the one place that lists the layers."""
from __future__ import annotations

from typing import Any

from .boundary import Effects
from .chain import compose
from .journal import JournalLayer
from .real import RealLayer
from .trace import TraceLayer, Tracer


def build_effects(runtime: Any, project: Any, mode: str = "run", *, trace_path: str | None = None,
                  trace_stderr: bool = False, real_llm: bool = False) -> Effects:
    """The effects of one `sage run` (`mode` "run"), one test ("test": the mocks layer first) or one
    `sage check` ("check": the chain of a run, which performs nothing since nothing runs). Sets
    `runtime.effects`."""
    mocks = None
    if mode == "test":
        from ..testing.mocks import MockQueues
        mocks = MockQueues()
    effects = Effects(runtime, project, Tracer(trace_path, trace_stderr), mocks, real_llm)
    effects.perform = compose(layers(effects, mode))
    runtime.effects = effects
    return effects


def layers(effects: Effects, mode: str) -> list:
    """The chain, outermost first."""
    chain: list = []
    if mode == "test":
        from .mocks import MockLayer
        chain.append(MockLayer(effects))
    if effects.tracer.on:   # tracing is decided once per run: without it, steps skip the layer altogether
        chain.append(TraceLayer(effects.tracer))
    chain += [JournalLayer(), RealLayer(effects.world)]
    return chain
