"""Thousands of agents in one process (issue 32): N agents each making K sequential model calls, and 1,000
agents each making typed MCP calls, against plain clients doing the same requests from the same number of
threads (or asyncio tasks).

Model calls. A local chat-completions server (tests/llm/latency_server.py, one asyncio loop, in a process of
its own) answers every request after `--latency-ms` (500). For each N (`--agents`, default 100 1000 5000) one
round runs, in this order, each as a whole process:

- `threads`: N plain Python threads, each posting K requests through one shared `httpx.Client` (no limits,
  so that no request waits for a connection) — the baseline of the issue;
- `lanes`: the same with a client per thread (the best that threads and httpx do; for reference);
- `sage`: `sage run` of a program whose entry agent summons N agents, each making K `divine` calls, and
  awaits them all.

Wall time and peak RSS (the child's own, from wait4) are printed per process, and sage's time as a ratio to
`threads` (target: at most 1.5x at N = 1,000). Every request must succeed: the bench stops otherwise.

MCP calls (on by default). A server of the project's MCP test suite (tests/mcp/servers/suite.py): over
streamable HTTP, one process of its own serving both clients; over stdio (`--mcp-transports`, default both),
a child of each client. `sage run` of a program whose N agents (`--mcp-agents`, default 1000 5000) each make 5
typed calls (`--mcp-calls`) of its `add` tool through one shared connection, against the MCP SDK's `Client`
making the same calls from as many asyncio tasks over one connection (target: at most 1.5x at N = 1,000). The
server (Python, one process) is what limits both.

A summary of one line per workload and N ends the output.

    python bench/scale.py [--agents 100 1000 5000] [--calls 2] [--latency-ms 500] [--rounds 1]
                          [--mcp-agents 1000 5000] [--mcp-calls 5] [--mcp-transports http stdio]
                          [--no-mcp] [--no-model]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from timing import REPO, bench_env, sage_command

SERVER = REPO / "tests" / "llm" / "latency_server.py"
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"
TARGET = 1.5
SUMMARY: list[str] = []   # one line per N and workload, printed at the end

FAN_SG = """\
agent Asker {{
    n: Int

    on start {{
        let total = 0;
        for i in range(0, {calls}) {{
            let answer = try divine("question {{i}} of agent {{self.n}}");
            total = total + str_len(answer);
        }}
        yield(total);
    }}
}}

agent Main {{
    on start {{
        let askers = [];
        for i in range(0, {agents}) {{
            askers = push(askers, summon Asker {{ n: i }});
        }}
        let total = 0;
        for a in askers {{
            total = total + (try await a);
        }}
        print(total);
        yield(0);
    }}
}}

run Main;
"""

MCP_SG = """\
tool Calc {{
    fn add(a: Int, b: Int) -> Int
}}

agent Caller {{
    use Calc
    n: Int

    on start {{
        let total = 0;
        for i in range(0, {calls}) {{
            total = total + (try Calc.add(self.n, i));
        }}
        yield(total);
    }}
}}

agent Main {{
    use Calc

    on start {{
        let callers = [];
        for i in range(0, {agents}) {{
            callers = push(callers, summon Caller {{ n: i }});
        }}
        let total = 0;
        for c in callers {{
            total = total + (try await c);
        }}
        print(total);
        yield(0);
    }}
}}

run Main;
"""


# ---------------------------------------------------------------- baselines (run as subprocesses)

def _threads_baseline(url: str, agents: int, calls: int, shared: bool) -> None:
    """N threads, each posting `calls` chat-completions requests; prints the number answered."""
    import httpx

    endpoint = url + "/chat/completions"
    unlimited = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    client = httpx.Client(limits=unlimited, timeout=120) if shared else None
    verify = httpx.create_ssl_context()   # made once: a client's own would cost each thread its loading
    answered = []
    failures = []

    def work(n: int) -> None:
        own = client or httpx.Client(timeout=120, verify=verify)
        try:
            for i in range(calls):
                body = {"model": "bench-model", "messages": [{"role": "user", "content": f"question {i} of {n}"}]}
                reply = own.post(endpoint, json=body)
                reply.raise_for_status()
                answered.append(len(reply.json()["choices"][0]["message"]["content"]))
        except Exception as exc:  # noqa: BLE001 - counted and reported: the bench requires none
            failures.append(exc)
        finally:
            if own is not client:
                own.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(sum(answered))
    if failures:
        sys.exit(f"{len(failures)} of {agents} threads failed; first: {failures[0]!r}")


def _mcp_baseline(server: str, agents: int, calls: int) -> None:
    """`server`: the HTTP server's URL, or `stdio` for a suite server started as this process's child."""
    """The MCP SDK's client: `agents` asyncio tasks, each making `calls` calls of `add` over one connection."""
    import asyncio

    # This script's directory heads sys.path and holds bench/mcp.py: drop it, or `import mcp` finds that file.
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    from mcp import Client, StdioServerParameters

    target = server if server != "stdio" else StdioServerParameters(command=sys.executable, args=[str(SUITE)])

    async def main() -> None:
        async with Client(target) as client:
            await client.call_tool("add", {"a": 0, "b": 0})

            async def caller(n: int) -> int:
                total = 0
                for i in range(calls):
                    result = await client.call_tool("add", {"a": n, "b": i})
                    if result.is_error:
                        raise RuntimeError(str(result.content))
                    total += int(result.structured_content["result"])
                return total

            print(sum(await asyncio.gather(*(caller(n) for n in range(agents)))))

    asyncio.run(main())


# ---------------------------------------------------------------- measuring

class Run:
    """One measured process: wall time, peak RSS (MiB) and its stdout."""

    def __init__(self, label: str, seconds: float, rss_mb: float, stdout: str) -> None:
        self.label = label
        self.seconds = seconds
        self.rss_mb = rss_mb
        self.stdout = stdout


def measure(label: str, command: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Run `command` to its end; stop the bench when it fails (its timing would measure an error path)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        if label != "sage":   # a baseline's own failure (5,000 threads on one httpx client): shown, not fatal
            print(f"  ({label} failed: {stderr.strip().splitlines()[-1] if stderr.strip() else process.returncode})")
            return Run(label, seconds, usage.ru_maxrss / 1024, "")
        sys.exit(f"{label} failed with exit code {process.returncode}:\n{stderr[-3000:]}")
    return Run(label, seconds, usage.ru_maxrss / 1024, stdout.strip())


class Server:
    """A server process: the latency server, which prints its URL and serves until its stdin closes, or (with
    `port`) one that serves on that port until it is terminated."""

    def __init__(self, command: list[str], cwd: Path, port: int | None = None) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd,
                                        stderr=subprocess.DEVNULL if port is not None else None)
        if port is None:
            self.url = self.process.stdout.readline().strip()   # type: ignore[union-attr]
        else:
            self.url = f"http://127.0.0.1:{port}/mcp"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                self.url = ""
        if not self.url:
            self.close()
            sys.exit(f"server {command} did not start")

    def close(self) -> None:
        self.process.stdin.close()   # type: ignore[union-attr]
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def model_rounds(options: argparse.Namespace, env: dict[str, str], work: Path) -> None:
    server = Server([sys.executable, str(SERVER), "--latency-ms", str(options.latency_ms)], work)
    try:
        env = {**env, "SAGE_LLM_URL": server.url, "SAGE_API_KEY": "bench-key", "SAGE_MODEL": "bench-model"}
        print(f"model calls: N agents x {options.calls} sequential calls, server latency {options.latency_ms} ms "
              f"(ideal: {options.calls * options.latency_ms / 1000:.1f} s)")
        print(f"{'N':>6} {'process':>8} {'wall s':>8} {'peak MiB':>9} {'sage/threads':>13}")
        for agents in options.agents:
            program = work / f"fan{agents}.sg"
            program.write_text(FAN_SG.format(agents=agents, calls=options.calls))
            expected = str(agents * options.calls * len("ok"))
            runs: dict[str, list[Run]] = {"threads": [], "lanes": [], "sage": []}
            for _ in range(options.rounds):
                for label, shared in (("threads", True), ("lanes", False)):
                    runs[label].append(measure(label, [sys.executable, __file__, "--threads-baseline", server.url,
                                                       str(agents), str(options.calls), str(int(shared))],
                                               env, work))
                runs["sage"].append(measure("sage", [*sage_command(), "run", str(program)], env, work))
            for label, measured in runs.items():
                for run in measured:
                    if run.stdout != expected and (label == "sage" or run.stdout):
                        sys.exit(f"{label} answered {run.stdout!r}, expected {expected}")
            base = statistics.median(r.seconds for r in runs["threads"])
            for label, measured in runs.items():
                seconds = statistics.median(r.seconds for r in measured)
                rss = max(r.rss_mb for r in measured)
                ratio = f"{seconds / base:.2f}x" if label == "sage" else ""
                print(f"{agents:>6} {label:>8} {seconds:>8.2f} {rss:>9.0f} {ratio:>13}", flush=True)
            seconds = statistics.median(r.seconds for r in runs["sage"])
            SUMMARY.append(f"model N={agents}: sage {seconds:.1f} s, threads {base:.1f} s, ratio {seconds / base:.2f}x, "
                           f"peak {max(r.rss_mb for r in runs['sage']):.0f} MiB"
                           + (f" (target <= {TARGET}x)" if agents == 1000 else ""))
        print(f"target: sage/threads <= {TARGET}x at N = 1,000")
    finally:
        server.close()


def mcp_rounds(options: argparse.Namespace, env: dict[str, str], work: Path, transport: str) -> None:
    server = None
    if transport == "http":
        port = free_port()
        server = Server([sys.executable, str(SUITE), "--http", str(port), "--marker-dir", str(work)], work, port)
        target, tool = server.url, f'url = "{server.url}"'
    else:
        target, tool = "stdio", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([str(SUITE)])}"
    try:
        print(f"\nMCP calls: N agents x {options.mcp_calls} typed calls to one server over {transport}")
        print(f"{'N':>6} {'process':>8} {'wall s':>8} {'peak MiB':>9} {'sage/sdk':>9}")
        for agents in options.mcp_agents:
            project = work / f"mcp-{transport}-{agents}"
            (project / "src").mkdir(parents=True)
            (project / "grove.toml").write_text(
                f'[project]\nname = "scale"\nentry = "src/main.sg"\n\n[tools.Calc]\n{tool}\n')
            (project / "src" / "main.sg").write_text(MCP_SG.format(agents=agents, calls=options.mcp_calls))
            sdk, sage = [], []
            for _ in range(options.rounds):
                sdk.append(measure("sdk", [sys.executable, __file__, "--mcp-baseline", target,
                                           str(agents), str(options.mcp_calls)], env, work))
                sage.append(measure("sage", [*sage_command(), "run", "."], env, project))
            if {r.stdout for r in sdk + sage if r.stdout} != {sage[0].stdout}:
                sys.exit(f"results differ: sdk {sdk[0].stdout!r}, sage {sage[0].stdout!r}")
            base = statistics.median(r.seconds for r in sdk)
            for label, measured in (("sdk", sdk), ("sage", sage)):
                seconds = statistics.median(r.seconds for r in measured)
                ratio = f"{seconds / base:.2f}x" if label == "sage" else ""
                print(f"{agents:>6} {label:>8} {seconds:>8.2f} {max(r.rss_mb for r in measured):>9.0f} {ratio:>9}",
                      flush=True)
            seconds = statistics.median(r.seconds for r in sage)
            SUMMARY.append(f"mcp {transport:<5} N={agents}: sage {seconds:.1f} s, sdk {base:.1f} s, ratio {seconds / base:.2f}x, "
                           f"peak {max(r.rss_mb for r in sage):.0f} MiB"
                           + (f" (target <= {TARGET}x)" if agents == 1000 else ""))
    finally:
        if server is not None:
            server.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--threads-baseline":
        url, agents, calls, shared = sys.argv[2:6]
        _threads_baseline(url, int(agents), int(calls), shared == "1")
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--mcp-baseline":
        url, agents, calls = sys.argv[2:5]
        _mcp_baseline(url, int(agents), int(calls))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mcp-agents", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--mcp-calls", type=int, default=5)
    parser.add_argument("--mcp-transports", nargs="+", choices=["http", "stdio"], default=["http", "stdio"])
    parser.add_argument("--no-mcp", action="store_true")
    parser.add_argument("--no-model", action="store_true")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sage-scale-"))
    try:
        env = bench_env(work / "cache")
        if not options.no_model:
            model_rounds(options, env, work)
        if not options.no_mcp:
            for transport in options.mcp_transports:
                mcp_rounds(options, env, work, transport)
        print("\nsummary (the machine's load makes single runs noisy; compare ratios, not seconds):")
        for line in SUMMARY:
            print("  " + line)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
