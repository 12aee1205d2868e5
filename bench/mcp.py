"""MCP call overhead: typed tool calls from Sage against the MCP SDK's own client, on the same servers.

Servers (both over stdio, each started afresh by every run):
  everything  the Node reference server @modelcontextprotocol/server-everything, tool `echo` (fast, so the
              client's own cost dominates); installed by `cd tests/mcp/node && npm ci`;
  suite       the project's Python test server tests/mcp/servers/suite.py, tool `echo`.
Cases, each a pair (SDK baseline, then `sage run`) repeated A/B/A/B; the median of the per-round ratios is
reported:
  sequential  500 sequential calls, after connecting and one warm-up call. Sage: `now_ms()` around the loop
              inside the program; SDK: `perf_counter()` around the same loop of `Client.call_tool`.
              Target <= 1.10x.
  concurrent  20 summoned agents making 10 sequential calls each, all at once, awaited by the entry agent,
              against 20 asyncio tasks of 10 sequential calls under `asyncio.gather`; wall time of the calls
              (Sage's includes summoning the agents). Target <= 1.5x.
  first       time to the first tool result of a one-call program: `sage run` from process start until its
              result line reaches stdout, against the server's own start-up as the SDK sees it (connect and
              first result, timed in-process after the imports, so Python's start is excluded). No target:
              it shows what sagepy adds on top of the server's start-up.

The SDK baseline is this script run with `--sdk CASE SERVER`; it prints its milliseconds. The AST cache is
warmed before timing, so parsing is not measured.

    python bench/mcp.py [--runs N] [--server everything|suite] [--case sequential|concurrent|first]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, require_success, sage_command, timed_run

SEQUENTIAL_CALLS = 500
AGENTS = 20
CALLS_PER_AGENT = 10
TARGETS = {"sequential": 1.10, "concurrent": 1.5, "first": None}
CASES = tuple(TARGETS)

EVERYTHING_JS = (REPO / "tests" / "mcp" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything"
                 / "dist" / "index.js")
SUITE_PY = REPO / "tests" / "mcp" / "servers" / "suite.py"

# name -> (command, args, the echo tool's parameter name)
SERVERS = {
    "everything": ("node", [str(EVERYTHING_JS), "stdio"], "message"),
    "suite": (sys.executable, [str(SUITE_PY)], "text"),
}

SEQUENTIAL_SG = """\
tool Echo {{
    fn echo({param}: String) -> String
}}

agent Main {{
    use Echo

    on start {{
        let warm = try Echo.echo("warm-up");
        let t0 = now_ms();
        for i in range(0, {calls}) {{
            let r = try Echo.echo("x");
        }}
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""

CONCURRENT_SG = """\
tool Echo {{
    fn echo({param}: String) -> String
}}

agent Caller {{
    use Echo

    on start {{
        for i in range(0, {calls}) {{
            let r = try Echo.echo("x");
        }}
        yield(0);
    }}
}}

agent Main {{
    use Echo

    on start {{
        let warm = try Echo.echo("warm-up");
        let t0 = now_ms();
        let callers: List<Agent<Caller>> = [];
        for i in range(0, {agents}) {{
            callers = push(callers, summon Caller {{}});
        }}
        for c in callers {{
            let r = try await c;
        }}
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""

FIRST_SG = """\
tool Echo {{
    fn echo({param}: String) -> String
}}

agent Main {{
    use Echo

    on start {{
        print(try Echo.echo("first"));
        yield(0);
    }}
}}

run Main;
"""


# ---------------------------------------------------------------- SDK baseline (run as a subprocess)

async def _sdk_case(case: str, server: str, errlog: Path) -> float:
    # This file is named mcp.py and its directory heads sys.path: drop it, or `import mcp` finds this file.
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    from mcp import Client, StdioServerParameters, stdio_client

    command, args, param = SERVERS[server]
    params = StdioServerParameters(command=command, args=args)
    started = time.perf_counter()
    with open(errlog, "a") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=30) as client:
            await client.call_tool("echo", {param: "warm-up"})
            if case == "first":
                return time.perf_counter() - started

            async def calls(n: int) -> None:
                for _ in range(n):
                    await client.call_tool("echo", {param: "x"})

            started = time.perf_counter()
            if case == "sequential":
                await calls(SEQUENTIAL_CALLS)
            else:
                await asyncio.gather(*(calls(CALLS_PER_AGENT) for _ in range(AGENTS)))
            return time.perf_counter() - started


def sdk_main(case: str, server: str, errlog: Path) -> None:
    print(f"{asyncio.run(_sdk_case(case, server, errlog)) * 1000:.1f}")


# ---------------------------------------------------------------- sagepy side

def write_project(root: Path, server: str, case: str) -> Path:
    """A project directory whose `[tools.Echo]` starts `server` and whose program runs `case`."""
    command, args, param = SERVERS[server]
    source = {"sequential": SEQUENTIAL_SG, "concurrent": CONCURRENT_SG, "first": FIRST_SG}[case]
    project = root / f"{server}-{case}"
    (project / "src").mkdir(parents=True)
    # JSON strings are valid TOML basic strings, which keeps the paths correctly quoted.
    (project / "grove.toml").write_text(
        f'[project]\nname = "bench-{server}-{case}"\n\n'
        f"[tools.Echo]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n", encoding="utf-8")
    (project / "src" / "main.sg").write_text(
        source.format(param=param, calls=CALLS_PER_AGENT if case == "concurrent" else SEQUENTIAL_CALLS,
                      agents=AGENTS), encoding="utf-8")
    return project


def time_to_first_line(command: list[str], env: dict[str, str]) -> float:
    """Seconds from starting the process until its first line of stdout arrives; the process is then
    left to finish (its shutdown is not part of the measurement)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    line = process.stdout.readline()  # type: ignore[union-attr]
    elapsed = time.perf_counter() - started
    rest, err = process.communicate()
    result = subprocess.CompletedProcess(command, process.returncode, line + rest, err)
    require_success(" ".join(command), result)
    return elapsed


def program_ms(label: str, command: list[str], env: dict[str, str]) -> float:
    """Run a program that prints its own measurement (milliseconds) as its last line of stdout."""
    _, result = timed_run(command, env)
    require_success(label, result)
    return float(result.stdout.split()[-1])


def measure(case: str, server: str, project: Path, env: dict[str, str], errlog: Path) -> tuple[float, float]:
    """(SDK ms, sagepy ms) of one round."""
    sdk = program_ms(f"SDK {case} on {server}",
                     [sys.executable, __file__, "--sdk", case, server, "--errlog", str(errlog)], env)
    run = [*sage_command(), "run", str(project)]
    if case == "first":
        return sdk, time_to_first_line(run, env) * 1000
    return sdk, program_ms(f"sage run {case} on {server}", run, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="rounds to time (default 9)")
    parser.add_argument("--server", choices=list(SERVERS), action="append",
                        help="benchmark only this server (repeatable; default: all)")
    parser.add_argument("--case", choices=CASES, action="append",
                        help="time only this case (repeatable; default: all)")
    parser.add_argument("--sdk", nargs=2, metavar=("CASE", "SERVER"), help=argparse.SUPPRESS)
    parser.add_argument("--errlog", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdk:
        sdk_main(args.sdk[0], args.sdk[1], args.errlog)
        return

    servers = args.server or list(SERVERS)
    if "everything" in servers and not EVERYTHING_JS.is_file():
        sys.exit("server-everything is not installed: run `cd tests/mcp/node && npm ci` (or pass --server suite)")

    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-mcp-"))
    try:
        env = bench_env(scratch / "cache")
        errlog = scratch / "sdk-servers.log"
        cases = args.case or list(CASES)
        projects = {(s, c): write_project(scratch, s, c) for s in servers for c in cases}
        for (server, case), project in projects.items():  # warm the AST cache, node's and Python's caches
            _, result = timed_run([*sage_command(), "run", str(project)], env)
            require_success(f"sage run {case} on {server} (warm-up)", result)

        samples: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in projects}
        for _ in range(args.runs):
            for (server, case), project in projects.items():
                samples[(server, case)].append(measure(case, server, project, env, errlog))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"sage command: {' '.join(sage_command())}")
    print(f"{args.runs} interleaved rounds (SDK, then sagepy); medians in ms, ratio = median of per-round ratios")
    print(f"{'server':<12}{'case':<12}{'SDK ms':>10}{'sage ms':>10}{'ratio':>9}{'target':>10}")
    for (server, case), pairs in samples.items():
        sdk = statistics.median(p[0] for p in pairs)
        sage = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[1] / p[0] for p in pairs)
        target = TARGETS[case]
        verdict = "" if target is None else ("  ok" if ratio <= target else "  over")
        target_text = "-" if target is None else f"<= {target:g}x"
        print(f"{server:<12}{case:<12}{sdk:>10.1f}{sage:>10.1f}{ratio:>8.2f}x{target_text:>10}{verdict}")
    print("per-round ratios: " + "; ".join(
        f"{server} {case} " + " ".join(f"{p[1] / p[0]:.2f}" for p in pairs) for (server, case), pairs in samples.items()))


if __name__ == "__main__":
    main()
