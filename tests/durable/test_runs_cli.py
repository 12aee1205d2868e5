"""`sage runs list|show|resolve|prune` (SPEC §14) over runs seeded through the store API, and the lease
staleness rule that decides when `running` is shown as `interrupted`."""
from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagepy.store.base import COMPLETED, DONE, FAILED, HALTED, RUNNING, STARTED, RunRecord, StepRecord
from sagepy.store.leases import FRESH_SECONDS, lease_is_stale, process_alive, shown_status
from sagepy.store.sqlite import SqliteStore

HOST = socket.gethostname()
T0 = 1796067200.0   # 2026-11-30 19:33:20 UTC
GROVE = '[project]\nname = "runs"\n\n[persistence]\nbackend = "sqlite"\n'


def sage(project: Path, *args: str) -> tuple[int, str, str]:
    """`sage ARGS` run in-process from the project directory: (exit code, stdout, stderr)."""
    from sagepy.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(project)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--no-color", *args])
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def dead_pid() -> int:
    """The id of a process that has ended and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "grove.toml").write_text(GROVE, encoding="utf-8")
    return tmp_path


def open_store(project: Path) -> SqliteStore:
    return SqliteStore(str(project / ".sage" / "state.db"))


def step(path: str, number: int, kind: str, target: str, safety: str, status: str, outcome=None) -> StepRecord:
    return StepRecord(path, number, kind, target, "ab" * 32, safety, status, outcome)


@pytest.fixture
def seeded(project: Path) -> Path:
    """Five runs, oldest first: completed, failed, a killed one (running, its process gone), a halted one, and
    one running now in this very process."""
    store = open_store(project)
    store.create_run(RunRecord("20261130-193320-aaaa", T0, COMPLETED, 0, "src/main.sg"))
    store.create_run(RunRecord("20261130-193420-bbbb", T0 + 60, FAILED, 1, "src/main.sg"))
    store.create_run(RunRecord("20261130-193520-cccc", T0 + 120, RUNNING, None, "src/main.sg",
                               dead_pid(), HOST, time.time()))
    store.create_run(RunRecord("20261130-193620-dddd", T0 + 180, HALTED, 3, "src/other.sg"))
    store.create_run(RunRecord("20261130-193720-eeee", T0 + 240, RUNNING, None, "src/main.sg",
                               os.getpid(), HOST, time.time()))
    halted = "20261130-193620-dddd"
    store.record_step(halted, step("Main", 1, "tool", "Counter.echo", "read_only", DONE, "hello"))
    store.record_step(halted, step("Main", 2, "tool", "Counter.charge", "destructive", STARTED))
    store.record_step(halted, step("Main/Worker#1", 1, "io", "now_ms", "read_only", DONE, 1796000000123))
    store.record_step(halted, step("Main/Worker#1", 2, "tool", "Fs.read", "read_only", FAILED,
                                   {"kind": "Tool", "message": "no such file: a.txt"}))
    store.record_step(halted, step("Main/Worker#1", 3, "tool", "Shell.run", "destructive", STARTED))
    store.record_step(halted, step("Main/Worker#1", 4, "state", "count.set", "idempotent", DONE, "x" * 200))
    store.close()
    return project


def test_list_shows_runs_newest_first_and_a_killed_run_as_interrupted(seeded: Path) -> None:
    code, out, err = sage(seeded, "runs", "list")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "20261130-193720-eeee  2026-11-30 19:37:20  running      -  src/main.sg",
        "20261130-193620-dddd  2026-11-30 19:36:20  halted       3  src/other.sg",
        "20261130-193520-cccc  2026-11-30 19:35:20  interrupted  -  src/main.sg",
        "20261130-193420-bbbb  2026-11-30 19:34:20  failed       1  src/main.sg",
        "20261130-193320-aaaa  2026-11-30 19:33:20  completed    0  src/main.sg",
    ]


def test_list_json_is_one_array(seeded: Path) -> None:
    code, out, _ = sage(seeded, "runs", "list", "--format", "json")
    runs = json.loads(out)
    assert code == 0 and out.count("\n") == 1
    assert [r["status"] for r in runs] == ["running", "halted", "interrupted", "failed", "completed"]
    assert runs[1] == {"id": "20261130-193620-dddd", "started_at": "2026-11-30T19:36:20Z", "status": "halted",
                       "exit_code": 3, "entry": "src/other.sg", "queue": "default", "version": None,
                       "host": None, "recoveries": 0,
                       "usage": {"turns": 0, "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0,
                                 "cost": None, "unknown_turns": 0}}


def test_a_project_without_runs(project: Path) -> None:
    assert sage(project, "runs", "list") == (0, "no durable runs yet\n", "")
    assert sage(project, "runs", "list", "--format", "json") == (0, "[]\n", "")
    assert sage(project, "runs", "show", "last") == (1, "", "error: no durable run in this project yet\n")
    assert not (project / ".sage").exists()   # looking does not create the store


def test_show_prints_each_path_and_its_steps(seeded: Path) -> None:
    code, out, err = sage(seeded, "runs", "show", "20261130-193620-dddd")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "20261130-193620-dddd  2026-11-30 19:36:20  halted  3  src/other.sg",
        "Main",
        '  1 tool Counter.echo read_only done "hello"',
        "  2 tool Counter.charge destructive started",
        "Main/Worker#1",
        "  1 io now_ms read_only done 1796000000123",
        '  2 tool Fs.read read_only failed {"kind": "Tool", "message": "no such file: a.txt"}',
        "  3 tool Shell.run destructive started",
        '  4 state count.set idempotent done "' + "x" * 78 + "…",
    ]
    assert len(out.splitlines()[-1]) == len("  4 state count.set idempotent done ") + 80


def test_show_last_and_json(seeded: Path) -> None:
    code, out, _ = sage(seeded, "runs", "show", "last")
    assert code == 0 and out.startswith("20261130-193720-eeee ")
    assert "(no journaled steps)" in out
    code, out, _ = sage(seeded, "runs", "show", "20261130-193620-dddd", "--format", "json")
    steps = json.loads(out)
    assert code == 0 and len(steps) == 6
    assert steps[0] == {"path": "Main", "step": 1, "kind": "tool", "target": "Counter.echo", "args_hash": "ab" * 32,
                        "class": "read_only", "status": "done", "outcome": "hello"}
    assert steps[5]["outcome"] == "x" * 200   # JSON is never cut


def test_show_unknown_run(seeded: Path) -> None:
    code, out, err = sage(seeded, "runs", "show", "20991231-000000-ffff")
    assert (code, out) == (1, "")
    assert err == "error: no run 20991231-000000-ffff in this project\n"


def test_resolve_ok_failed_and_not_run(seeded: Path) -> None:
    halted = "20261130-193620-dddd"
    code, out, err = sage(seeded, "runs", "resolve", halted, "Main:2", "--ok", '{"receipt": 7}')
    assert (code, err) == (0, "")
    assert out == f"recorded Main:2 of run {halted} as done; continue with `sage run --resume {halted}`\n"
    code, _, err = sage(seeded, "runs", "resolve", "last", "Main/Worker#1:3", "--failed", "card declined")
    assert (code, err) == (1, "error: run 20261130-193720-eeee is running, not halted: only the step a halted "
                              "run stopped at can be resolved\n")
    assert sage(seeded, "runs", "resolve", halted, "Main/Worker#1:3", "--failed", "card declined")[0] == 0
    store = open_store(seeded)
    recorded = {(s.path, s.number): s for s in store.steps(halted)}
    store.close()
    assert (recorded["Main", 2].status, recorded["Main", 2].outcome) == (DONE, {"receipt": 7})
    assert (recorded["Main/Worker#1", 3].status, recorded["Main/Worker#1", 3].outcome) == (
        FAILED, {"message": "card declined"})
    assert recorded["Main", 2].args_hash == "ab" * 32 and recorded["Main", 2].target == "Counter.charge"


def test_resolve_not_run_deletes_the_record(seeded: Path) -> None:
    halted = "20261130-193620-dddd"
    code, out, _ = sage(seeded, "runs", "resolve", halted, "Main:2", "--not-run")
    assert code == 0 and "as not run: the next resume performs it" in out
    store = open_store(seeded)
    assert ("Main", 2) not in {(s.path, s.number) for s in store.steps(halted)}
    store.close()


@pytest.mark.parametrize("key, message", [
    ("Main:1", "error: step Main:1 of run 20261130-193620-dddd is already done: only a step whose outcome is "
               "unknown (started) can be resolved\n"),
    ("Main:9", "error: run 20261130-193620-dddd has no step Main:9 (`sage runs show 20261130-193620-dddd` lists "
               "its steps)\n"),
])
def test_resolve_refuses_a_step_that_is_not_the_unknown_one(seeded: Path, key: str, message: str) -> None:
    assert sage(seeded, "runs", "resolve", "20261130-193620-dddd", key, "--ok", "1") == (1, "", message)


@pytest.mark.parametrize("args", [
    ["Main", "--ok", "1"], ["Main:0", "--ok", "1"], ["Main:x", "--not-run"], ["Main:2", "--ok", "{bad"],
    ["Main:2"], ["Main:2", "--ok", "1", "--not-run"],
])
def test_resolve_usage_errors(seeded: Path, args: list[str]) -> None:
    code, out, err = sage(seeded, "runs", "resolve", "20261130-193620-dddd", *args)
    assert (code, out) == (2, "") and "usage: sage runs resolve" in err


def test_prune_keeps_the_newest_ended_runs_and_every_unfinished_one(seeded: Path) -> None:
    assert sage(seeded, "runs", "prune", "--keep", "1") == (0, "pruned 1 run\n", "")
    _, out, _ = sage(seeded, "runs", "list")
    assert [line.split()[3] for line in out.splitlines()] == ["running", "halted", "interrupted", "failed"]
    assert sage(seeded, "runs", "prune", "--keep", "0") == (0, "pruned 1 run\n", "")
    assert sage(seeded, "runs", "prune") == (0, "pruned 0 runs\n", "")
    store = open_store(seeded)
    assert store.steps("20261130-193620-dddd") != []
    store.close()


def test_a_newer_journal_format_is_refused(project: Path) -> None:
    open_store(project).close()
    import sqlite3
    db = sqlite3.connect(project / ".sage" / "state.db")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    db.commit()
    db.close()
    assert sage(project, "runs", "list") == (
        1, "", "error: journal format 99 is newer than this sagepy supports (2)\n")


def test_runs_needs_persistence(tmp_path: Path) -> None:
    (tmp_path / "grove.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    for args in (["list"], ["show", "last"], ["resolve", "last", "Main:1", "--not-run"], ["prune"]):
        assert sage(tmp_path, "runs", *args) == (
            1, "", "error: durable runs need a [persistence] table in grove.toml\n")


def test_runs_help(project: Path) -> None:
    code, out, _ = sage(project, "runs", "-h")
    assert code == 0 and "list" in out and "resolve" in out and "prune" in out
    code, out, _ = sage(project, "runs", "resolve", "-h")
    assert code == 0 and "--not-run" in out and "PATH:N" in out


# ---------------------------------------------------------------- the staleness rule

def run_with_lease(pid: int | None, host: str | None, heartbeat: float | None) -> RunRecord:
    return RunRecord("20261130-193320-aaaa", T0, RUNNING, None, "src/main.sg", pid, host, heartbeat)


def test_a_lease_is_fresh_while_its_holder_lives_and_beats() -> None:
    now = time.time()
    assert not lease_is_stale(run_with_lease(os.getpid(), HOST, now - 1), now)
    assert not lease_is_stale(run_with_lease(dead_pid(), "elsewhere", now - 1), now)   # other hosts: the clock only
    assert lease_is_stale(run_with_lease(dead_pid(), HOST, now - 1), now)
    assert lease_is_stale(run_with_lease(os.getpid(), HOST, now - FRESH_SECONDS), now)
    assert lease_is_stale(run_with_lease(None, None, None), now)


def test_shown_status_only_changes_a_stale_running_run() -> None:
    now = time.time()
    assert shown_status(run_with_lease(dead_pid(), HOST, now), now) == "interrupted"
    assert shown_status(run_with_lease(os.getpid(), HOST, now), now) == "running"
    halted = run_with_lease(None, None, None)
    halted.status = HALTED
    assert shown_status(halted, now) == "halted"


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat", encoding="ascii") as stat:
            if stat.read().rpartition(")")[2].split()[0] == "Z":
                break
        time.sleep(0.05)
    try:
        assert not process_alive(child.pid)
    finally:
        child.wait()
    assert process_alive(os.getpid())


# ---------------------------------------------------------------- through real runs

def test_a_crashed_run_through_list_show_resolve_failed_and_resume(tmp_path: Path) -> None:
    """A run crashed right after its first charge's intent is listed as interrupted, halts on resume, and,
    resolved as failed, resumes to the error the call would have raised."""
    from durable_harness import make_project, read_ledger, sage_env, wait_for_servers_to_end
    project = make_project(tmp_path, "classes")
    env = sage_env(project, tmp_path / "cache")

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=project, env=dict(env, **extra),
                              capture_output=True, text=True, timeout=120)

    crashed = run("run", SAGE_CRASH_AFTER_WRITE="3")   # 1 echo, 2 put, 3 the charge's intent
    assert crashed.returncode == 77 and crashed.stdout == "hello\nstored colour\n", crashed.stderr
    assert wait_for_servers_to_end(project) == []
    run_id = crashed.stderr.split("run id: ")[1].split()[0]
    listed = run("runs", "list")
    assert listed.stdout.split()[:1] + listed.stdout.split()[3:5] == [run_id, "interrupted", "-"]
    halted = run("run", "--resume", "last")
    assert halted.returncode == 3 and f"sage runs resolve {run_id} Main:3 " in halted.stderr
    shown = run("runs", "show", run_id)
    assert shown.stdout.splitlines()[1:] == ["Main", '  1 tool Counter.echo read_only done "hello"',
                                             '  2 tool Counter.put idempotent done "stored colour"',
                                             "  3 tool Counter.charge destructive started"]
    assert run("runs", "resolve", run_id, "Main:2", "--not-run").returncode == 1   # only the halted step
    assert run("runs", "resolve", run_id, "Main:3", "--failed", "card declined").returncode == 0
    resumed = run("run", "--resume", run_id)
    assert resumed.returncode == 1 and "card declined" in resumed.stderr, resumed.stderr
    assert resumed.stdout == ""   # replayed steps print nothing again
    assert read_ledger(project) == []   # the charge never reached the server
    assert run("runs", "list").stdout.split()[3:5] == ["failed", "1"]
