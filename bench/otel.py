"""OpenTelemetry export overhead (SPEC §18.1): the same programs with export off, with export to a local
OTLP/HTTP receiver, and with `--trace-file`.

Programs (each timed inside, with `now_ms()` around its loop, after a warm-up call):
  mcp    CALLS typed calls of `lookup` on the stdio test server tests/otel/servers/meta_server.py;
  model  TURNS `divine` turns against a local chat-completions server (bench/llm.py --serve).
Each round runs off, export, trace-file in turn; the median of the per-round ratios against off is
reported. The receiver is the tests' real OTLP/HTTP receiver (tests/otel/receiver.py, a thread of this
script): it decodes every `POST /v1/traces` with opentelemetry-proto, and the bench stops unless each
exported run delivered all its spans (the root, the agent's, and one per call or turn, the warm-up's
included). Its URL is given as OTEL_EXPORTER_OTLP_ENDPOINT. The whole process's wall time is shown as well:
it includes the SDK's import at start and the export at exit; so does the CPU time of the process (and of
the children it reaped: the MCP server), which a loaded machine disturbs far less than either clock.
Target: export ≤ 1.1× off, on the program's own time.

    python bench/otel.py [--runs N] [--calls N] [--turns N] [--program mcp|model]
"""
from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, sage_command

sys.path.insert(0, str(REPO / "tests" / "otel"))
from receiver import Receiver  # noqa: E402

TARGET = 1.1
META_SERVER = REPO / "tests" / "otel" / "servers" / "meta_server.py"

MCP_PROGRAM = """\
tool Meta {{ fn lookup(key: String) -> String }}
agent Main {{
    use Meta;
    on start {{
        let warm = try Meta.lookup("warm");
        let t0 = now_ms();
        for i in range(0, {n}) {{
            let v = try Meta.lookup("k{{i}}");
        }}
        print(now_ms() - t0);
    }}
}}
run Main;
"""

MODEL_PROGRAM = """\
agent Main {{
    on start {{
        let warm = try divine("warm-up");
        let t0 = now_ms();
        for i in range(0, {n}) {{
            let answer = try divine("turn {{i}}: answer in one line");
        }}
        print(now_ms() - t0);
    }}
}}
run Main;
"""


def project(root: Path, program: str, n: int) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "grove.toml").write_text(
        f'[project]\nname = "bench"\n\n[tools.Meta]\ncommand = "{sys.executable}"\nargs = ["{META_SERVER}"]\n\n'
        '[tools.Meta.env]\nMETA_LOG = "/dev/null"\n\n[tools.Meta.safety]\nlookup = "read_only"\n', encoding="utf-8")
    (root / "src" / "main.sg").write_text(program.format(n=n), encoding="utf-8")
    return root


def run_case(label: str, root: Path, env: dict[str, str], extra: list[str], receiver: Receiver,
             spans: int) -> tuple[float, float, float]:
    """(the program's own milliseconds, the process's wall and CPU milliseconds); an exported run must
    have delivered its `spans` spans, one trace, by the time it exits."""
    before = len(receiver.spans)
    cpu_before = _children_cpu()
    started = time.perf_counter()
    with subprocess.Popen([*sage_command(), "run", *extra], env=env, cwd=root, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before   # the one child reaped meanwhile: this run
    if process.returncode != 0:
        sys.exit(f"{label} failed with exit code {process.returncode}:\n{stderr}")
    if stderr.strip():
        sys.exit(f"{label} printed on stderr:\n{stderr}")
    if "OTEL_EXPORTER_OTLP_ENDPOINT" in env:
        received = receiver.spans[before:]
        traces = {span["trace_id"] for span in received}
        if len(received) != spans or len(traces) != 1:
            sys.exit(f"{label}: the receiver got {len(received)} spans in {len(traces)} traces, not {spans} in one")
    return float(stdout.split()[-1]), wall * 1000, cpu * 1000


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(name: str, root: Path, env: dict[str, str], receiver: Receiver, runs: int, spans: int) -> None:
    trace_file = root / "t.ndjson"
    cases = {"off": (env, []), "export": ({**env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}, []),
             "trace-file": (env, ["--trace-file", str(trace_file)])}
    for label, (case_env, extra) in cases.items():   # warm-up: the AST cache, the server's imports
        run_case(f"{name} {label} (warm-up)", root, case_env, extra, receiver, spans)
    samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label in cases}
    requests_before = len(receiver.requests)
    for _ in range(runs):
        for label, (case_env, extra) in cases.items():
            samples[label].append(run_case(f"{name} {label}", root, case_env, extra, receiver, spans))
            trace_file.unlink(missing_ok=True)
    exports = (len(receiver.requests) - requests_before) / runs
    print(f"\n{name}: {runs} rounds (off, export, trace-file); medians in ms; ratio = median of per-round "
          "ratios against off")
    print(f"{'case':<12}{'program ms':>12}{'ratio':>9}{'wall ms':>10}{'ratio':>9}{'CPU ms':>10}{'ratio':>9}")
    for label in cases:
        columns = ""
        for column in range(3):
            median = statistics.median(s[column] for s in samples[label])
            ratio = statistics.median(s[column] / max(o[column], 1) for s, o in zip(samples[label], samples["off"]))
            columns += f"{median:>{12 if column == 0 else 10}.1f}{ratio:>8.2f}x"
            if column == 0:
                program_ratio = ratio
        verdict = ""
        if label == "export":
            verdict = "  ok" if program_ratio <= TARGET else "  over"
            verdict += f" (target <= {TARGET:g}x; {spans} spans received in {exports:.1f} requests per run)"
        print(f"{label:<12}{columns}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds to time (default 7)")
    parser.add_argument("--calls", type=int, default=300, help="MCP calls per run (default 300)")
    parser.add_argument("--turns", type=int, default=200, help="model turns per run (default 200)")
    parser.add_argument("--program", choices=("mcp", "model"), help="only this program")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-otel-"))
    receiver = Receiver().__enter__()
    model = subprocess.Popen([sys.executable, str(REPO / "bench" / "llm.py"), "--serve"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        url = model.stdout.readline().strip()  # type: ignore[union-attr]
        env = bench_env(scratch / "cache")
        for name in [n for n in list(env) if n.startswith("OTEL_")]:
            del env[name]
        env.update(SAGE_LLM_URL=url, SAGE_API_KEY="bench-key", SAGE_MODEL="bench-model")
        print(f"sage command: {' '.join(sage_command())}")
        if args.program in (None, "mcp"):
            bench(f"mcp ({args.calls} typed calls)", project(scratch / "mcp", MCP_PROGRAM, args.calls), env,
                  receiver, args.runs, args.calls + 3)
        if args.program in (None, "model"):
            bench(f"model ({args.turns} divine turns)", project(scratch / "model", MODEL_PROGRAM, args.turns), env,
                  receiver, args.runs, args.turns + 3)
    finally:
        model.stdin.close()  # type: ignore[union-attr]
        model.wait(10)
        receiver.__exit__()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
