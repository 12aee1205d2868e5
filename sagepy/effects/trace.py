"""Trace events (SPEC §4.11): the writer, and the layer that emits the events of tool steps.

Model turns are traced by the LLM client itself (`llm.request`/`llm.response` carry its attempt and token
counts), MCP connections by the MCP package; both write through the same `Tracer`.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any

from ..core import types as T
from ..core.errors import SageRaise
from .chain import Perform
from .step import LLM, MCP, TOOL, Step, current_context


class TraceFileError(Exception):
    """The trace file cannot be opened: str() is the whole message (`error: …`)."""


class Tracer:
    """Writes one JSON object per line to a file (appended) or stderr; does nothing when tracing is off.
    The file is opened at once (a path that cannot be written is refused before the run starts); one that
    this tracer created and that got no event (the program failed checking) is removed again."""

    def __init__(self, path: str | None = None, to_stderr: bool = False) -> None:
        self.lock = threading.Lock()
        self.stream: Any = None
        self._created: str | None = None   # the file this tracer made, until an event is written to it
        if path:
            import os
            existed = os.path.exists(path)
            try:
                self.stream = open(path, "a", encoding="utf-8")
            except OSError as exc:
                raise TraceFileError(f"error: cannot open trace file {path}: {exc.strerror or exc}") from None
            self._created = None if existed else path
        elif to_stderr:
            self.stream = sys.stderr

    @property
    def on(self) -> bool:
        return self.stream is not None

    def emit(self, ctx: Any, kind: str, data: dict) -> None:
        stream = self.stream
        if stream is None:
            return
        if ctx is None and kind not in ("run.start", "run.end"):
            ctx = current_context()   # layers that do not know the agent (LLM client, MCP) run in its thread
        event = {"t": time.time_ns() // 1_000_000, "kind": kind,
                 "agent": getattr(ctx, "display_name", None), "path": getattr(ctx, "path", None)}
        event.update(data)
        from ..core.json_text import compact_json   # only when tracing: a run without it never imports json
        line = compact_json(event)
        with self.lock:
            stream.write(line + "\n")
            stream.flush()
            self._created = None

    def close(self) -> None:
        if self.stream is not None and self.stream is not sys.stderr:
            self.stream.close()
            if self._created is not None:
                import os
                try:
                    os.remove(self._created)
                except OSError:   # removed or replaced meanwhile: nothing of ours is left to remove
                    pass
        self.stream = None


class TraceLayer:
    """`tool.call` before and `tool.result` after each tool step, and each dynamic call a model asked for
    (with `"source": "model"`, SPEC §4.12); other steps pass untouched. In the chain only when tracing is on.
    Mocks sit above this layer, so every step traced here is performed (or replayed) below: `mocked` is
    false. In a resumed durable run, the events of a step the journal answers from its record carry
    `"replayed": true`; a replayed model turn, which never reaches the LLM client, gets its
    `llm.request`/`llm.response` pair here."""

    def __init__(self, tracer: Tracer, journal: Any = None, model: str | None = None) -> None:
        """`journal`: a durable run's, whose replayed steps are marked so; `model`: `[llm] model`, the model
        a replayed turn names when its request named none."""
        self.tracer = tracer
        self.journal = journal
        self.model = model

    def _replaying(self, step: Step) -> bool:
        journal = self.journal
        return journal is not None and journal.replaying(step)

    def perform(self, step: Step, next: Perform) -> Any:
        if step.kind == LLM:
            return self._replayed_turn(step, next) if self._replaying(step) else next(step)
        if step.kind != TOOL and (step.kind != MCP or step.tool is None):
            return next(step)
        info = step.tool
        ctx = step.agent
        source = {} if step.source is None else {"source": step.source}
        if self._replaying(step):
            source["replayed"] = True
        self.tracer.emit(ctx, "tool.call", {"tool": info.tool, "fn": info.fn,
                                            **({} if info.builtin else {"remote": info.remote}),
                                            "safety": step.safety, **source})
        started = time.monotonic()
        try:
            value = next(step)
        except SageRaise as exc:
            self.tracer.emit(ctx, "tool.result", {"tool": info.tool, "fn": info.fn, "ok": False,
                                                  "duration_ms": int((time.monotonic() - started) * 1000),
                                                  "error": exc.error.display(), "mocked": False, **source})
            raise
        self.tracer.emit(ctx, "tool.result", {"tool": info.tool, "fn": info.fn, "ok": True,
                                              "duration_ms": int((time.monotonic() - started) * 1000),
                                              "mocked": False, **source})
        return value

    def _replayed_turn(self, step: Step, next: Perform) -> Any:
        overrides = step.turn.overrides if step.turn is not None else step.overrides
        model = (overrides or {}).get("model") or self.model
        numbered = {} if step.turn is None else {"step": step.turn.turn}
        arguments = step.arguments
        prompt = arguments[0] if isinstance(arguments, list) else ""
        self.tracer.emit(step.agent, "llm.request", {"model": model, "prompt_chars": len(prompt),
                                                     "typed": step.ret not in (None, T.STRING), **numbered,
                                                     "replayed": True})
        started = time.monotonic()
        value = next(step)
        self.tracer.emit(step.agent, "llm.response", {"duration_ms": int((time.monotonic() - started) * 1000),
                                                      "chars": len(value) if step.ret == T.STRING else 0,
                                                      "attempts": 0, "mocked": False, **numbered,
                                                      "replayed": True})
        return value
