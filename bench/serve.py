"""`sage serve` against a trivial MCP SDK server (`MCPServer` in Python), same transport (stdio), same client
(the SDK's `Client`): the round trip of a trivial tool called sequentially, and the throughput of 100
concurrent calls of a tool that waits 200 ms. Targets: sequential ≤ 1.5× per call, concurrent throughput
≥ 0.7× the SDK server's. On a loaded machine the wall times swing from run to run, so the server process's own
CPU time per concurrent call (user + system, from /proc) is printed too: it moves much less with the load.

    python bench/serve.py [--runs N] [--calls N] [--concurrent N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# bench/mcp.py sits beside this file, whose directory heads sys.path: drop it, or `import mcp` finds that file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters, stdio_client  # noqa: E402

REPO = _HERE.parent

SDK_SERVER = textwrap.dedent("""\
    import asyncio
    from mcp.server import MCPServer
    server = MCPServer("baseline")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def wait() -> int:
        await asyncio.sleep(0.2)
        return 200

    server.run()
    """)

SAGE_PROGRAM = textwrap.dedent("""\
    #[mcp_tool = "echo"]
    agent Echo {
        text: String,
        on start {
            yield(self.text);
        }
    }

    #[mcp_tool = "wait"]
    agent Wait {
        on start {
            sleep_ms(200);
            yield(200);
        }
    }
    """)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process `pid` and its threads, in seconds (0 where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(marker: str) -> int:
    """The pid of the one server process whose command line holds `marker`."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in command and "bench/serve.py" not in command:
                return int(entry.name)
    return -1


async def measure(params: StdioServerParameters, calls: int, concurrent: int) -> tuple[float, float, float]:
    """(ms per sequential echo, calls per second of `concurrent` waits at once, the server's CPU ms per wait)."""
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            await client.list_tools()
            for _ in range(5):
                await client.call_tool("echo", {"text": "warm"})
            started = time.perf_counter()
            for i in range(calls):
                await client.call_tool("echo", {"text": f"x{i}"})
            sequential = (time.perf_counter() - started) * 1000 / calls
            pid = server_pid(params.args[-1])
            cpu = cpu_seconds(pid)
            started = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(concurrent):
                    tg.start_soon(client.call_tool, "wait", {})
            throughput = concurrent / (time.perf_counter() - started)
            cpu = (cpu_seconds(pid) - cpu) * 1000 / concurrent
    return sequential, throughput, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "baseline.py").write_text(SDK_SERVER)
        project = root / "served"
        project.mkdir()
        (project / "grove.toml").write_text(f'[project]\nname = "bench"\nentry = "main.sg"\n\n[serve]\n'
                                            f"max_concurrent_calls = {args.concurrent}\n")
        (project / "main.sg").write_text(SAGE_PROGRAM)
        env = dict(os.environ, PYTHONPATH=str(REPO), SAGE_CACHE_DIR=str(root / "cache"))
        sdk = StdioServerParameters(command=sys.executable, args=[str(root / "baseline.py")], env=env)
        sage = StdioServerParameters(command=sys.executable, args=["-m", "sagepy", "serve", str(project)], env=env)
        rows = {"sdk": [], "sage": []}
        for _ in range(args.runs):
            rows["sdk"].append(anyio.run(measure, sdk, args.calls, args.concurrent))
            rows["sage"].append(anyio.run(measure, sage, args.calls, args.concurrent))
    seq = {k: statistics.median(r[0] for r in v) for k, v in rows.items()}
    thr = {k: statistics.median(r[1] for r in v) for k, v in rows.items()}
    cpu = {k: statistics.median(r[2] for r in v) for k, v in rows.items()}
    print(f"{'':28}{'SDK MCPServer':>15}{'sage serve':>12}{'ratio':>8}{'target':>10}")
    print(f"{'sequential echo (ms/call)':28}{seq['sdk']:>15.2f}{seq['sage']:>12.2f}"
          f"{seq['sage'] / seq['sdk']:>7.2f}x{'<= 1.5x':>10}")
    print(f"{f'{args.concurrent} x 200 ms (calls/s)':28}{thr['sdk']:>15.1f}{thr['sage']:>12.1f}"
          f"{thr['sage'] / thr['sdk']:>7.2f}x{'>= 0.7x':>10}")
    print(f"{'server CPU per wait (ms)':28}{cpu['sdk']:>15.2f}{cpu['sage']:>12.2f}"
          f"{cpu['sage'] / cpu['sdk'] if cpu['sdk'] else float('nan'):>7.2f}x")
    print(f"load average over the last minute: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
