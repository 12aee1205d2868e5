"""Fencing under workers (SPEC §14.1, §14.2), on both backends: a worker's run process stopped with SIGSTOP for
longer than its lease, a second worker that takes the run over and finishes it, then the stopped process
continued with SIGCONT. The deposed process performs no further step and writes nothing — no journal record,
no field, no line of output, no charge — and ends; the ledger shows every destructive call once."""
from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from worker_harness import (leased_by, make_project, open_store, read_field, read_ledger, resolve_halted,
                            run_process, runs_json, sage, sage_env, start_worker, submit, wait_until_gone)
from sagepy.store.leases import FRESH_SECONDS, process_alive

CHARGES = 6


def snapshot(project: Path, env: dict[str, str], run_id: str) -> tuple:
    """Everything a process executing the run could write: its journal, its stored output, the field."""
    store = open_store(project, env)
    try:
        return store.steps(run_id), store.output(run_id), store.get_field("Main", "total")
    finally:
        store.close()


def stop_between_steps(project: Path, env: dict[str, str], run_id: str, owner: int, sqlite: bool) -> int:
    """SIGSTOP the run's process in a sleep after its second charge was recorded and printed, and not inside a
    transaction: an SQLite writer stopped while it holds the file's lock would stall every other process."""
    deadline = time.monotonic() + 120
    while len(snapshot(project, env, run_id)[1]) < 2:   # "charge 1: ..." is stored: it sleeps before charge 2
        assert time.monotonic() < deadline, "the run printed fewer than 2 lines"
        time.sleep(0.02)
    while True:
        os.kill(owner, signal.SIGSTOP)
        if not sqlite or not holds_write_lock(project / ".sage" / "state.db"):
            return owner
        os.kill(owner, signal.SIGCONT)   # caught committing its heartbeat: try again
        time.sleep(0.01)


def holds_write_lock(path: Path) -> bool:
    db = sqlite3.connect(path, timeout=0.2, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        db.close()


def take_over(project: Path, env: dict[str, str], run_id: str) -> tuple:
    """Once the stopped owner's lease is stale, a second worker resumes the run and finishes it (stopped between a
    charge and its record, the taker halts and the halt is resolved from the ledger); what the run wrote."""
    time.sleep(FRESH_SECONDS + 1)   # the stopped owner's heartbeat is now older than the lease
    for _ in range(3):
        second = sage(project, env, "worker", "--drain", "--poll-ms", "50", timeout=300)
        assert second.returncode == 0, second.stderr
        assert f"run {run_id}: resumed" in second.stderr
        status = next(r["status"] for r in runs_json(project, env) if r["id"] == run_id)
        if status != "halted":
            break
        resolve_halted(project, env, run_id)
    assert status == "completed", second.stderr
    return snapshot(project, env, run_id)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_worker_run_stopped_past_its_lease_writes_nothing_after_another_worker_takes_it(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "paced")
    env = sage_env(project, tmp_path / "cache", state_url=url)
    run_id = submit(project, env)
    first = start_worker(project, env, tmp_path / "first.log", "--poll-ms", "50", "--isolation", "process")
    stopped = None
    try:
        owner = run_process(project, env, run_id, first.process.pid)
        stopped = stop_between_steps(project, env, run_id, owner, sqlite=url is None)
        written = take_over(project, env, run_id)
        os.kill(owner, signal.SIGCONT)
        stopped = None
        deadline = time.monotonic() + 60
        while process_alive(owner):   # it stops on its own: its worker is still running
            assert time.monotonic() < deadline, "the deposed process did not stop"
            time.sleep(0.05)
        assert first.process.poll() is None
        assert snapshot(project, env, run_id) == written   # the deposed process wrote nothing
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        first.stop()
    accounts = sorted(entry["args"]["account"] for entry in read_ledger(project))
    assert accounts == [f"acct-{i}" for i in range(CHARGES)]   # every charge once
    assert read_field(project, env, "Main", "total") == CHARGES
    assert not wait_until_gone(project)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_thread_mode_worker_stopped_past_its_leases_writes_nothing_once_continued(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The whole worker is stopped (its runs are threads of it): another worker takes the run over and
    finishes it; continued, the first worker's run finds itself deposed and writes nothing more."""
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "paced")
    env = sage_env(project, tmp_path / "cache", state_url=url)
    run_id = submit(project, env)
    first = start_worker(project, env, tmp_path / "first.log", "--poll-ms", "50", "--isolation", "thread")
    stopped = None
    try:
        leased_by(project, env, run_id, first.process.pid)
        stopped = stop_between_steps(project, env, run_id, first.process.pid, sqlite=url is None)
        written = take_over(project, env, run_id)
        os.kill(stopped, signal.SIGCONT)
        stopped = None
        first.wait_for(f"run {run_id}: ")   # its execution of the run has ended
        assert first.process.poll() is None   # and the worker serves on
        assert snapshot(project, env, run_id) == written   # the deposed run wrote nothing
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        first.stop()
    accounts = sorted(entry["args"]["account"] for entry in read_ledger(project))
    assert accounts == [f"acct-{i}" for i in range(CHARGES)]   # every charge once
    assert read_field(project, env, "Main", "total") == CHARGES
    assert not wait_until_gone(project)
