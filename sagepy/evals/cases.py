"""One case of an eval (SPEC §22.1): the eval block run once on one dataset row, in a run of its own, with its
scores, its latency, its model usage and what went wrong.

A case is a run of its own (SPEC §20): a runtime built from the eval file's compiled program and a Host of
the case's (its own agents, output and effects, so nothing of one case reaches another), against the real
model, or its cassette: recorded to or replayed from `DIR/<eval-slug>/<row>-<repeat>.jsonl` (§22.2). The
case's block runs in the thread that calls `CaseRunner.run`, which must have a large stack
(sagepy.deepstack: `sage eval`'s workers are such threads). A case fails when its block raises an uncaught
error (that includes a failed assertion, a score expression that fails and a replay miss), when a `Bool`
score is false, or when a `Float` score lies outside 0.0–1.0; only the first of these is an *error*.
"""
from __future__ import annotations

import os
import re
import threading
import time
from typing import Any

from ..core.errors import AgentCancelled, SageRaise, TestAbort
from ..core.values import display
from ..effects.cassette import Cassette
from ..effects.step import LLM, set_current_context
from ..engine.execute import runtime_for
from ..engine.host import Host
from ..runtime.agents import AgentInstance

VALUE_CHARS = 200


class EvalSpec:
    """One compiled eval block: its file, name, dataset (absolute path), row type and body."""

    __slots__ = ("file", "name", "dataset", "row_type", "body", "session", "slug")

    def __init__(self, file: str, name: str, dataset: str, row_type: Any, body: Any, session: Any) -> None:
        self.file = file
        self.name = name
        self.dataset = dataset
        self.row_type = row_type
        self.body = body
        self.session = session
        self.slug = slug(name)


def slug(name: str) -> str:
    """The eval's name as a directory name: lower case, runs of other characters as one `-`."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "eval"


class CaseResult:
    """`scores`: name -> number; `false_scores`: the Bool scores that were false and the Float ones out of
    range, as words; `error`: why the case did not run to its end, else None."""

    __slots__ = ("row", "repeat", "scores", "false_scores", "error", "latency_ms", "usage", "value")

    def __init__(self, row: int, repeat: int) -> None:
        self.row = row
        self.repeat = repeat
        self.scores: dict[str, float] = {}
        self.false_scores: list[str] = []
        self.error: str | None = None
        self.latency_ms = 0
        self.usage: dict = {"input_tokens": 0, "output_tokens": 0, "cost": None}
        self.value = ""

    @property
    def passed(self) -> bool:
        return self.error is None and not self.false_scores

    def as_json(self) -> dict:
        return {"row": self.row, "repeat": self.repeat, "scores": dict(self.scores), "passed": self.passed,
                "error": self.error, "latency_ms": self.latency_ms, "usage": dict(self.usage)}


def cassette_path(directory: str, spec: EvalSpec, row: int, repeat: int) -> str:
    return os.path.join(directory, spec.slug, f"{row}-{repeat}.jsonl")


class CaseRunner:
    """Runs cases of the command's evals; `record` / `replay`: the cassette directories (at most one);
    `stopping`: set on Ctrl-C, when every running case is stopped before its next step."""

    def __init__(self, record: str | None = None, replay: str | None = None) -> None:
        self.record = record
        self.replay = replay
        self.stopping = threading.Event()
        self._running: dict[Any, Any] = {}   # runtime -> the case's own agent context
        self._lock = threading.Lock()
        self._made: set[str] = set()           # the cassette directories made so far

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            running = list(self._running.items())
        for runtime, ctx in running:
            ctx.request_stop()
            runtime.stop_all()

    def run(self, spec: EvalSpec, row: Any, repeat: int) -> CaseResult:
        """Run the case of `row` (a datasets.Row) in this thread; never raises."""
        result = CaseResult(row.number, repeat)
        if row.error is not None:
            result.error = row.error
            return result
        if self.stopping.is_set():
            result.error = "stopped"
            return result
        try:
            cassette = self._cassette(spec, row.number, repeat)
        except Exception as exc:   # a cassette refused or unwritable: this case's error
            result.error = str(exc)
            return result
        runtime = runtime_for(spec.session, Host(out=_discard, err=_discard, telemetry=False, cassette=cassette))
        effects = runtime.effects
        last: list = [None]
        perform = effects.perform

        def observed(step: Any) -> Any:   # the first model answer: the value the report quotes (a judge's
            outcome = perform(step)       # comes after it)
            if step.kind == LLM and last[0] is None:
                last[0] = outcome
            return outcome
        effects.perform = observed
        ctx = AgentInstance(runtime, None, 0, None)
        with self._lock:
            self._running[runtime] = ctx
        if self.stopping.is_set():   # stopped while this case was being set up: stop() did not see it
            ctx.request_stop()
        started = time.monotonic()
        try:
            self._execute(spec, ctx, row.value, result)
        finally:
            result.latency_ms = int((time.monotonic() - started) * 1000)
            with self._lock:
                del self._running[runtime]
            runtime.stop_all()
            runtime.shutdown(grace_seconds=0.5)
            effects.close()
        if cassette is not None and cassette.missed is not None:
            result.error = cassette.missed
        if not result.passed:   # only a failed case's value is shown: a passed one keeps no text
            result.value = _shown(last[0])
        result.usage = _usage(runtime)
        return result

    def _cassette(self, spec: EvalSpec, row: int, repeat: int) -> Any:
        if self.replay is not None:
            return Cassette.replay(cassette_path(self.replay, spec, row, repeat))
        if self.record is not None:
            folder = os.path.join(self.record, spec.slug)
            if folder not in self._made:   # made once per eval, not once per case
                os.makedirs(folder, exist_ok=True)
                self._made.add(folder)
            return Cassette.record(cassette_path(self.record, spec, row, repeat), made=True)
        return None

    def _execute(self, spec: EvalSpec, ctx: Any, value: Any, result: CaseResult) -> None:
        set_current_context(ctx)
        ctx.scores = []
        error = None
        try:
            spec.body.run(ctx, value)
        except SageRaise as exc:
            error = _error_text(exc.error)
        except TestAbort as abort:
            error = abort.detail
        except AgentCancelled:
            error = "stopped"
        except RecursionError:
            error = "error[E205]: Runtime error: call depth exceeded"
        except Exception as exc:  # a bug in sagepy fails the case, not the command
            error = f"internal error: {type(exc).__name__}: {exc}"
        finally:
            set_current_context(None)
        runtime = ctx.runtime
        if runtime.test_failure is not None and error is None:
            error = runtime.test_failure.detail
        for name, score in ctx.scores:
            _score(result, name, score)
        result.error = error


def _score(result: CaseResult, name: str, value: Any) -> None:
    if value is True or value is False:
        result.scores[name] = 1.0 if value else 0.0
        if not value:
            result.false_scores.append(f"{name} = false")
        return
    number = float(value)
    result.scores[name] = number
    if not 0.0 <= number <= 1.0:
        result.false_scores.append(f"{name} = {display(value)} (outside 0.0 to 1.0)")


def _error_text(error: Any) -> str:
    return f"error[{error.code}]: {error.display()}" if error.code else f"error: {error.display()}"


def _shown(answer: Any) -> str:
    """The first characters of the case's first model answer (a neutral assistant message's content, for a turn of
    a `divine` with tools)."""
    if answer is None:
        return ""
    if isinstance(answer, dict) and "content" in answer:
        answer = answer.get("content") or ""
    if not isinstance(answer, str):
        from ..core.json_text import compact_json
        answer = compact_json(answer)
    return answer[:VALUE_CHARS]


def _usage(runtime: Any) -> dict:
    """The run's model usage (SPEC §23), as the engine reports it in `RunOutcome.usage`."""
    summary = runtime.effects.usage_summary()
    return {"input_tokens": summary.get("input_tokens", 0), "output_tokens": summary.get("output_tokens", 0),
            "cost": summary.get("cost")}


def _discard(text: str) -> None:
    """A case's `print` output is not the report's."""
