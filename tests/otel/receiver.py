"""A real OTLP/HTTP traces receiver on 127.0.0.1 for the tests: it decodes each `POST /v1/traces` body with
opentelemetry-proto's `ExportTraceServiceRequest` (the message type a collector decodes) and keeps the spans,
flattened to plain dictionaries with their resource's attributes."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                      ExportTraceServiceResponse)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

KINDS = {Span.SPAN_KIND_INTERNAL: "INTERNAL", Span.SPAN_KIND_CLIENT: "CLIENT", Span.SPAN_KIND_SERVER: "SERVER",
         Span.SPAN_KIND_PRODUCER: "PRODUCER", Span.SPAN_KIND_CONSUMER: "CONSUMER",
         Span.SPAN_KIND_UNSPECIFIED: "UNSPECIFIED"}
STATUS = {Status.STATUS_CODE_UNSET: "UNSET", Status.STATUS_CODE_OK: "OK", Status.STATUS_CODE_ERROR: "ERROR"}


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which is None:
        return None
    return getattr(v, which)


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


class Receiver:
    """`with Receiver() as r:` … `r.url` (the base URL for OTEL_EXPORTER_OTLP_ENDPOINT), `r.spans`."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.requests: list[dict] = []   # path, headers and content type of each request
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers)})
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._keep(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append({"name": span.name, "kind": KINDS[span.kind], "trace_id": span.trace_id.hex(),
                                  "span_id": span.span_id.hex(), "parent": span.parent_span_id.hex() or None,
                                  "attributes": _attributes(span.attributes), "status": STATUS[span.status.code],
                                  "description": span.status.message, "start": span.start_time_unix_nano,
                                  "end": span.end_time_unix_nano, "scope": scope_spans.scope.name,
                                  "scope_version": scope_spans.scope.version,
                                  "resource": resource})
        with self.lock:
            self.spans.extend(spans)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def named(self, prefix: str) -> list[dict]:
        return [s for s in self.spans if s["name"].startswith(prefix)]

    def by_id(self) -> dict[str, dict]:
        return {s["span_id"]: s for s in self.spans}
