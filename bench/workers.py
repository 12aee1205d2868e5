"""Throughput of queued runs (not part of CI): N short runs executed by 1, 2 and 4 workers on PostgreSQL, against
the same runs as sequential `sage run --no-journal` processes.

The run: a program of a few journaled steps (a clock read, an environment read, two field writes) that prints
one line. The baseline starts N `sage run --no-journal -- <i>` processes one after another; each worker
measurement queues N runs and starts W workers with `--drain` (concurrency 1 each, so that W processes run at
once), timing until the last worker exits. Reported: runs/s of each, the ratio against the baseline, and
the per-run overhead of one worker over the baseline (claiming, the child process's lease, journaling the
steps, storing the output line, recording the end), which is what a queued run costs beyond a plain run.

    python bench/workers.py [--runs 40] [--backend postgres|sqlite]

The machine's cores bound what more workers can gain: each run is a Python process of its own.

`--model` measures the model-bound workload instead (issue 32): RUNS (default 1,000) queued runs, each making 3
sequential `divine` calls to a local chat-completions server that answers after 500 ms (tests/llm/latency_server.py,
one asyncio loop, in a process of its own), on each backend (`--backend both` by default): one thread-mode
worker with `--concurrency RUNS` (target: all done in at most 10 s, peak RSS at most 1.5 GB), four thread-mode
workers sharing the runs, and one process-mode worker (`--process-concurrency`, default 64) for comparison.
Reported per configuration: wall time, peak RSS of the largest worker, and the workers' CPU per run; and the
CPU per run of the same worker on runs that make no call at all, which is the cost of claiming and journaling
a run (its lease, its record, its output and its end).

    python bench/workers.py --model [--runs 1000] [--backend postgres|sqlite|both] [--process-concurrency 64]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, require_success, sage_command

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "workers"))
sys.path.insert(0, str(REPO))

from worker_harness import submit_many  # noqa: E402

PROGRAM = """\
agent Main {
    @persistent seen: Int

    on start {
        let started = now_ms();
        let home = env_or("HOME", "?");
        let name = unwrap_or(first(args()), "-");
        self.seen.set(self.seen.get() + 1);
        self.seen.update(|n: Int| n + 1);
        print("run {name} at {started} in {home}");
        yield(0);
    }
}

run Main;
"""
GROVE = '[project]\nname = "throughput"\n\n[persistence]\nbackend = "sqlite"\n'


def make_project(root: Path) -> Path:
    project = root / "throughput"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    (project / "grove.toml").write_text(GROVE, encoding="utf-8")
    return project


def baseline(project: Path, env: dict[str, str], runs: int) -> float:
    started = time.perf_counter()
    for i in range(runs):
        result = subprocess.run([*sage_command(), "run", "--no-journal", "--", str(i)], cwd=project, env=env,
                                capture_output=True, text=True)
        require_success("sage run --no-journal", result)
    return time.perf_counter() - started


def with_workers(project: Path, env: dict[str, str], runs: int, workers: int) -> float:
    submit_many(project, env, [str(i) for i in range(runs)])
    started = time.perf_counter()
    pool = [subprocess.Popen([*sage_command(), "worker", "--drain", "--poll-ms", "50"], cwd=project, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    for process in pool:
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed: {err}")
    return time.perf_counter() - started


MODEL_PROGRAM = """\
agent Main {
    on start {
        let name = unwrap_or(first(args()), "-");
        let total = 0;
        for i in range(0, CALLS) {
            total = total + str_len(try divine("question {i} of run {name}"));
        }
        print("run {name}: {total}");
        yield(0);
    }
}

run Main;
"""
EMPTY_PROGRAM = """\
agent Main {
    on start {
        let name = unwrap_or(first(args()), "-");
        print("run {name}");
        yield(0);
    }
}

run Main;
"""
MODEL_CALLS = 3
TARGET_S = 10.0
TARGET_RSS_MB = 1536


class Drained:
    """Workers run with --drain to their end: wall time, the peak RSS of the largest, their CPU in all."""

    def __init__(self, seconds: float, rss_mb: float, cpu_s: float) -> None:
        self.seconds = seconds
        self.rss_mb = rss_mb
        self.cpu_s = cpu_s


def drain(project: Path, env: dict[str, str], names: list[str], workers: int, *flags: str) -> Drained:
    submit_many(project, env, names)
    started = time.perf_counter()
    # each worker's log goes to a file: a pipe nobody reads while waiting for the worker fills up (two lines a run)
    # and stops the worker at its next line
    logs = [tempfile.TemporaryFile() for _ in range(workers)]
    pool = [subprocess.Popen([*sage_command(), "worker", "--drain", "--poll-ms", "50", *flags], cwd=project, env=env,
                             stdout=subprocess.DEVNULL, stderr=log) for log in logs]
    rss = cpu = 0.0
    for process, log in zip(pool, logs):
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        rss = max(rss, usage.ru_maxrss / 1024)
        cpu += usage.ru_utime + usage.ru_stime
        log.seek(0)
        text = log.read().decode(errors="replace")
        log.close()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed: {text[-2000:]}")
    seconds = time.perf_counter() - started
    return Drained(seconds, rss, cpu)


def model_bench(options: argparse.Namespace) -> int:
    backends = ["sqlite", "postgres"] if options.backend == "both" else [options.backend]
    summary = []
    n = options.runs
    with tempfile.TemporaryDirectory(prefix="sage-workers-model-") as tmp:
        root = Path(tmp)
        server = subprocess.Popen([sys.executable, str(REPO / "tests" / "llm" / "latency_server.py"), "--latency-ms",
                                   "500"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        url = server.stdout.readline().strip()   # type: ignore[union-attr]
        try:
            for backend in backends:
                cluster = None
                env = {k: v for k, v in bench_env(root / "cache").items() if k != "SAGE_STATE_URL"}
                env.update(SAGE_LLM_URL=url, SAGE_API_KEY="bench-key", SAGE_MODEL="bench-model")
                try:
                    if backend == "postgres":
                        from pgcluster import start_cluster
                        cluster = start_cluster()
                        env["SAGE_STATE_URL"] = cluster.new_database()
                    project = make_project(root / backend)
                    main = project / "src" / "main.sg"
                    main.write_text(EMPTY_PROGRAM, encoding="utf-8")
                    names = [str(i) for i in range(n)]
                    empty = drain(project, env, names, 1, "--concurrency", str(n), "--isolation", "thread")
                    main.write_text(MODEL_PROGRAM.replace("CALLS", str(MODEL_CALLS)), encoding="utf-8")
                    print(f"{n} model-bound runs ({MODEL_CALLS} calls at 500 ms each) on {backend}, "
                          f"{os.cpu_count()} cores")
                    print(f"  {'configuration':<40} {'wall s':>7} {'peak MiB':>9} {'CPU ms/run':>11}")
                    rows = (("1 thread worker, concurrency " + str(n), 1, ("--concurrency", str(n), "--isolation", "thread")),
                            (f"4 thread workers, concurrency {-(-n // 4)}", 4,
                             ("--concurrency", str(-(-n // 4)), "--isolation", "thread")),
                            (f"1 process worker, concurrency {options.process_concurrency}", 1,
                             ("--concurrency", str(options.process_concurrency), "--isolation", "process")))
                    one = None
                    for label, workers, flags in rows:
                        result = drain(project, env, names, workers, *flags)
                        one = one or result
                        print(f"  {label:<40} {result.seconds:>7.2f} {result.rss_mb:>9.0f} "
                              f"{result.cpu_s / n * 1000:>11.1f}", flush=True)
                    print(f"  claiming and journaling alone (runs that call nothing, 1 thread worker): "
                          f"{empty.cpu_s / n * 1000:.1f} ms CPU a run, {empty.seconds:.2f} s in all")
                    assert one is not None
                    ok = one.seconds <= TARGET_S and one.rss_mb <= TARGET_RSS_MB
                    summary.append(f"{backend}: 1 thread worker {one.seconds:.1f} s, peak {one.rss_mb:.0f} MiB, "
                                   f"{one.cpu_s / n * 1000:.1f} ms CPU/run (claim+journal {empty.cpu_s / n * 1000:.1f}"
                                   f" ms/run) {'OK' if ok else 'MISSED'} (target <= {TARGET_S:.0f} s, "
                                   f"<= {TARGET_RSS_MB} MiB)")
                finally:
                    if cluster is not None:
                        cluster.destroy()
        finally:
            server.stdin.close()   # type: ignore[union-attr]
            server.wait(30)
    print("summary (a loaded machine makes these noisy):")
    for line in summary:
        print("  " + line)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--backend", choices=["postgres", "sqlite", "both"], default=None)
    parser.add_argument("--model", action="store_true")
    parser.add_argument("--process-concurrency", type=int, default=64)
    options = parser.parse_args()
    if options.model:
        options.runs = options.runs or 1000
        options.backend = options.backend or "both"
        return model_bench(options)
    options.runs = options.runs or 40
    options.backend = options.backend or "postgres"
    if options.backend == "both":
        raise SystemExit("--backend both is for --model")
    cluster = None
    with tempfile.TemporaryDirectory(prefix="sage-workers-bench-") as tmp:
        try:
            root = Path(tmp)
            env = bench_env(root / "cache")
            env = {k: v for k, v in env.items() if k != "SAGE_STATE_URL"}
            if options.backend == "postgres":
                from pgcluster import start_cluster
                cluster = start_cluster()
                env["SAGE_STATE_URL"] = cluster.new_database()
            project = make_project(root)
            n = options.runs
            baseline(project, env, 2)   # warms the AST cache and the bytecode
            plain = baseline(project, env, n)
            print(f"{n} runs on {options.backend}, {os.cpu_count()} cores")
            print(f"  sequential sage run --no-journal: {n / plain:6.2f} runs/s  ({plain / n * 1000:6.0f} ms a run)")
            one = None
            for workers in (1, 2, 4):
                seconds = with_workers(project, env, n, workers)
                one = seconds if workers == 1 else one
                print(f"  {workers} worker{'s' if workers > 1 else ' '}:                      {n / seconds:6.2f} runs/s  "
                      f"({seconds / n * 1000:6.0f} ms a run, {plain / seconds:4.2f}x the baseline)")
            print(f"  per-run overhead of a queued run (1 worker - baseline): {(one - plain) / n * 1000:.0f} ms")
        finally:
            if cluster is not None:
                cluster.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
