"""Queued runs on PostgreSQL (SPEC §14.1, §14.2): two checkouts of one project share the database, so a run
submitted in one is executed by a worker of the other and listed in both; NOTIFY wakes a waiting worker."""
from __future__ import annotations

import shutil
import signal
from pathlib import Path

from worker_harness import make_project, resolve_halted, runs_json, sage, sage_env, start_worker, submit


def test_a_run_submitted_on_one_machine_is_executed_on_another(tmp_path: Path, pg_url: str) -> None:
    first = make_project(tmp_path / "a", "slow", name="shared")
    second = tmp_path / "b" / "shared"
    shutil.copytree(first, second)
    env_a = sage_env(first, tmp_path / "cache-a", state_url=pg_url)
    env_b = sage_env(second, tmp_path / "cache-b", state_url=pg_url)
    run_id = submit(first, env_a, "6", "10")
    # polling once a minute: only the NOTIFY of the submission can wake this worker in time
    worker = start_worker(second, env_b, tmp_path / "w.log", "--poll-ms", "60000")
    try:
        worker.wait_for("started (queue default")
        later = submit(first, env_a, "9", "10")
        worker.wait_for(f"run {later}: completed (exit 9)", timeout=40)
        worker.process.send_signal(signal.SIGINT)
        assert worker.process.wait(15) == 130
    finally:
        worker.stop()
    assert f"run {run_id}: completed (exit 6)" in worker.lines()
    for project, env in ((first, env_a), (second, env_b)):
        listed = {r["id"]: r for r in runs_json(project, env)}
        assert listed[run_id]["status"] == "completed" and listed[later]["exit_code"] == 9
    logs = sage(first, env_a, "runs", "logs", run_id)
    assert logs.stdout == "".join(f"step {i}\n" for i in range(4))
    assert pg_url.split("@")[0].split(":")[-1] not in worker.log.read_text()   # no password anywhere


def test_cancel_wait_and_a_halted_worker_run_requeued_by_resolve(tmp_path: Path, pg_url: str) -> None:
    project = make_project(tmp_path, "load")
    env = sage_env(project, tmp_path / "cache", state_url=pg_url)
    queued = submit(project, env, "gone")
    done = sage(project, env, "runs", "cancel", queued)
    assert (done.returncode, done.stderr) == (0, f"run {queued} cancelled\n")
    waited = sage(project, env, "runs", "wait", queued)
    assert (waited.returncode, waited.stderr) == (130, f"run {queued} cancelled (exit 130)\n")
    run_id = submit(project, env, "solo")
    # the run's process crashes right after the intent of its first charge; its worker recovers it, and the
    # resumed run halts on that charge, whose outcome is unknown
    crashing = dict(env, SAGE_CRASH_AFTER_WRITE="1")
    # (a run of its own process: a thread-mode worker would crash with it)
    worked = sage(project, crashing, "worker", "--drain", "--poll-ms", "50", "--isolation", "process")
    assert worked.stderr.splitlines()[1:] == [f"run {run_id}: started", f"run {run_id}: resumed",
                                              f"run {run_id}: halted", "worker: no runnable runs left"]
    assert "halted: the outcome of Counter.charge (Main step 1) is unknown" in \
        sage(project, env, "runs", "logs", run_id).stderr
    resolve_halted(project, env, run_id)
    assert next(r for r in runs_json(project, env) if r["id"] == run_id)["status"] == "queued"
    worked = sage(project, env, "worker", "--drain", "--poll-ms", "50")
    assert f"run {run_id}: completed (exit 0)" in worked.stderr
    run = next(r for r in runs_json(project, env) if r["id"] == run_id)
    assert run["recoveries"] == 1
