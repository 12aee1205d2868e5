"""The spans of one exported run (SPEC §18.1), made with the OpenTelemetry SDK and sent by its OTLP/HTTP
exporter in batches.

Spans are recorded by `Span` below and handed, once ended, to the SDK's `BatchSpanProcessor` as the SDK's
own `ReadableSpan`s: no `TracerProvider` is made, let alone installed as the process's global one, so a host
embedding sagepy keeps its own provider, and a span costs a few microseconds rather than the tracer's
twenty-odd (sampler, attribute limits, locks: nothing a run's own spans need).

The run is one trace: a root span `sage run <entry>`, an `invoke_agent <Agent>` span per agent instance under
the span of the agent that summoned it, and, under each agent's span, its `chat` turns, `execute_tool` calls
and approvals. Agent spans follow the trace events the runtime emits (`agent.spawn`, `agent.result`,
`agent.stop`); the step spans are made by the effects layer (sagepy.effects.otel). Export never breaks a run:
the SDK's own logging is silenced, failures are remembered, and `close` waits at most `EXIT_WAIT_S` before
printing one warning.

Imported only when export is on: it loads the SDK.
"""
from __future__ import annotations

import gc
import logging
import re
import sys
import threading
import time
from typing import Any, Callable

from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..version import __version__
from .config import ExportConfig

EXIT_WAIT_S = 5.0
"""The longest a run waits at its end for its spans to be sent."""

INTERNAL = SpanKind.INTERNAL
CLIENT = SpanKind.CLIENT


class _Failures(logging.Handler):
    """Receives the SDK's log records instead of stderr, and keeps the reason of the last failed export."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if not record.name.startswith("opentelemetry.exporter") or not args:
            return
        message = str(record.msg)
        if message.startswith("Transient error"):      # (error, kind, backoff)
            self.reason = _reason(args[0])
        elif "reason:" in message:                      # (kind, status code, reason)
            self.reason = f"HTTP {args[1]} {args[2]}" if args[1] else _reason(args[2])


def _reason(error: Any) -> str:
    """A short reason for a failed export: the socket's words (`Connection refused`) rather than the whole
    chain of wrapped exceptions requests builds around them, or the HTTP status."""
    text = str(error)
    match = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if match:
        return match.group(1).strip()
    return text.split("\n", 1)[0][:200] or "unknown error"


# Importing the SDK and its exporter left some fifteen thousand long-lived objects (modules, protobuf
# descriptors, requests): frozen once, here, they are never scanned again, rather than making the run's first
# full collection (tens of milliseconds, in the middle of the program) scan them all.
gc.freeze()

_FAILURES = _Failures()
# The SDK's log records go to _FAILURES alone and never reach the program's stderr (one handler per process:
# with none, Python's last-resort handler would print them).
logging.getLogger("opentelemetry").addHandler(_FAILURES)
logging.getLogger("opentelemetry").propagate = False


class _Recording(SpanExporter):
    """The OTLP/HTTP exporter, remembering whether any batch failed."""

    def __init__(self, inner: OTLPSpanExporter, failures: _Failures) -> None:
        self.inner = inner
        self.failures = failures
        self.failed = False

    def export(self, spans: Any) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - a broken exporter must not end the run
            self.failures.reason = _reason(exc)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.failed = True
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


class Span:
    """A span being recorded: its name, kind, identity, parent, start, attributes and status, until `end`
    hands it to the batch processor."""

    __slots__ = ("name", "kind", "context", "parent", "start_time", "attributes", "status", "_export")

    def __init__(self, export: SpanExport, name: str, kind: SpanKind, parent: Span | None,
                 attributes: dict[str, Any], start_time: int | None = None) -> None:
        self._export = export
        self.name = name
        self.kind = kind
        ids = export.ids
        trace_id = parent.context.trace_id if parent is not None else ids.generate_trace_id()
        self.context = SpanContext(trace_id, ids.generate_span_id(), False, _SAMPLED)
        self.parent = parent.context if parent is not None else None
        self.start_time = start_time or time.time_ns()
        self.attributes = attributes
        self.status = _UNSET

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def in_context(self) -> Any:
        """An OpenTelemetry context whose current span is this one (what the MCP SDK propagates)."""
        return otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(self.context))

    def end(self) -> None:
        export = self._export
        export.processor.on_end(ReadableSpan(self.name, context=self.context, parent=self.parent,
                                             resource=export.resource, attributes=self.attributes, kind=self.kind,
                                             status=self.status, start_time=self.start_time,
                                             end_time=time.time_ns(), instrumentation_scope=export.scope))


class SpanExport:
    """The spans of one run, from its `run.start` event to `close`."""

    def __init__(self, config: ExportConfig, entry: str, journal: Any, secrets: list[str],
                 write_err: Callable[[str], None] | None = None) -> None:
        """`journal`: that of a durable run (its run id is known once the run has started), else None."""
        self.config = config
        self.entry = entry
        self.journal = journal
        self.capture = config.capture_content
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self._write_err = write_err or (lambda line: sys.stderr.write(line + "\n"))
        self._failures = _FAILURES
        _FAILURES.reason = None
        self._exporter = _Recording(OTLPSpanExporter(endpoint=config.url, headers=config.headers,
                                                     timeout=EXIT_WAIT_S), self._failures)
        # the service is the project (its version, when grove.toml names one); sagepy is the instrumentation scope
        service = {"service.name": config.service}
        if config.version:
            service["service.version"] = config.version
        self.resource = Resource.create(service)
        self.scope = InstrumentationScope("sagepy", __version__)
        self.ids = RandomIdGenerator()
        self.processor = BatchSpanProcessor(self._exporter)
        self._lock = threading.Lock()
        self._root: Any = None
        self._agents: dict[int, Any] = {}        # id(agent context) -> its invoke_agent span
        self._contexts: dict[int, Any] = {}      # id(agent context) -> the context, kept alive with its span
        self._approvals: dict[tuple[int, str], Any] = {}
        self._closed = False

    # ---------------------------------------------------------------- secrets and content
    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    # ---------------------------------------------------------------- the root and the agents
    def root(self) -> Any:
        with self._lock:
            return self._root_locked()

    def _root_locked(self) -> Any:
        if self._root is None:
            attributes = {"sage.entry": self.entry}
            run_id = getattr(self.journal, "run_id", None)
            if run_id:
                attributes["sage.run.id"] = run_id
            self._root = Span(self, f"sage run {self.entry}", INTERNAL, None, attributes)
        return self._root

    def agent_span(self, ctx: Any) -> Any:
        """The span of an agent context (started on first need: the entry agent and supervisors are not
        spawned with an event), or the root for steps of no agent."""
        with self._lock:
            return self._agent_locked(ctx)

    def _agent_locked(self, ctx: Any) -> Any:
        if ctx is None or getattr(ctx, "path", None) is None:
            return self._root_locked()
        span = self._agents.get(id(ctx))
        if span is not None:
            return span
        parent = getattr(ctx, "parent", None)
        parent_span = self._agent_locked(parent) if parent is not None else self._root_locked()
        agent = getattr(ctx, "agent", None)
        name = getattr(agent, "name", None) or ctx.path.rsplit("/", 1)[-1].split("#", 1)[0]
        start = None if parent is not None else self._root_locked().start_time
        span = Span(self, f"invoke_agent {name}", INTERNAL, parent_span,
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "sage.agent.path": ctx.path},
                    start)
        self._agents[id(ctx)] = span
        self._contexts[id(ctx)] = ctx
        return span

    def event(self, ctx: Any, kind: str, data: dict) -> None:
        """A trace event of the runtime (SPEC §4.11): the lifecycle of the root, agents and approvals."""
        if self._closed:
            return
        if kind == "run.start":
            self.root()
        elif kind == "run.end":
            self.root().set_attribute("sage.exit_code", int(data.get("exit_code", 0)))
        elif kind == "agent.spawn":
            self.agent_span(ctx)
        elif kind == "agent.result":
            error = getattr(ctx, "error", None)
            if error is not None and not getattr(ctx, "quiet_failure", False):
                mark_error(self.agent_span(ctx), getattr(error, "kind", "Runtime"), self.redact(error.display()))
        elif kind == "agent.stop":
            with self._lock:
                span = self._agents.pop(id(ctx), None)
                self._contexts.pop(id(ctx), None)
            if span is not None:
                span.end()
        elif kind in ("approval.request", "ask.request"):
            self._open_approval(ctx, kind, data)
        elif kind in ("approval.decision", "ask.answer"):
            self._close_approval(ctx, kind, data)

    def _approval_key(self, ctx: Any, kind: str, data: dict) -> tuple[int, str]:
        what = "ask" if kind.startswith("ask") else f"approval {data.get('tool')}.{data.get('fn')}"
        return id(ctx), what

    def _open_approval(self, ctx: Any, kind: str, data: dict) -> None:
        key = self._approval_key(ctx, kind, data)
        parent = self.agent_span(ctx)
        span = Span(self, key[1], INTERNAL, parent, {})
        if data.get("source"):
            span.set_attribute("sage.tool.source", data["source"])
        with self._lock:
            self._approvals[key] = span
        return None

    def _close_approval(self, ctx: Any, kind: str, data: dict) -> None:
        with self._lock:
            span = self._approvals.pop(self._approval_key(ctx, kind, data), None)
        if span is None:
            return
        if kind == "approval.decision":
            span.set_attribute("sage.approved", bool(data.get("approved")))
        span.end()

    # ---------------------------------------------------------------- steps
    def start_step(self, name: str, ctx: Any, kind: SpanKind, attributes: dict, start_time: int | None = None) -> Span:
        return Span(self, name, kind, self.agent_span(ctx), attributes, start_time)

    # ---------------------------------------------------------------- the end
    def close(self) -> None:
        """End what is still open (an approval still open is the one the run paused on), then send
        everything, waiting at most `EXIT_WAIT_S`; one warning when the collector could not be reached."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            approvals = list(self._approvals.values())
            self._approvals.clear()
            agents = list(self._agents.values())
            self._agents.clear()
            self._contexts.clear()
            root = self._root
        for span in approvals:
            span.set_attribute("sage.paused", True)
            span.end()
        for span in reversed(agents):
            span.end()
        if root is not None:
            root.end()
        finished = threading.Event()

        def flush() -> None:
            try:
                self.processor.force_flush(int(EXIT_WAIT_S * 1000))
            finally:
                finished.set()
        started = time.monotonic()
        threading.Thread(target=flush, name="otel-flush", daemon=True).start()
        in_time = finished.wait(EXIT_WAIT_S)
        if in_time:
            self.processor.shutdown()
        else:   # abandon the export: the daemon thread ends with the process
            self._exporter.inner.shutdown()
        if self._exporter.failed or not in_time:
            reason = self._failures.reason or (f"no answer within {EXIT_WAIT_S:g} s"
                                               if time.monotonic() - started >= EXIT_WAIT_S else "export failed")
            self._write_err(f"warning: could not export traces to {self.config.url}: {reason}")


def mark_error(span: Span, kind: str, display: str) -> None:
    """SPEC §18.1's error: status ERROR with the display as its description, `error.type` the Sage kind."""
    span.attributes["error.type"] = kind
    span.status = Status(StatusCode.ERROR, display)
