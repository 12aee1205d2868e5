"""Whether a run exports OpenTelemetry spans, and where to (SPEC §18.1), read from the session's settings.

Nothing here imports the OpenTelemetry SDK: a run without an endpoint decides it is off and never loads it.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..grove import ObservabilitySettings, ProjectSettings
    from ..variables import Overrides

PROTOCOL = "http/protobuf"
MISSING_EXTRA = "warning: OTLP export needs the otel extra: pip install 'sagepy[otel]'"


class ExportConfig:
    """Where and how one run's spans go: the traces URL, the request headers, the service name and version
    (the project's), and whether message content is recorded."""

    __slots__ = ("url", "headers", "service", "version", "capture_content")

    def __init__(self, url: str, headers: dict[str, str], service: str, capture_content: bool,
                 version: str | None = None) -> None:
        self.url = url
        self.headers = headers
        self.service = service
        self.version = version
        self.capture_content = capture_content


class ExportSettings(Protocol):
    """What the export reads of a command's settings (a sagepy.settings.Settings)."""

    root: str
    overrides: Overrides
    project: ProjectSettings
    observability: ObservabilitySettings


def export_config(settings: ExportSettings) -> tuple[ExportConfig | None, str | None]:
    """(the export of this run, or None when it is off; a warning to print once, or None)."""
    env = settings.overrides
    if (env.setting("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return None, None
    url = env.setting("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if url is None:
        base = env.setting("OTEL_EXPORTER_OTLP_ENDPOINT")
        if base is not None:
            url = base.rstrip("/") + "/v1/traces"
    if url is None:
        url = settings.observability.otlp_endpoint or None
    if url is None:
        return None, None
    protocol = (env.setting("OTEL_EXPORTER_OTLP_PROTOCOL") or PROTOCOL).strip()
    if protocol != PROTOCOL:
        return None, (f"warning: OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported (only {PROTOCOL}); "
                      "traces are not exported")
    headers = parse_headers(env.setting("OTEL_EXPORTER_OTLP_HEADERS"))
    headers.update(parse_headers(env.setting("OTEL_EXPORTER_OTLP_TRACES_HEADERS")))
    service = env.setting("OTEL_SERVICE_NAME") or settings.project.name or os.path.basename(settings.root)
    capture = (env.setting("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") or "").strip().lower() == "true"
    return ExportConfig(url, headers, service or "sagepy", capture, settings.project.version or None), None


def parse_headers(text: str | None) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS`: comma-separated `key=value` pairs, each part URL-encoded; pairs without
    `=` are ignored, as the OpenTelemetry SDKs do."""
    from urllib.parse import unquote   # only an exporting run pays for it
    headers: dict[str, str] = {}
    for pair in (text or "").split(","):
        key, sep, value = pair.partition("=")
        key = unquote(key).strip()
        if sep and key:
            headers[key.lower()] = unquote(value).strip()
    return headers
