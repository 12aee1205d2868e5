"""`sage eval` at scale (SPEC §22.1): 500 cases against a model API test server that answers each request
after 200 ms, 50 at once, against the ideal (500 / 50 x 0.2 s plus the start-up of a `sage eval` that runs
no case); the harness's own CPU per case (the `sage` process's CPU time, less that start-up's, per case);
replaying the same 500 cases from the cassettes recorded meanwhile against recording them; and the peak
memory of a 100,000-row dataset, 10 rows of it (`--limit`) against all of it (rows are read one at a time and
finished cases go to a temporary file).
Targets: recording ≤ 1.5x the ideal; replaying ≥ 20x faster than recording (both without start-up).

    python bench/evals.py [--cases N] [--concurrency N] [--latency-ms MS]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import REPO, bench_env, sage_command

sys.path.insert(0, str(REPO / "tests" / "llm"))

from fake_openai import FakeOpenAI, reply  # noqa: E402

EVAL = """\
record Row { n: Int }

eval "bench" over "rows.jsonl" as r: Row {
    score "answered" = (try divine("row {r.n}")) == "ok";
}
"""


def measured(command: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, its peak resident memory in KiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], env=env, cwd=cwd, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    peak = int(done.stderr.strip().splitlines()[-1])
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sage-bench-evals-"))
    (work / "bench_eval.sg").write_text(EVAL)
    (work / "rows.jsonl").write_text("".join(f'{{"n": {i}}}\n' for i in range(args.cases)))
    env = bench_env(work / "cache")
    sage = [*sage_command(), "eval", "bench_eval.sg", "--concurrency", str(args.concurrency)]

    def slow(request):
        time.sleep(args.latency_ms / 1000)
        return reply("ok", {"prompt_tokens": 5, "completion_tokens": 1})(request)

    with FakeOpenAI() as model:
        model_env = dict(env, SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-bench")
        measured([*sage, "--limit", "0"], model_env, work)   # caches warm
        startup, startup_cpu, _ = min((measured([*sage, "--limit", "0"], model_env, work) for _ in range(3)),
                                      key=lambda m: m[0])
        model.push(*[slow] * args.cases)
        recording, record_cpu, record_peak = measured([*sage, "--record", "tapes", "--json", "r.json"], model_env,
                                                      work)
        sent = len(model.requests)
    report = json.loads((work / "r.json").read_text())
    passed = sum(c["passed"] for c in report["evals"][0]["cases"])
    offline = dict(env, SAGE_LLM_URL="http://127.0.0.1:9/v1", SAGE_API_KEY="sk-bench")
    replaying, replay_cpu, _ = min((measured([*sage, "--replay", "tapes"], offline, work) for _ in range(3)),
                                   key=lambda m: m[0])
    (work / "rows.jsonl").write_text('{"n": 1}\n' * 100_000)
    small = measured([*sage, "--limit", "10", "--model", "echo"], env, work)[2]
    large = measured([*sage, "--model", "echo"], env, work)[2]

    ideal = args.cases / args.concurrency * args.latency_ms / 1000
    record_net, replay_net = recording - startup, max(replaying - startup, 1e-3)
    print(f"{args.cases} cases, {args.concurrency} at once, model latency {args.latency_ms} ms "
          f"({sent} requests, {passed} passed)")
    print(f"{'':<34}{'seconds':>9}{'ratio':>9}   target")
    print(f"{'start-up (sage eval, no case)':<34}{startup:>9.2f}")
    print(f"{'ideal: cases/concurrency x latency':<34}{ideal:>9.2f}{1.0:>8.2f}x")
    verdict = "ok" if record_net <= 1.5 * ideal else "MISSED"
    print(f"{'record, less start-up':<34}{record_net:>9.2f}{record_net / ideal:>8.2f}x   <= 1.5x {verdict}")
    speedup = record_net / replay_net
    print(f"{'replay, less start-up':<34}{replay_net:>9.2f}{speedup:>8.1f}x faster   >= 20x "
          f"{'ok' if speedup >= 20 else 'MISSED'}")
    print(f"harness CPU per case: record {(record_cpu - startup_cpu) / args.cases * 1000:.2f} ms, replay "
          f"{(replay_cpu - startup_cpu) / args.cases * 1000:.2f} ms")
    print(f"peak memory: recording {record_peak / 1024:.0f} MiB; 100,000-row dataset with --limit 10: "
          f"{small / 1024:.0f} MiB, all of it (offline model): {large / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
