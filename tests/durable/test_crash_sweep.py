"""The crash sweep: a durable run killed at any journal write resumes to the result of an uncrashed run, with no
destructive call repeated, no `@persistent` increment lost and no process left behind.

For each program of `programs/`, an uncrashed run counts its committed journal writes N (SAGE_COUNT_WRITES).
Then, for each k in 1..N, a fresh copy of the project is run with SAGE_CRASH_AFTER_WRITE=k (the process
exits with os._exit right after the k-th commit) or SAGE_CRASH_BEFORE_WRITE=k (right before it), and resumed
with `sage run --resume` until it ends. A resume that halts on a destructive step of unknown outcome is
resolved from the counting server's ledger: `sage runs resolve … --ok <the ledger's value>` when the server
charged, `--not-run` when it did not. Then:

- the run ends with the uncrashed run's exit code;
- the attempts' combined stdout holds the uncrashed run's lines in order, and a line appears twice only when
  the attempt that first printed it printed it after its last committed journal write (the programs print
  each line from the agent whose journal write comes next, so this is exactly SPEC §14's per-agent rule).
  `--not-run` deletes the halted step's intent record, which withdraws that write: the lines printed between
  it and the write before it may then be printed again too;
- the ledger holds each destructive call exactly once, with the uncrashed run's results;
- `@persistent` values equal the uncrashed run's, and the values the program implies;
- no counting-server process outlives its run (a crashed `sage` leaves it to exit on its closed stdin).

`model_tools` is a `divine(p, tools: […])` whose model (a scripted chat-completions server on 127.0.0.1,
tests/llm/strict_server.py) asks for the destructive charge and then a read-only echo: each model turn and
each call it asks for is a journal step.

Backends: the sweep runs on SQLite and on PostgreSQL (a real server, tests/pgcluster.py; each case's project
has a name of its own in one database, as separate checkouts would).

Cost: every attempt of an MCP program starts Python twice (sage and the server). By default (CI) every k is
swept with the crash after the write, and the crash before the write for every k of the programs without MCP
and every second k of the others (in `classes` those are the writes that record a call's outcome: a crash
before them leaves a charge the journal does not know, the case `--ok` resolves); SAGE_SWEEP=exhaustive
sweeps both variants at every k of every program. On PostgreSQL the suite samples: each variant at every
fourth k (the two variants at different k); SAGE_SWEEP=
exhaustive sweeps it whole too (bench/README.md has the figures). SAGE_SWEEP_REPORT=FILE
appends one JSON line of figures per program.
"""
from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from durable_harness import (Attempt, Halt, ledger_calls, make_project, read_field, resolve_halt, run_id_in,
                             run_sage, run_status, sage_env, wait_for_servers_to_end)
from sagepy.store.base import CRASH_AFTER_VAR, CRASH_BEFORE_VAR

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "llm"))
from strict_server import StrictChatServer, ToolCall  # noqa: E402  (tests/llm: the scripted model)

WORKERS = 3
MAX_ATTEMPTS = 8
CRASH_VARS = {"after": CRASH_AFTER_VAR, "before": CRASH_BEFORE_VAR}


@dataclass(frozen=True)
class Program:
    name: str
    mcp: bool
    exit_code: int
    fields: tuple[tuple[str, str, object], ...] = ()   # (agent, field, the value the program implies)


PROGRAMS = [
    Program("classes", mcp=True, exit_code=3),
    Program("three_agents", mcp=True, exit_code=0),
    Program("messages", mcp=False, exit_code=0),
    Program("persistent_counter", mcp=False, exit_code=0, fields=(("Main", "count", 5),)),
    Program("supervisor", mcp=False, exit_code=0, fields=(("Flaky", "tries", 3),)),
    Program("model_tools", mcp=True, exit_code=0),
]


def scripted_model(request: dict) -> object:
    """The model of `model_tools`, a function of the conversation so far (so that it answers a resumed run's
    live turns as it answered the crashed one's): a charge, then an echo of the receipt, then the answer."""
    results = [m["content"] for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        return ToolCall("Counter__charge", {"account": "dee", "amount": 4})
    if len(results) == 1:
        return ToolCall("Counter__echo", {"text": f"receipt {results[0]}"})
    return f"charged dee: {results[1]}"


@dataclass
class Baseline:
    code: int
    lines: list[str]
    writes: int
    calls: list
    fields: dict


@dataclass
class Case:
    variant: str
    k: int
    attempts: list[Attempt]
    halts: list[Halt]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ast-cache")


@pytest.fixture(scope="module")
def model() -> StrictChatServer:
    """A chat-completions server on 127.0.0.1 that refuses what the hosted APIs refuse, answering every
    request with `scripted_model`."""
    with StrictChatServer([scripted_model] * 10_000) as server:
        yield server
    assert server.errors == []


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_crash_sweep(backend: str, program: Program, tmp_path: Path, cache_dir: Path, model: StrictChatServer,
                     request: pytest.FixtureRequest) -> None:
    started = time.monotonic()
    llm = {"SAGE_LLM_URL": model.url, "SAGE_API_KEY": "sk-test"}
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    base = uncrashed(program, tmp_path, cache_dir, llm, state_url)
    points = crash_points(program, base, backend)
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(sweep_case, program, base, variant, k, tmp_path, cache_dir, llm, state_url)
                   for variant, k in points]
    failures, cases = [], []
    for (variant, k), future in zip(points, futures):
        try:
            cases.append(future.result())
        except AssertionError as exc:
            failures.append(f"crash {variant} write {k}: {exc}")
    figures = {"backend": backend, "program": program.name, "writes": base.writes, "points": len(points),
               "attempts": sum(len(c.attempts) for c in cases), "halts": sum(len(c.halts) for c in cases),
               "seconds": round(time.monotonic() - started, 1)}
    print(json.dumps(figures))
    report = os.environ.get("SAGE_SWEEP_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as out:
            out.write(json.dumps(figures) + "\n")
    assert not failures, "\n\n".join(failures)
    assert model.errors == [], model.errors


def uncrashed(program: Program, tmp_path: Path, cache_dir: Path, llm: dict[str, str],
              state_url: str | None) -> Baseline:
    project = make_project(tmp_path, program.name, "uncrashed", state_url)
    attempt = run_sage(project, ["run"], sage_env(project, cache_dir, **llm), tmp_path / "uncrashed.log")
    assert attempt.code == program.exit_code, attempt.stderr
    assert run_id_in(attempt.stderr) is not None, attempt.stderr
    assert wait_for_servers_to_end(project) == []
    assert attempt.writes > 0
    fields = {(agent, name): read_field(project, agent, name) for agent, name, _ in program.fields}
    assert fields == {(agent, name): value for agent, name, value in program.fields}
    calls = ledger_calls(project)
    assert len({(tool, args) for tool, args, _ in calls}) == len(calls), "each destructive call must be unique"
    return Baseline(attempt.code, attempt.output, attempt.writes, calls, fields)


def crash_points(program: Program, base: Baseline, backend: str = "sqlite") -> list[tuple[str, int]]:
    every = range(1, base.writes + 1)
    exhaustive = os.environ.get("SAGE_SWEEP") == "exhaustive"
    if backend == "postgres" and not exhaustive:
        return [("after", k) for k in every if k % 4 == 1] + [("before", k) for k in every if k % 4 == 3]
    points = [("after", k) for k in every]
    if exhaustive or not program.mcp:
        points += [("before", k) for k in every]
    else:
        points += [("before", k) for k in every if k % 2 == 0]
    return points


def sweep_case(program: Program, base: Baseline, variant: str, k: int, tmp_path: Path, cache_dir: Path,
               llm: dict[str, str], state_url: str | None = None) -> Case:
    project = make_project(tmp_path, program.name, f"{variant}-{k}", state_url)
    env = sage_env(project, cache_dir, **llm)
    attempts: list[Attempt] = []
    halts: list[Halt] = []
    withdrawn: set[int] = set()   # attempts whose last write a `--not-run` deleted
    run_id = None
    args = ["run"]
    crash = {CRASH_VARS[variant]: str(k)}
    while True:
        assert len(attempts) < MAX_ATTEMPTS, f"no end after {MAX_ATTEMPTS} attempts:\n{story(attempts)}"
        attempt = run_sage(project, args, dict(env, **crash), tmp_path / f"{variant}-{k}-{len(attempts) + 1}.log")
        crash = {}
        attempts.append(attempt)
        run_id = run_id or run_id_in(attempt.stderr)
        left = wait_for_servers_to_end(project)
        assert left == [], f"counting server(s) {left} outlived attempt {len(attempts)}:\n{story(attempts)}"
        if attempt.crashed:
            known = run_id is not None and run_status(project, run_id) is not None
            args = ["run", "--resume", run_id] if known else ["run"]
        elif attempt.halted:
            halt = resolve_halt(project, env, run_id, attempt.stderr)
            halts.append(halt)
            if halt.resolution == ["--not-run"]:   # the intent was the last write of the attempt that made it
                withdrawn.add(max(i for i, a in enumerate(attempts) if a.writes))
            args = ["run", "--resume", run_id]
        else:
            break
    assert attempts[0].crashed, f"the first attempt did not crash at write {k}:\n{story(attempts)}"
    assert attempt.code == base.code, story(attempts)
    check_output(base.lines, attempts, withdrawn)
    assert ledger_calls(project) == base.calls, f"ledger differs from the uncrashed run's:\n{story(attempts)}"
    fields = {(agent, name): read_field(project, agent, name) for agent, name, _ in program.fields}
    assert fields == base.fields, story(attempts)
    assert run_status(project, run_id) in ("completed", "failed")
    return Case(variant, k, attempts, halts)


def check_output(expected: list[str], attempts: list[Attempt], withdrawn: set[int]) -> None:
    """The attempts' lines, in order, are `expected`; a line is printed again only when the attempt that
    printed it before did so after its last committed journal write (its last but one, when `--not-run`
    deleted the last: `withdrawn` holds the indexes of those attempts).

    `end` is how many lines of `expected` have been printed; lines before `committed` were followed by a
    journal write in the attempt that printed them and must not appear again."""
    end = committed = 0
    for index, attempt in enumerate(attempts):
        number = index + 1
        out = attempt.output
        if not out:
            continue
        starts = [s for s in range(committed, end + 1) if expected[s:s + len(out)] == out]
        assert starts, (f"attempt {number} printed lines that do not continue the uncrashed run's output "
                        f"(expected a slice of {expected} starting in {committed}..{end}):\n{story(attempts)}")
        start = starts[0]
        end = start + len(out)
        committed = max(committed, end - attempt.lines_after_write(2 if index in withdrawn else 1))
    assert end == len(expected), f"lines lost: {expected[end:]}\n{story(attempts)}"


def story(attempts: list[Attempt]) -> str:
    """What each attempt did, for a failure message."""
    parts = []
    for number, attempt in enumerate(attempts, 1):
        events = " ".join(f"[{text}]" if kind == "write" else repr(text) for kind, text in attempt.events)
        parts.append(f"  {number}. sage {' '.join(attempt.args)} -> exit {attempt.code}: {events}\n"
                     + "".join(f"       stderr: {line}\n" for line in attempt.stderr.splitlines()[-6:]))
    return "".join(parts)
