"""`sage eval` at scale (SPEC §22.1): 500 cases against a model API test server that answers each request
after 200 ms, 50 at once, recorded to cassettes and then replayed from them with no model; and the peak
memory of a 100,000-row dataset, 10 rows of it (`--limit`) against all of it.

Every figure comes from the same run on the same machine. Start-up is measured in each round as the same
`sage eval` command over one case (`--limit 1`): a recording of one case whose model answers at once, and a
replay of one case. Then:
- ideal = cases / concurrency x latency + start-up (record); record ratio = record wall / ideal;
- replay speed-up = (record wall - its start-up) / (replay wall - its start-up): the cases alone, since the
  start-up of a Python process is no part of what a cassette saves;
- CPU per case = (the `sage` process's CPU time - that of its one-case start-up) / (cases - 1): what the
  harness, the engine and, when recording, the HTTP client spend on a case.
Each round measures all of these next to each other (the start-ups and the replay, which take well under a
second, `--tries` times each, the fastest counting); the medians of the rounds are printed with their range.
Targets: record <= 1.5x the ideal; replay >= 20x faster than recording.

    python bench/evals.py [--cases N] [--concurrency N] [--latency-ms MS] [--rounds N] [--tries N]
                          [--no-memory]
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
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
ANSWER = reply("ok", {"prompt_tokens": 5, "completion_tokens": 1})


def measured(command: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, its peak resident memory in KiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], env=env, cwd=cwd, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):   # 1: a false score, as the offline model gives
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    peak = int(done.stderr.strip().splitlines()[-1])
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), peak


def fastest(tries: int, command: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """The run of `command` with the least wall time of `tries`: what a busy machine adds is never less."""
    return min((measured(command, env, cwd) for _ in range(tries)), key=lambda m: m[0])


def passed(report: Path) -> tuple[int, list]:
    """How many cases passed, and every case's scores in row order."""
    cases = json.loads(report.read_text())["evals"][0]["cases"]
    return sum(c["passed"] for c in cases), [c["scores"] for c in cases]


def one_round(args: argparse.Namespace, work: Path, model: FakeOpenAI, online: dict, offline: dict) -> dict:
    sage = [*sage_command(), "eval", "bench_eval.sg", "--concurrency", str(args.concurrency)]
    shutil.rmtree(work / "tapes", ignore_errors=True)
    shutil.rmtree(work / "tape1", ignore_errors=True)

    def slow(request):
        time.sleep(args.latency_ms / 1000)
        return ANSWER(request)

    model.push(*[ANSWER] * args.tries)
    start_record = fastest(args.tries, [*sage, "--limit", "1", "--record", "tape1"], online, work)
    sent = len(model.requests)
    model.push(*[slow] * args.cases)
    record = measured([*sage, "--record", "tapes", "--json", "record.json"], online, work)
    sent = len(model.requests) - sent
    start_replay = fastest(args.tries, [*sage, "--limit", "1", "--replay", "tapes"], offline, work)
    replay = fastest(args.tries, [*sage, "--replay", "tapes", "--json", "replay.json"], offline, work)
    recorded, replayed = passed(work / "record.json"), passed(work / "replay.json")
    if sent != args.cases or recorded[0] != args.cases or replayed != recorded:
        sys.exit(f"the round is not what it should be: {sent} requests, {recorded[0]} recorded cases passed, "
                 f"replay {'gave the same scores' if replayed == recorded else 'differs'}")
    ideal = args.cases / args.concurrency * args.latency_ms / 1000 + start_record[0]
    cases = args.cases - 1
    return {"start_record": start_record[0], "ideal": ideal, "record": record[0], "ratio": record[0] / ideal,
            "record_cpu": (record[1] - start_record[1]) / cases * 1000,
            "start_replay": start_replay[0], "replay": replay[0],
            "speedup": (record[0] - start_record[0]) / max(replay[0] - start_replay[0], 1e-3),
            "replay_cpu": (replay[1] - start_replay[1]) / cases * 1000, "record_peak": record[2]}


def spread(rounds: list[dict], key: str, form: str) -> str:
    values = [r[key] for r in rounds]
    median = format(statistics.median(values), form)
    if len(values) == 1:
        return f"{median:>9}"
    return f"{median:>9}  ({format(min(values), form)} - {format(max(values), form)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tries", type=int, default=3, help="runs of each short command per round (the fastest "
                        "counts)")
    parser.add_argument("--no-memory", action="store_true", help="skip the 100,000-row dataset")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sage-bench-evals-"))
    (work / "bench_eval.sg").write_text(EVAL)
    (work / "rows.jsonl").write_text("".join(f'{{"n": {i}}}\n' for i in range(args.cases)))
    env = bench_env(work / "cache")
    offline = dict(env, SAGE_LLM_URL="http://127.0.0.1:9/v1", SAGE_API_KEY="sk-bench")
    with FakeOpenAI() as model:
        online = dict(env, SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-bench")
        model.push(ANSWER)
        measured([*sage_command(), "eval", "bench_eval.sg", "--limit", "1"], online, work)   # caches warm
        rounds = [one_round(args, work, model, online, offline) for _ in range(args.rounds)]

    print(f"{args.cases} cases, {args.concurrency} at once, model latency {args.latency_ms} ms; every case "
          f"passed, recorded and replayed; {args.rounds} round{'s' * (args.rounds != 1)}: median (min - max)")
    rows = [("start-up: record of 1 case (s)", "start_record", ".3f", ""),
            ("ideal: cases/conc. x latency + start-up", "ideal", ".3f", ""),
            ("record wall (s)", "record", ".3f", ""),
            ("record / ideal", "ratio", ".2f", f"<= 1.5   {verdict(rounds, 'ratio', lambda x: x <= 1.5)}"),
            ("start-up: replay of 1 case (s)", "start_replay", ".3f", ""),
            ("replay wall (s)", "replay", ".3f", ""),
            ("replay speed-up (less start-ups)", "speedup", ".1f",
             f">= 20    {verdict(rounds, 'speedup', lambda x: x >= 20)}"),
            ("CPU per case, record (ms)", "record_cpu", ".2f", ""),
            ("CPU per case, replay (ms)", "replay_cpu", ".3f", "")]
    for label, key, form, target in rows:
        print(f"{label:<42}{spread(rounds, key, form):<28}{target}")
    print(f"peak memory while recording: {statistics.median(r['record_peak'] for r in rounds) / 1024:.0f} MiB")
    if not args.no_memory:
        (work / "rows.jsonl").write_text('{"n": 1}\n' * 100_000)
        small = measured([*sage_command(), "eval", "bench_eval.sg", "--limit", "10", "--model", "echo"], env, work)[2]
        large = measured([*sage_command(), "eval", "bench_eval.sg", "--model", "echo"], env, work)[2]
        print(f"peak memory of a 100,000-row dataset with --limit 10: {small / 1024:.0f} MiB, all of it (offline "
              f"model): {large / 1024:.0f} MiB")
    shutil.rmtree(work, ignore_errors=True)


def verdict(rounds: list[dict], key: str, ok) -> str:
    good = sum(1 for r in rounds if ok(r[key]))
    return "ok" if good == len(rounds) else "MISSED" if good == 0 else f"ok in {good} of {len(rounds)}"


if __name__ == "__main__":
    main()
