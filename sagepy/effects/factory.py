"""Assembling the effects chain of one run or test: the one place that lists the layers and gives each its
own collaborators. A test is a run whose host supplies mock queues: its chain has the mocks layer, and its
boundary asks the mocks' facts (sagepy.effects.mocks.MockedFacts); a replayed run's asks the cassette's."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .boundary import Effects
from .chain import compose
from .facts import Facts, LiveFacts
from .real import RealLayer
from .trace import TraceLayer, Tracer

if TYPE_CHECKING:
    from ..settings import Settings
    from .cassette import Cassette
    from .journal import Journal
    from .mocks import MockQueues


def build_effects(runtime: Any, settings: Settings, io_builtins: dict[str, Callable[..., Any]], *,
                  trace_path: str | None = None, trace_stderr: bool = False, mocks: MockQueues | None = None,
                  real_llm: bool = False, journal: Journal | None = None, export: str | None = None,
                  cassette: Cassette | None = None) -> Effects:
    """The effects of one `sage run`, or of one test when `mocks` are the test's queues (the mocks layer
    first; `real_llm`: `sage test --real-llm`); `journal`: that of a durable run (SPEC §14: `sage run` with
    `[persistence]`, unless `--no-journal`; a test never journals); `export`: the entry file as displayed, when
    `sage run` exports its spans if an OTLP endpoint is configured (SPEC §18.1; a test never exports);
    `cassette`: the recorded run to write or to answer from (SPEC §22.2), closed with the effects. Sets
    `runtime.effects`."""
    effects = Effects(runtime, settings, Tracer(trace_path, trace_stderr))
    effects.journal = journal
    if journal is not None:
        journal.world = effects.world
    effects.cassette = cassette
    effects.facts = facts(effects, mocks)
    if export is not None:
        _start_export(effects, export)
    # a model turn no mock answers goes on to the model (`--real-llm`) or to the cassette (SPEC §22.2)
    effects.perform = compose(layers(effects, io_builtins, mocks, real_llm or cassette is not None))
    runtime.effects = effects
    return effects


def facts(effects: Effects, mocks: MockQueues | None) -> Facts:
    """What the boundary asks of the world besides steps: the world's, as a replay answers them, as a test
    answers them."""
    found: Facts = LiveFacts(effects.world, effects.journal, lambda: effects.answerer)
    if effects.cassette is not None:
        found = effects.cassette.facts(found)
    if mocks is not None:
        from .mocks import MockedFacts
        found = MockedFacts(mocks, effects.settings, found)
    return found


def _start_export(effects: Effects, entry: str) -> None:
    """A missing otel extra or an unsupported protocol is one warning, and the run goes on without export."""
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
    effects.otel = otel.SpanExport(config, entry, effects.journal, known_secrets(effects.settings),
                                   effects.runtime.write_err)
    effects.world.observe_llm = otel.observe_answer


def layers(effects: Effects, io_builtins: dict[str, Callable[..., Any]], mocks: MockQueues | None = None,
           model_falls_through: bool = False) -> list:
    """The chain, outermost first: `mocks`, the queues of a test, whose layer comes first after approvals."""
    chain: list = []
    if effects.gated:   # a decision is taken before anything else happens to a call (SPEC §17.1)
        from .approvals import ApprovalLayer
        chain.append(ApprovalLayer(effects.people))
    if mocks is not None:   # it answers approvals and questions too: after the approvals layer asked for them
        from .mocks import MockLayer
        chain.append(MockLayer(mocks, model_falls_through))
    if effects.cassette is not None:   # below the mocks, which answer first; a replayed step goes no further
        from .cassette import CassetteLayer
        chain.append(CassetteLayer(effects.cassette, effects.settings.llm, effects.world, effects.runtime.stop_all))
    if effects.tracer.on:   # tracing is decided once per run: without it, steps skip the layer altogether
        chain.append(TraceLayer(effects.tracer, effects.journal, effects.settings.llm.model))
    if effects.otel is not None:
        from .otel import OtelLayer
        chain.append(OtelLayer(effects.otel, effects.settings.llm, effects.journal, effects.world,
                               effects.live_handle))
    if effects.journal is not None:
        from .journal import JournalLayer
        chain.append(JournalLayer(effects.journal))
    keeps = effects.journal is not None or effects.cassette is not None or effects.otel is not None
    chain.append(RealLayer(effects.world, io_builtins, keeps_outcomes=keeps))
    return chain
