"""Durable-run overhead: the same program journaled and with `--no-journal`, in a project with [persistence].

Cases (each a pair, `--no-journal` then journaled, repeated A/B/A/B; the median of the per-round ratios is
reported):
  builtin   1,000 read-only built-in tool calls (`Fs.exists`), timed with `now_ms()` around the loop inside
            the program. Journaled, the outcomes commit in groups (at most 50 ms apart). Target <= 1.3x.
  mcp       200 destructive calls (`charge`) to the counting MCP server of tests/durable, after one warm-up
            call, timed the same way. Journaled, each call commits its intent before it is sent and its
            outcome after (two journal writes). Target <= 1.5x.

--backend sqlite (default): one SQLite file in WAL mode. A destructive step's intent commits with
`synchronous = FULL` (one fsync of the write-ahead log); outcomes commit with `synchronous = NORMAL` (written
to the log, flushed with the next intent or checkpoint). --backend postgres: a throwaway PostgreSQL server
on 127.0.0.1 (tests/pgcluster.py), or the database of --url; an intent commits with `synchronous_commit =
on`, outcomes with `off`. So `builtin` costs no fsync per call and `mcp` one: the physical floor of a
destructive call, one durable commit, is printed as the fsync time of this machine's disk (and, on
PostgreSQL, as the server's WAL syncs per call).

Per case the script reports the journal records of one journaled run (SAGE_COUNT_WRITES, each one commit
there: the hooks turn grouping off) per call, and the fsyncs per call of another: counted with strace for
SQLite, from `pg_stat_wal.wal_sync` for PostgreSQL (whose server does the syncing). The projects live in a
scratch directory under --dir (default: the system's temporary directory); the store and the ledger are
removed before every run, so each run starts from an empty store.

    python bench/durable.py [--runs N] [--case builtin|mcp] [--dir DIR] [--backend sqlite|postgres] [--url URL]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, require_success, sage_command, timed_run

BUILTIN_CALLS = 1000
MCP_CALLS = 200
TARGETS = {"builtin": 1.3, "mcp": 1.5}
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
{persistence}

[tools.Counter]
command = {python}
args = [{server}]
env = {{ COUNTING_LEDGER = "ledger.jsonl" }}
"""


class Backend:
    """Where the journal goes: a SQLite file per project, or one PostgreSQL database (a throwaway server's
    unless --url names one)."""

    def __init__(self, name: str, url: str | None) -> None:
        self.name = name
        self.url = url
        self.cluster = None
        if name == "postgres" and url is None:
            sys.path.insert(0, str(REPO / "tests"))
            from pgcluster import start_cluster
            self.cluster = start_cluster()
            self.url = self.cluster.new_database()

    def persistence(self) -> str:
        if self.name == "sqlite":
            return 'backend = "sqlite"'
        return f'backend = "postgres"\nurl = {json.dumps(self.url)}'

    def clear(self, project: Path) -> None:
        if self.name == "postgres":
            import psycopg
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute("DROP SCHEMA IF EXISTS sage CASCADE")

    def wal_syncs(self) -> int:
        import psycopg
        with psycopg.connect(self.url, autocommit=True) as conn:
            return int(conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()[0])

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.destroy()


def write_project(root: Path, case: str, backend: Backend) -> Path:
    project = root / case
    (project / "src").mkdir(parents=True)
    (project / "grove.toml").write_text(GROVE.format(case=case, python=json.dumps(sys.executable),
                                                     persistence=backend.persistence(),
                                                     server=json.dumps(str(COUNTING_SERVER))), encoding="utf-8")
    source = BUILTIN_SG.format(calls=BUILTIN_CALLS) if case == "builtin" else MCP_SG.format(calls=MCP_CALLS)
    (project / "src" / "main.sg").write_text(source, encoding="utf-8")
    return project


def fresh(project: Path, backend: Backend) -> None:
    """Remove the store and the ledger: every run starts from an empty store."""
    shutil.rmtree(project / ".sage", ignore_errors=True)
    (project / "ledger.jsonl").unlink(missing_ok=True)
    backend.clear(project)


def program_ms(label: str, project: Path, flags: list[str], env: dict[str, str], backend: Backend) -> float:
    """One run of the project's program, which prints its own measurement (milliseconds) last."""
    fresh(project, backend)
    _, result = timed_run([*sage_command(), "run", *flags, str(project)], env, cwd=project)
    require_success(label, result)
    return float(result.stdout.split()[-1])


def count_fsyncs(project: Path, env: dict[str, str], scratch: Path, backend: Backend) -> int | None:
    """The fsyncs of one journaled run: the sage process's (strace) for SQLite, the server's WAL syncs for
    PostgreSQL; None when strace is missing."""
    fresh(project, backend)
    if backend.name == "postgres":
        before = backend.wal_syncs()
        result = subprocess.run([*sage_command(), "run", str(project)], env=env, cwd=project, capture_output=True,
                                text=True)
        require_success(f"sage run {project.name} (counting fsyncs)", result)
        return backend.wal_syncs() - before
    strace = shutil.which("strace")
    if strace is None:
        return None
    report = scratch / f"strace-{project.name}"
    # --seccomp-bpf: only the counted calls stop the process, so the MCP server still answers in time
    result = subprocess.run([strace, "-f", "--seccomp-bpf", "-qq", "-c", "-e", "trace=fsync,fdatasync",
                             "-o", str(report), *sage_command(), "run", str(project)], env=env, cwd=project,
                            capture_output=True, text=True)
    require_success(f"sage run {project.name} (counting fsyncs)", result)
    calls = 0
    for line in report.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and fields[-1] in ("fsync", "fdatasync"):
            calls += int(fields[3] if len(fields) >= 6 else fields[2])
    return calls


def fsync_ms(directory: Path, rounds: int = 50) -> float:
    """The median time of one small write and fsync in `directory`: the cost of one durable commit."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    samples = []
    try:
        for i in range(rounds):
            start = time.perf_counter()
            os.pwrite(fd, b"x" * 512, (i % 8) * 4096)
            os.fsync(fd)
            samples.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(samples) * 1000


def count_writes(project: Path, env: dict[str, str], scratch: Path, backend: Backend) -> int:
    """The journal records of one journaled run of the project."""
    fresh(project, backend)
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
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                        help="the journal's store (default sqlite)")
    parser.add_argument("--url", help="PostgreSQL database to use (default: a throwaway server on 127.0.0.1); "
                                      "its `sage` schema is dropped before every run")
    args = parser.parse_args()
    cases = args.case or list(CASES)
    scratch = Path(tempfile.mkdtemp(prefix="sage-bench-durable-", dir=args.dir))
    backend = Backend(args.backend, args.url)
    try:
        env = bench_env(scratch / "cache")
        projects = {case: write_project(scratch, case, backend) for case in cases}
        writes = {case: count_writes(project, env, scratch, backend) for case, project in projects.items()}
        fsyncs = {case: count_fsyncs(project, env, scratch, backend) for case, project in projects.items()}
        floor = fsync_ms(scratch)
        samples: dict[str, list[tuple[float, float]]] = {case: [] for case in cases}
        for _ in range(args.runs):
            for case, project in projects.items():
                plain = program_ms(f"sage run --no-journal ({case})", project, ["--no-journal"], env, backend)
                journaled = program_ms(f"sage run ({case})", project, [], env, backend)
                samples[case].append((plain, journaled))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        backend.close()

    print(f"sage command: {' '.join(sage_command())}; backend: {args.backend}")
    print(f"scratch directory on: {filesystem(args.dir or Path(tempfile.gettempdir()))}")
    print(f"{args.runs} interleaved rounds (--no-journal, then journaled); medians in ms, ratio = median of "
          "per-round ratios")
    print(f"{'case':<10}{'calls':>7}{'plain ms':>10}{'journal ms':>12}{'ratio':>9}{'target':>10}"
          f"{'records':>9}{'per call':>10}{'fsyncs/call':>13}{'ms/call':>9}")
    for case, pairs in samples.items():
        calls = BUILTIN_CALLS if case == "builtin" else MCP_CALLS
        plain = statistics.median(p[0] for p in pairs)
        journaled = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[1] / p[0] for p in pairs)
        target = TARGETS[case]
        verdict = "  ok" if ratio <= target else "  over"
        # the timed calls' writes: the run's total less the two clock readings (and the MCP warm-up call's two)
        timed = writes[case] - 2 - (2 if case == "mcp" else 0)
        synced = "n/a" if fsyncs[case] is None else f"{fsyncs[case] / calls:.2f}"
        added = (journaled - plain) / calls
        print(f"{case:<10}{calls:>7}{plain:>10.1f}{journaled:>12.1f}{ratio:>8.2f}x{'<= ' + format(target, 'g') + 'x':>10}"
              f"{writes[case]:>9}{timed / calls:>10.2f}{synced:>13}{added:>9.3f}{verdict}")
    print("records: journal records of one journaled run; per call: those of the timed calls (each one commit "
          "when counted; grouped otherwise); fsyncs/call: of a whole journaled run, per timed call; ms/call: "
          "what journaling adds to one call")
    print(f"floor: one durable commit per destructive call = one fsync here: {floor:.3f} ms (median of 50 "
          "writes+fsyncs in the scratch directory)")


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
