"""Workers under load and faults (SPEC §14.2), on SQLite (several workers of one machine) and on PostgreSQL:
queued runs that each make destructive calls to the counting server, workers killed with SIGKILL at random
moments and restarted, halts resolved from the ledger as an operator would. Every run ends `completed`, every
charge fired exactly once, no increment of the shared @persistent total lost, no run executed by two
processes at once (the execution log of programs/hold.py), nothing left running.

The suite runs a small load; bench/workers_load.py runs the 200-run one.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from worker_harness import check_load, drive_load, make_project, read_field, sage_env, wait_until_gone

CHARGES = 3


@pytest.mark.parametrize("isolation", ["thread", "process"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_killed_workers_lose_nothing_and_fire_nothing_twice(backend: str, isolation: str, tmp_path: Path,
                                                            request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "load")
    env = sage_env(project, tmp_path / "cache", state_url=url)
    logs = tmp_path / "logs"
    logs.mkdir()
    load = drive_load(project, env, logs, runs=8, workers=3, killable=2, kills=2, rng=random.Random(23),
                      concurrency=2, isolation=isolation)
    report = check_load(project, env, load.names, CHARGES, read_field(project, env, "Main", "total"))
    assert load.kills == 2
    assert (report.runs, report.completed) == (8, 8)
    assert (report.double_fires, report.missing_charges, report.lost_increments) == (0, 0, 0)
    assert report.overlaps == 0 and report.executions >= 8
    assert not wait_until_gone(project)
