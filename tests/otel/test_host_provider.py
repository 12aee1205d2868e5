"""A host that embeds sagepy and has OpenTelemetry of its own keeps it: a run that exports its spans installs
no global tracer provider, its spans go to its own OTLP endpoint (the real receiver) and never to the host's
provider, while the MCP SDK's client spans, which go through the global provider, are the host's and nest
under the call's `execute_tool` span."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from receiver import Receiver
from test_export import REPO, TOOL_BLOCK, one, project, tree

from sagepy import __version__

HOST = """\
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sagepy.cli.main import main

# a first run before the host has a provider: the global one is still the API's placeholder afterwards
first = main(["run"])
placeholder = type(trace.get_tracer_provider()).__name__

host_spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(host_spans))
trace.set_tracer_provider(provider)

with trace.get_tracer("host").start_as_current_span("host request"):
    code = main(["run"])
print(json.dumps({
    "codes": [first, code], "placeholder": placeholder,
    "provider_kept": trace.get_tracer_provider() is provider,
    "host_spans": [{"name": s.name, "scope": s.instrumentation_scope.name,
                    "parent": format(s.parent.span_id, "016x") if s.parent else None,
                    "trace": format(s.context.trace_id, "032x")} for s in host_spans.get_finished_spans()],
}))
"""


def test_an_embedding_hosts_tracer_provider_is_left_alone(tmp_path: Path) -> None:
    root = project(tmp_path, TOOL_BLOCK + """
        agent Main {
            use Meta;
            on start { print(try Meta.lookup("k1")); }
        }
        run Main;
        """)
    toml = root / "grove.toml"
    toml.write_text(toml.read_text().replace('name = "spans"\n', 'name = "spans"\nversion = "2.0.1"\n', 1))
    (tmp_path / "host.py").write_text(textwrap.dedent(HOST), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "OTEL_"))}
    with Receiver() as r:
        env.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_NO_CACHE="1", OTEL_EXPORTER_OTLP_ENDPOINT=r.url)
        result = subprocess.run([sys.executable, str(tmp_path / "host.py")], cwd=root, env=env,
                                capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["value of k1", "value of k1"]
    report = json.loads(lines[-1])
    assert report["codes"] == [0, 0] and report["placeholder"] == "ProxyTracerProvider" and report["provider_kept"]
    # each run's spans reached its endpoint, as one trace of their own
    traces = [t for t in dict.fromkeys(s["trace_id"] for s in r.spans)]
    assert len(traces) == 2
    second = [s for s in r.spans if s["trace_id"] == traces[1]]
    tree(second)
    call = one(second, "execute_tool Meta.lookup")
    assert {s["scope"] for s in r.spans} == {"sagepy"}
    # the service is the project, at its version; sagepy is the instrumentation scope, at its own
    assert {(s["resource"]["service.name"], s["resource"]["service.version"]) for s in r.spans} == {("spans", "2.0.1")}
    assert {s["scope_version"] for s in r.spans} == {__version__}
    # the host's provider saw none of them: its own span, and the MCP SDK's client span of the call, whose
    # parent is sagepy's execute_tool span
    host = report["host_spans"]
    assert not [s for s in host if s["scope"] == "sagepy"]
    assert [s["name"] for s in host if s["scope"] == "host"] == ["host request"]
    mcp = [s for s in host if s["scope"] == "mcp-python-sdk" and s["parent"] == call["span_id"]]
    assert mcp and {s["trace"] for s in mcp} == {call["trace_id"]}, host
