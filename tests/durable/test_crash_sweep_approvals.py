"""The crash sweep of a program with approvals and an `ask` (SPEC §14, §17): a durable run with no one to
answer pauses at each decision; the test answers it (`approve`, `deny`, `answer`, as a person would with
`sage runs …`) and resumes it, and the whole story is repeated with a crash before and after every journal
write of every phase — the waiting records, the pause transaction, the intents and outcomes of the approved
calls. Invariants, besides those of test_crash_sweep.py (exit code, output, ledger):

- a decision, once recorded, is never asked again (no later pause names its step);
- a denied call never runs;
- an approved destructive call runs exactly once (a crash between its intent and its outcome halts the run,
  and the halt is resolved from the ledger).

The tool is the built-in `Shell` (destructive) appending to ledger.txt, so no server starts and an attempt
costs one Python process. Phases are counted by recorded decisions. The uncrashed run is played first, and a
copy of its project kept as each phase starts; each crash point then starts from the copy of its phase, crashes
the phase's first attempt at that write, and plays on until the phase ends (its pause answered, or the run's
end), where the output and the ledger must be the uncrashed run's. By default every write is swept with the
crash after it and every second one with the crash before it; SAGE_SWEEP=exhaustive sweeps both at every write.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from durable_harness import Attempt, run_id_in, run_sage, sage_command, sage_env
from sagepy.store.base import CRASH_AFTER_VAR, CRASH_BEFORE_VAR
from test_crash_sweep import check_output, story

PROGRAM = """\
agent Main {
    use Shell;
    on start {
        print("start");
        let a = try Shell.run("echo charge-1 >> ledger.txt");
        print("charged {a.exit_code}");
        let b = Shell.run("echo charge-2 >> ledger.txt") catch(e) { ShellResult { exit_code: -2, stdout: e.message, stderr: "" } };
        print("second {b.exit_code} {b.stdout}");
        let name = try ask("Who is paying?");
        print("hello {name}");
        let c = try Shell.run("echo charge-3-{name} >> ledger.txt");
        print("end {c.exit_code}");
    }
}
run Main;
"""
GROVE = """\
[project]
name = "approvals_sweep"

[persistence]
backend = "sqlite"

[approvals]
calls = "all"
Shell = "destructive"
"""
# what a person answers, by what the pause line shows
ANSWERS = [("charge-1", ["approve"]), ("charge-2", ["deny", "--reason", "not this one"]), ("Who is paying?", ["answer", "dee"]),
           ("charge-3", ["approve"])]
LEDGER = ["charge-1", "charge-3-dee"]
OUTPUT = ["start", "charged 0", "second -2 Shell.run was denied: not this one", "hello dee", "end 0"]
PAUSE = re.compile(r"^paused: (.*\((\S+) step (\d+)\).*)$", re.M)
HALT = re.compile(r"^halted: the outcome of Shell\.run \((\S+) step (\d+)\) is unknown", re.M)
CRASH_VARS = {"after": CRASH_AFTER_VAR, "before": CRASH_BEFORE_VAR}
WORKERS = 3
MAX_ATTEMPTS = 14


def make(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    (root / "grove.toml").write_text(GROVE, encoding="utf-8")
    return root


def ledger(root: Path) -> list[str]:
    path = root / "ledger.txt"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def sage_runs(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*sage_command(), "runs", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)


class Story:
    """The uncrashed run, phase by phase: a copy of the project as each phase starts (its run id, the decisions
    recorded so far), and what the phase's attempt printed and wrote."""

    def __init__(self) -> None:
        self.snapshots: list[Path] = []
        self.decided: list[set[tuple[str, int]]] = []
        self.lines: list[list[str]] = []
        self.writes: list[int] = []
        self.ledgers: list[list[str]] = []
        self.run_id: str | None = None


def play(root: Path, cache_dir: Path, log: Path, story_of: Story | None = None, crash: tuple[str, int] | None = None,
         phase: int | None = None, rid: str | None = None, decided: set | None = None) -> list[Attempt]:
    """Run the program, answering each pause and resolving each halt: to its end (the uncrashed run, recorded in
    `story_of`), or, with `phase`, until that phase ends (a pause answered, or the end), the phase's first attempt
    crashing at write `crash` = (variant, k)."""
    env = sage_env(root, cache_dir)
    attempts: list[Attempt] = []
    decided = set(decided or ())
    withdrawn: set[int] = set()
    extra = {CRASH_VARS[crash[0]]: str(crash[1])} if crash is not None else {}
    while True:
        assert len(attempts) < MAX_ATTEMPTS, f"no end after {MAX_ATTEMPTS} attempts:\n{story(attempts)}"
        if story_of is not None:
            snapshot = root.with_name(f"{root.name}-phase-{len(decided)}")
            shutil.copytree(root, snapshot)
            story_of.snapshots.append(snapshot)
            story_of.decided.append(set(decided))
            story_of.ledgers.append(ledger(root))
        args = ["run"] if rid is None else ["run", "--resume", rid]
        attempt = run_sage(root, args, dict(env, **extra), log.with_name(f"{log.name}-{len(attempts) + 1}"))
        extra = {}
        attempts.append(attempt)
        if story_of is not None:
            story_of.lines.append(attempt.output)
            story_of.writes.append(attempt.writes)
        rid = rid or run_id_in(attempt.stderr)
        if attempt.crashed:
            continue
        halted = HALT.search(attempt.stderr)
        if halted:
            assert attempt.code == 3, story(attempts)
            path, number = halted.group(1), int(halted.group(2))
            expected = "charge-1" if len(decided) <= 1 else "charge-3-dee"
            fired = ledger(root).count(expected)
            assert fired <= 1, f"{expected} ran {fired} times:\n{story(attempts)}"
            resolution = ["--ok", json.dumps({"exit_code": 0, "stdout": "", "stderr": ""})] if fired else ["--not-run"]
            if not fired:   # the intent was the last write of the attempt that made it
                withdrawn.add(max(i for i, a in enumerate(attempts) if a.writes))
            done = sage_runs(root, env, "resolve", rid, f"{path}:{number}", *resolution)
            assert done.returncode == 0, done.stderr
            continue
        pauses = PAUSE.findall(attempt.stderr)
        if attempt.code == 5:
            assert len(pauses) == 1, story(attempts)
            shown, path, number = pauses[0]
            key = (path, int(number))
            assert key not in decided, f"{path}:{number} was decided and asked again:\n{story(attempts)}"
            answer = next(a for text, a in ANSWERS if text in shown)
            done = sage_runs(root, env, answer[0], rid, f"{path}:{number}", *answer[1:])
            assert done.returncode == 0, done.stderr
            decided.add(key)
            if phase is not None:
                break
            continue
        assert not pauses, story(attempts)
        assert attempt.code == 0, story(attempts)
        break
    if story_of is not None:
        story_of.run_id = rid
        assert len(decided) == len(ANSWERS), story(attempts)
        check_output(OUTPUT, attempts, withdrawn)
        assert ledger(root) == LEDGER, f"ledger {ledger(root)}:\n{story(attempts)}"
    else:
        assert phase is not None
        check_output(expected_lines[phase], attempts, withdrawn)
        following = expected_ledgers[phase + 1] if phase + 1 < len(expected_ledgers) else LEDGER
        assert ledger(root) == following, f"ledger {ledger(root)}, not {following}:\n{story(attempts)}"
    return attempts


expected_lines: list[list[str]] = []
expected_ledgers: list[list[str]] = []


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ast-cache")


def test_crash_sweep_with_approvals_and_ask(tmp_path: Path, cache_dir: Path) -> None:
    uncrashed = Story()
    attempts = play(make(tmp_path / "uncrashed"), cache_dir, tmp_path / "uncrashed.log", uncrashed)
    assert [a.code for a in attempts] == [5, 5, 5, 5, 0]
    assert all(uncrashed.writes), uncrashed.writes
    expected_lines[:] = uncrashed.lines
    expected_ledgers[:] = uncrashed.ledgers
    exhaustive = os.environ.get("SAGE_SWEEP") == "exhaustive"
    points = [(phase, variant, k) for phase, writes in enumerate(uncrashed.writes) for k in range(1, writes + 1)
              for variant in CRASH_VARS if exhaustive or variant == "after" or k % 2 == 0]

    def case(point: tuple[int, str, int]) -> str | None:
        phase, variant, k = point
        root = tmp_path / f"{variant}-{phase}-{k}"
        shutil.copytree(uncrashed.snapshots[phase], root)
        try:
            attempts = play(root, cache_dir, tmp_path / f"{root.name}.log", crash=(variant, k), phase=phase,
                            rid=uncrashed.run_id if phase else None, decided=uncrashed.decided[phase])
            assert attempts[0].crashed, f"no crash at write {k} of phase {phase}:\n{story(attempts)}"
        except AssertionError as exc:
            return f"crash {variant} write {k} of phase {phase}: {exc}"
        return None

    with ThreadPoolExecutor(WORKERS) as pool:
        failures = [f for f in pool.map(case, points) if f is not None]
    print(json.dumps({"program": "approvals", "points": len(points), "phase_writes": uncrashed.writes}),
          file=sys.stderr)
    assert not failures, "\n\n".join(failures)
