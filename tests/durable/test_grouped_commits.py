"""Grouped outcome commits (SPEC §14), on both backends: a read-only step's outcome does not wait for the next
intent or the end of the run — the group's timer commits it while the program sleeps — so a run killed then
replays the value instead of asking again; and a destructive step commits the outcomes pending before it."""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from durable_harness import make_project, open_project_store, read_ledger, sage_command, sage_env

PROGRAM = """\
mod counter;
use counter::Counter;

agent Main {
    use Counter

    on start {
        let first = now_ms();
        let echoed = try Counter.echo("e");
        print("first {first}");
        while !file_exists("go") {
            sleep_ms(50);
        }
        let receipt = try Counter.charge("acct", 1);
        print("receipt {receipt}");
        yield(0);
    }
}

run Main;
"""


def journal(project: Path) -> tuple[str, list]:
    store = open_project_store(project)
    try:
        run_id = store.newest_run().id
        return run_id, store.steps(run_id)
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_pending_outcomes_commit_while_the_program_waits_and_replay_after_a_kill(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "paced", state_url=state_url)
    (project / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    env = sage_env(project, tmp_path / "cache")
    run = subprocess.Popen([*sage_command(), "run"], cwd=project, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        printed = run.stdout.readline().split()   # "first <ms>": the first outcomes are made, the wait begins
        assert printed[:1] == ["first"], run.communicate()
        deadline = time.monotonic() + 60
        while True:   # no intent, no field write, no end: only the group's timer commits them
            run_id, steps = journal(project)
            if len(steps) >= 4:
                break
            assert time.monotonic() < deadline, f"the outcomes were not committed while the program waited: {steps}"
            time.sleep(0.1)
    finally:
        run.send_signal(signal.SIGKILL)
        run.communicate()
    assert [(s.target, s.status) for s in steps[:2]] == [("now_ms", "done"), ("Counter.echo", "done")]
    assert steps[0].outcome == int(printed[1])
    (project / "go").write_text("", encoding="utf-8")
    resumed = subprocess.run([*sage_command(), "run", "--resume", run_id], cwd=project, capture_output=True,
                             text=True, timeout=300, env=env)
    assert (resumed.returncode, resumed.stdout) == (0, "receipt 1\n"), resumed.stderr   # "first" replayed quietly
    assert journal(project)[1][0].outcome == int(printed[1])
    assert [e["args"] for e in read_ledger(project)] == [{"account": "acct", "amount": 1}]
