"""A thread-mode worker (SPEC §14.2, `--isolation thread`, the default): its runs are threads of its own
process, and one run's trouble is that run's alone — a run spinning in a loop with no step lets the others
finish and is cancelled like any run; a graceful stop releases every lease it holds (the runs become
`interrupted`) and another worker resumes them."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from worker_harness import make_project, runs_json, sage, sage_env, start_worker, submit, wait_until_gone


def statuses(project: Path, env: dict[str, str]) -> dict[str, str]:
    return {run["id"]: run["status"] for run in runs_json(project, env)}


def wait_status(project: Path, env: dict[str, str], run_id: str, wanted: set[str], timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while (status := statuses(project, env)[run_id]) not in wanted:
        assert time.monotonic() < deadline, f"run {run_id} is still {status}"
        time.sleep(0.1)
    return status


def test_a_spinning_run_lets_the_others_finish_and_is_cancelled(tmp_path: Path) -> None:
    project = make_project(tmp_path, "spin")
    env = sage_env(project, tmp_path / "cache")
    spinning = submit(project, env, "spin")
    others = [submit(project, env, str(i)) for i in range(3)]
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50")
    try:
        for run_id in others:
            worker.wait_for(f"run {run_id}: completed (exit 0)")
        assert statuses(project, env)[spinning] == "running"
        assert sage(project, env, "runs", "logs", others[0]).stdout == 'done ["0"]\n'
        cancelled = sage(project, env, "runs", "cancel", spinning)
        assert cancelled.returncode == 0, cancelled.stderr
        worker.wait_for(f"run {spinning}: cancelled")
        assert worker.process.poll() is None
    finally:
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(60) == 143
    assert not wait_until_gone(project)


def test_a_stopped_worker_releases_its_runs_and_another_resumes_them(tmp_path: Path) -> None:
    project = make_project(tmp_path, "spin")
    env = sage_env(project, tmp_path / "cache")
    spinning = [submit(project, env, "spin") for _ in range(3)]
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50")
    for run_id in spinning:
        worker.wait_for(f"run {run_id}: started")
    worker.process.send_signal(signal.SIGINT)
    assert worker.process.wait(60) == 130
    assert {statuses(project, env)[r] for r in spinning} == {"interrupted"}
    second = start_worker(project, env, tmp_path / "w2.log", "--poll-ms", "50")
    try:
        for run_id in spinning:
            second.wait_for(f"run {run_id}: resumed")
    finally:
        second.process.send_signal(signal.SIGTERM)
        second.process.send_signal(signal.SIGTERM)   # a second signal: the process ends at once with its runs
        assert second.process.wait(60) == 143
    assert not wait_until_gone(project)


def test_a_run_halted_in_a_thread_worker_and_resolved_is_finished_by_that_worker(tmp_path: Path) -> None:
    # The run's lease names the worker's own process, which never exits: once the run's thread has ended, the
    # worker says so, or the run sent back to the queue would wait for that process forever.
    from worker_harness import resolve_halted
    project = make_project(tmp_path, "load")
    env = sage_env(project, tmp_path / "cache")
    run_id = submit(project, env, "solo")
    # a first worker crashes right after the intent of the run's first charge; resumed by a second, the run
    # halts on that charge, whose outcome is unknown
    crashed = sage(project, dict(env, SAGE_CRASH_AFTER_WRITE="1"), "worker", "--drain", "--poll-ms", "50")
    assert crashed.returncode != 0 and f"run {run_id}: started" in crashed.stderr, crashed.stderr
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50")
    try:
        worker.wait_for(f"run {run_id}: halted")
        resolve_halted(project, env, run_id)
        worker.wait_for(f"run {run_id}: completed (exit 0)")
        worker.process.send_signal(signal.SIGINT)
        assert worker.process.wait(30) in (0, 130)
    finally:
        worker.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_line_is_stored_while_the_run_waits_not_only_at_its_next_step(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # A thread-mode run keeps its printed lines with its pending outcomes: the group's timer commits them
    # within 50 ms, so `sage runs logs` shows a line while the run sleeps, long before its next step.
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    project = make_project(tmp_path, "slow")
    env = sage_env(project, tmp_path / "cache", state_url=url)
    run_id = submit(project, env, "0", "600000")
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50")
    try:
        deadline = time.monotonic() + 120
        while (logs := sage(project, env, "runs", "logs", run_id)).stdout != "step 0\n":
            assert time.monotonic() < deadline, f"no line stored: {logs.stdout!r} {logs.stderr!r}"
            time.sleep(0.1)
        assert logs.stderr == "err 0\n" and statuses(project, env)[run_id] == "running"
        assert sage(project, env, "runs", "cancel", run_id).returncode == 0
        worker.wait_for(f"run {run_id}: cancelled")
    finally:
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(60) == 143
    assert not wait_until_gone(project)
