"""Runs that outgrow one process and one machine (SPEC §14.1): two checkouts of one project on one PostgreSQL
database, an owner deposed while it was stopped (fencing, on both backends), and a database server that
restarts under a run. The witness is the counting MCP server's ledger: every destructive call once.

The two "machines" are two directories with the same `[project] name` and URL, each started from its own
working directory, as two checkouts on two hosts would be; they share the counting server's ledger, as two
machines would share the service they charge.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from durable_harness import (HALT_EXIT_CODE, LEDGER_VAR, ledger_path, make_project, open_project_store, read_ledger,
                             resolve_halt, run_id_in, run_sage, sage_command, sage_env, wait_for_servers_to_end)
from sagepy.store.base import CRASH_AFTER_VAR

CHARGES = 6
EXPECTED_OUTPUT = [f"charge {i} receipt 1" for i in range(1, CHARGES + 1)]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "ast-cache"


def ledger_accounts(project: Path) -> list[str]:
    return sorted(entry["args"]["account"] for entry in read_ledger(project))


def runs_list(project: Path, env: dict[str, str]) -> list[dict]:
    listed = subprocess.run([*sage_command(), "runs", "list", "--format", "json"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def journal_of(project: Path, run_id: str) -> list:
    store = open_project_store(project)
    try:
        return store.steps(run_id)
    finally:
        store.close()


def wait_for_charges(project: Path, count: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(read_ledger(project)) < count:
        assert proc.poll() is None, f"the run ended early: {proc.communicate()}"
        assert time.monotonic() < deadline, f"fewer than {count} charges after {timeout} s"
        time.sleep(0.05)


def test_a_run_killed_on_one_machine_is_finished_on_the_other(tmp_path: Path, pg_url: str, cache_dir: Path) -> None:
    one = make_project(tmp_path / "machine-one", "paced", "checkout", pg_url, project_name="shared")
    two = make_project(tmp_path / "machine-two", "paced", "checkout", pg_url, project_name="shared")
    env_one = sage_env(one, cache_dir)
    env_two = dict(sage_env(two, cache_dir), **{LEDGER_VAR: str(ledger_path(one))})   # one service, charged by both
    crashed = run_sage(one, ["run"], dict(env_one, **{CRASH_AFTER_VAR: "5"}), tmp_path / "one.log")
    assert crashed.crashed, crashed.stderr
    run_id = run_id_in(crashed.stderr)
    assert wait_for_servers_to_end(one) == []
    resumed = run_sage(two, ["run", "--resume", run_id], env_two, tmp_path / "two.log")
    assert resumed.code == 0, resumed.stderr
    assert f"resuming run {run_id}" in resumed.stderr
    # what the first machine printed, then the rest (a line printed after its last commit comes again)
    assert crashed.output == EXPECTED_OUTPUT[:len(crashed.output)]
    assert resumed.output == EXPECTED_OUTPUT[CHARGES - len(resumed.output):]
    assert len(crashed.output) + len(resumed.output) in (CHARGES, CHARGES + 1)
    assert ledger_accounts(one) == sorted(f"acct-{i}" for i in range(1, CHARGES + 1))   # each charge once
    other = run_sage(two, ["run"], env_two, tmp_path / "two-again.log")
    assert other.code == 0, other.stderr
    for checkout, env in ((one, env_one), (two, env_two)):
        listed = runs_list(checkout, env)
        assert [(r["id"], r["status"]) for r in listed] == [(run_id_in(other.stderr), "completed"),
                                                            (run_id, "completed")]
    assert wait_for_servers_to_end(two) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_owner_stopped_past_its_lease_writes_nothing_after_a_takeover(backend: str, tmp_path: Path,
                                                                         cache_dir: Path,
                                                                         request: pytest.FixtureRequest) -> None:
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "paced", state_url=state_url)
    env = sage_env(project, cache_dir)
    owner = subprocess.Popen([*sage_command(), "run"], cwd=project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for_charges(project, 2, owner)
        owner.send_signal(signal.SIGSTOP)
        time.sleep(11)   # longer than the lease (10 s): the owner's heartbeat has gone stale
        run_id = open_project_store(project).newest_run().id
        for _ in range(3):   # stopped between a charge and its record: the taker halts, resolved from the ledger
            taker = subprocess.run([*sage_command(), "run", "--resume", run_id], cwd=project, env=env,
                                   capture_output=True, text=True, timeout=300)
            if taker.returncode != HALT_EXIT_CODE:
                break
            resolve_halt(project, env, run_id, taker.stderr)
        assert taker.returncode == 0, taker.stderr
        journal = journal_of(project, run_id)
        owner.send_signal(signal.SIGCONT)
        out, err = owner.communicate(timeout=120)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.communicate()
    host = socket.gethostname()
    assert owner.returncode == 1, err
    assert err.strip().splitlines()[-1].startswith(f"error: run {run_id} was taken over by process ")
    assert err.strip().endswith(f" on {host}")
    assert journal_of(project, run_id) == journal   # the deposed owner wrote nothing
    assert ledger_accounts(project) == sorted(f"acct-{i}" for i in range(1, CHARGES + 1))
    assert open_project_store(project).get_run(run_id).status == "completed"
    assert wait_for_servers_to_end(project) == []


def test_a_run_waits_for_its_restarting_database_and_carries_on(tmp_path: Path, pg_cluster, pg_url: str,
                                                               cache_dir: Path) -> None:
    project = make_project(tmp_path, "paced", state_url=pg_url)
    env = sage_env(project, cache_dir)
    run = subprocess.Popen([*sage_command(), "run"], cwd=project, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_for_charges(project, 2, run)
        pg_cluster.restart(down_seconds=2.0)
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    assert out.splitlines() == EXPECTED_OUTPUT
    assert ledger_accounts(project) == sorted(f"acct-{i}" for i in range(1, CHARGES + 1))
    assert wait_for_servers_to_end(project) == []
    assert "PgSecret" not in err
