"""Assembling the effects chain of one run or test: the one place that lists the layers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .boundary import Effects
from .chain import compose
from .real import RealLayer
from .trace import TraceLayer, Tracer

if TYPE_CHECKING:
    from ..settings import Settings
    from ..testing.mocks import MockQueues


def build_effects(runtime: Any, settings: Settings, *, trace_path: str | None = None, trace_stderr: bool = False,
                  mocks: MockQueues | None = None, real_llm: bool = False) -> Effects:
    """The effects of one `sage run`, or of one test when `mocks` are the test's queues (the mocks layer
    first; `real_llm`: `sage test --real-llm`). Sets `runtime.effects`."""
    effects = Effects(runtime, settings, Tracer(trace_path, trace_stderr), mocks, real_llm)
    effects.perform = compose(layers(effects))
    runtime.effects = effects
    return effects


def enable_journal(effects: Effects, journal: Any) -> None:
    """Make a run durable (SPEC §14): the chain gains the journal layer (`sage run` only: a test never
    journals, and a run with `--no-journal` keeps the chain without it)."""
    effects.journal = journal
    effects.perform = compose(layers(effects))


def enable_export(effects: Effects, entry: str) -> None:
    """Export this run's spans when an OTLP endpoint is configured (SPEC §18.1; `sage run` only: a test
    never exports). `entry`: the entry file as displayed. A missing otel extra or an unsupported protocol is
    one warning, and the run goes on without export."""
    from ..telemetry.config import MISSING_EXTRA, export_config
    config, warning = export_config(effects.settings)
    if warning is not None:
        effects.runtime.write_err(warning)
    if config is None:
        return
    try:
        from . import otel
    except ImportError:
        effects.runtime.write_err(MISSING_EXTRA)
        return
    from ..telemetry.secrets import known_secrets
    journal = effects.journal
    effects.otel = otel.SpanExport(config, entry, journal.run_id if journal is not None else None,
                                   known_secrets(effects.settings), effects.runtime.write_err)
    effects.world.observe_llm = otel.observe_answer
    effects.perform = compose(layers(effects))


def layers(effects: Effects) -> list:
    """The chain, outermost first."""
    chain: list = []
    if effects.mocks is not None:
        from .mocks import MockLayer
        chain.append(MockLayer(effects))
    if effects.tracer.on:   # tracing is decided once per run: without it, steps skip the layer altogether
        chain.append(TraceLayer(effects.tracer, effects))
    if effects.otel is not None:
        from .otel import OtelLayer
        chain.append(OtelLayer(effects.otel, effects))
    if effects.journal is not None:
        from .journal import JournalLayer
        chain.append(JournalLayer(effects.journal))
    chain.append(RealLayer(effects.world))
    return chain
