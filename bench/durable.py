"""Durable-run overhead: the same program journaled and with `--no-journal`, in a project with [persistence].

Cases (each a pair, `--no-journal` then journaled, repeated A/B/A/B; the median of the per-round ratios is
reported):
  builtin   1,000 read-only built-in tool calls (`Fs.exists`), timed with `now_ms()` around the loop inside
            the program. Journaled, each call commits its outcome (one journal write). Target <= 2x.
  mcp       200 destructive calls (`charge`) to the counting MCP server of tests/durable, after one warm-up
            call, timed the same way. Journaled, each call commits its intent before it is sent and its
            outcome after (two journal writes). Target <= 1.5x.

Every journal write is one SQLite transaction in WAL mode. A destructive step's intent commits with
`synchronous = FULL` (one fsync of the write-ahead log); an outcome commits with `synchronous = NORMAL`
(written to the log, flushed with the next intent or checkpoint). So `builtin` costs no fsync per call and
`mcp` one. The script counts the writes of one journaled run of each case (SAGE_COUNT_WRITES) and
prints them per step. The projects live in a scratch directory under --dir (default: the system's temporary
directory); the store and the ledger are removed before every run, so each run starts from an empty file.

    python bench/durable.py [--runs N] [--case builtin|mcp] [--dir DIR]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import REPO, bench_env, require_success, sage_command, timed_run

BUILTIN_CALLS = 1000
MCP_CALLS = 200
TARGETS = {"builtin": 2.0, "mcp": 1.5}
CASES = tuple(TARGETS)
COUNTING_SERVER = REPO / "tests" / "durable" / "counting_server.py"

BUILTIN_SG = """\
agent Main {{
    use Fs

    on start {{
        let t0 = now_ms();
        for i in range(0, {calls}) {{
            let found = try Fs.exists("grove.toml");
        }}
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""

MCP_SG = """\
tool Counter {{
    fn charge(account: String, amount: Int) -> Int
}}

agent Main {{
    use Counter

    on start {{
        let warm = try Counter.charge("warm-up", 1);
        let t0 = now_ms();
        for i in range(0, {calls}) {{
            let receipt = try Counter.charge("bench", i);
        }}
        print(now_ms() - t0);
        yield(0);
    }}
}}

run Main;
"""

GROVE = """\
[project]
name = "bench-durable-{case}"

[persistence]
backend = "sqlite"

[tools.Counter]
command = {python}
args = [{server}]
env = {{ COUNTING_LEDGER = "ledger.jsonl" }}
"""


def write_project(root: Path, case: str) -> Path:
    project = root / case
    (project / "src").mkdir(parents=True)
    (project / "grove.toml").write_text(GROVE.format(case=case, python=json.dumps(sys.executable),
                                                     server=json.dumps(str(COUNTING_SERVER))), encoding="utf-8")
    source = BUILTIN_SG.format(calls=BUILTIN_CALLS) if case == "builtin" else MCP_SG.format(calls=MCP_CALLS)
    (project / "src" / "main.sg").write_text(source, encoding="utf-8")
    return project


def fresh(project: Path) -> None:
    """Remove the store and the ledger: every run starts from empty files."""
    shutil.rmtree(project / ".sage", ignore_errors=True)
    (project / "ledger.jsonl").unlink(missing_ok=True)


def program_ms(label: str, project: Path, flags: list[str], env: dict[str, str]) -> float:
    """One run of the project's program, which prints its own measurement (milliseconds) last."""
    fresh(project)
    _, result = timed_run([*sage_command(), "run", *flags, str(project)], env, cwd=project)
    require_success(label, result)
    return float(result.stdout.split()[-1])


def count_writes(project: Path, env: dict[str, str], scratch: Path) -> int:
    """The journal writes of one journaled run of the project."""
    fresh(project)
    marks = scratch / f"writes-{project.name}"
    marks.unlink(missing_ok=True)
    result = subprocess.run([*sage_command(), "run", str(project)], env=dict(env, SAGE_COUNT_WRITES=str(marks)),
                            cwd=project, capture_output=True, text=True)
    require_success(f"sage run {project.name} (counting writes)", result)
    return len(marks.read_text(encoding="utf-8").splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds to time (default 7)")
    parser.add_argument("--case", choices=CASES, action="append", help="time only this case (repeatable)")
    parser.add_argument("--dir", type=Path, default=None, help="where the scratch projects go (default: the "
                                                                  "system's temporary directory)")
    args = parser.parse_args()
    cases = args.case or list(CASES)
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-durable-", dir=args.dir))
    try:
        env = bench_env(scratch / "cache")
        projects = {case: write_project(scratch, case) for case in cases}
        writes = {case: count_writes(project, env, scratch) for case, project in projects.items()}  # also warms
        samples: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
        for _ in range(args.runs):
            for case, project in projects.items():
                plain = program_ms(f"sage run --no-journal ({case})", project, ["--no-journal"], env)
                journaled = program_ms(f"sage run ({case})", project, [], env)
                samples[case].append((plain, journaled))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"sage command: {' '.join(sage_command())}")
    print(f"scratch directory on: {filesystem(args.dir or Path(tempfile.gettempdir()))}")
    print(f"{args.runs} interleaved rounds (--no-journal, then journaled); medians in ms, ratio = median of "
          "per-round ratios")
    print(f"{'case':<10}{'calls':>7}{'plain ms':>10}{'journal ms':>12}{'ratio':>9}{'target':>10}"
          f"{'writes':>9}{'per call':>10}")
    for case, pairs in samples.items():
        calls = BUILTIN_CALLS if case == "builtin" else MCP_CALLS
        plain = statistics.median(p[0] for p in pairs)
        journaled = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[1] / p[0] for p in pairs)
        target = TARGETS[case]
        verdict = "  ok" if ratio <= target else "  over"
        # the timed calls' writes: the run's total less the two clock readings (and the MCP warm-up call's two)
        timed = writes[case] - 2 - (2 if case == "mcp" else 0)
        print(f"{case:<10}{calls:>7}{plain:>10.1f}{journaled:>12.1f}{ratio:>8.2f}x{'<= ' + format(target, 'g') + 'x':>10}"
              f"{writes[case]:>9}{timed / calls:>10.2f}{verdict}")
    print("writes: journal writes of one journaled run (each one SQLite commit; only an intent waits for an "
          "fsync); per call: those of the timed calls, per call")


def filesystem(path: Path) -> str:
    """The type of the file system `path` is on (from /proc/mounts), for the reader to judge fsync costs."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    resolved = str(path.resolve())
    best = max((m for m in mounts if resolved == m[1] or resolved.startswith(m[1].rstrip("/") + "/")),
               key=lambda m: len(m[1]), default=None)
    return f"{best[2]} ({best[1]})" if best else "unknown"


if __name__ == "__main__":
    main()
