"""`sage runs submit|wait|cancel|logs` and `sage worker` on SQLite (SPEC §14.2): every message, status and exit
code, with real worker processes and real runs."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from worker_harness import (leased_by, make_project, runs_json, sage, sage_env, start_worker, submit,
                            wait_until_gone)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path, "slow")


@pytest.fixture
def env(project: Path, tmp_path: Path) -> dict[str, str]:
    return sage_env(project, tmp_path / "cache")


def status_of(project: Path, env: dict[str, str], run_id: str) -> dict:
    return next(r for r in runs_json(project, env) if r["id"] == run_id)


def drain(project: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess:
    return sage(project, env, "worker", "--drain", "--poll-ms", "50", *flags)


def test_submit_queues_a_run_with_its_arguments_and_version(project: Path, env: dict[str, str]) -> None:
    done = sage(project, env, "runs", "submit", "--", "4", "10")
    run_id = done.stdout.strip()
    assert done.returncode == 0 and done.stdout == run_id + "\n" and done.stderr == ""
    run = status_of(project, env, run_id)
    assert run["status"] == "queued" and run["started_at"] is None and run["exit_code"] is None
    assert run["queue"] == "default" and run["host"] is None and run["recoveries"] == 0
    assert len(run["version"]) == 12 and int(run["version"], 16) >= 0
    listed = sage(project, env, "runs", "list").stdout
    assert f"{run_id}  -                    queued" in listed
    worked = drain(project, env)
    assert worked.returncode == 0, worked.stderr
    host_pid = worked.stderr.splitlines()[0].split()[1]
    assert worked.stderr.splitlines() == [
        f"worker {host_pid} started (queue default, version {run['version']}, concurrency 256)",
        f"run {run_id}: started", f"run {run_id}: completed (exit 4)", "worker: no runnable runs left"]
    run = status_of(project, env, run_id)
    assert (run["status"], run["exit_code"], run["host"]) == ("completed", 4, host_pid.split(":")[0])
    assert run["started_at"] is not None
    logs = sage(project, env, "runs", "logs", run_id)
    assert logs.returncode == 0
    assert logs.stdout == "".join(f"step {i}\n" for i in range(4))
    assert logs.stderr == "".join(f"err {i}\n" for i in range(4))
    waited = sage(project, env, "runs", "wait", run_id)
    assert (waited.returncode, waited.stderr) == (4, f"run {run_id} completed (exit 4)\n")


def test_the_version_is_the_hash_of_the_project_files(project: Path, env: dict[str, str]) -> None:
    import hashlib
    run_id = submit(project, env, "0", "1")
    files = sorted(["grove.toml", "src/main.sg", "src/hold.py"])
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + b"\0" + (project / rel).read_bytes() + b"\0")
    assert status_of(project, env, run_id)["version"] == digest.hexdigest()[:12]


def test_submit_refuses_a_program_with_errors(project: Path, env: dict[str, str]) -> None:
    (project / "src" / "main.sg").write_text("agent Main { on start { yield(nope); } }\nrun Main;\n")
    done = sage(project, env, "runs", "submit")
    assert done.returncode == 1 and done.stdout == "" and "error[E" in done.stderr
    assert runs_json(project, env) == []


def test_queue_commands_need_persistence(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    (bare / "src").mkdir(parents=True)
    (bare / "grove.toml").write_text('[project]\nname = "bare"\n')
    (bare / "src" / "main.sg").write_text("agent Main { on start { yield(0); } }\nrun Main;\n")
    env = sage_env(bare, tmp_path / "cache")
    for args in (["runs", "submit"], ["runs", "wait", "last"], ["runs", "cancel", "last"],
                 ["runs", "logs", "last"], ["worker", "--drain"]):
        done = sage(bare, env, *args)
        assert (done.returncode, done.stderr) == (1, "error: durable runs need a [persistence] table in "
                                                     "grove.toml\n"), args


def test_unknown_runs_and_usage_errors(project: Path, env: dict[str, str]) -> None:
    for command in ("wait", "cancel", "logs"):
        done = sage(project, env, "runs", command, "nope")
        assert (done.returncode, done.stderr) == (1, "error: no run nope in this project\n")
    for args in (["worker", "--concurrency", "0"], ["worker", "--poll-ms", "x"], ["runs", "wait", "last",
                 "--timeout-s", "-1"], ["run", "--resume", "last", "--", "a"]):
        done = sage(project, env, *args)
        assert done.returncode == 2 and "usage:" in done.stderr, args


def test_queues_keep_their_runs_apart(project: Path, env: dict[str, str]) -> None:
    other = submit(project, env, "0", "1", queue="other")
    mine = submit(project, env, "0", "1")
    worked = drain(project, env)
    assert f"run {mine}: started" in worked.stderr and other not in worked.stderr
    assert status_of(project, env, other)["status"] == "queued"
    worked = drain(project, env, "--queue", "other")
    assert f"run {other}: completed (exit 0)" in worked.stderr
    assert "(queue other," in worked.stderr


def test_a_worker_runs_only_its_program_version_unless_any_version(project: Path, env: dict[str, str]) -> None:
    old = submit(project, env, "2", "1")
    main = project / "src" / "main.sg"
    main.write_text(main.read_text() + "// changed\n")
    worked = drain(project, env)
    assert worked.returncode == 0 and old not in worked.stderr
    assert status_of(project, env, old)["status"] == "queued"
    worked = drain(project, env, "--any-version")
    assert f"run {old}: completed (exit 2)" in worked.stderr


def test_a_run_is_left_when_the_files_change_under_the_worker(project: Path, env: dict[str, str],
                                                              tmp_path: Path) -> None:
    first = submit(project, env, "0", "400")
    second = submit(project, env, "0", "1")
    worker = start_worker(project, env, tmp_path / "w.log", "--drain", "--poll-ms", "50", "--isolation", "process")
    try:
        change_under(project, env, first)
        assert worker.process.wait(120) == 0
    finally:
        worker.stop()
    version = status_of(project, env, second)["version"]
    lines = worker.lines()
    assert f"run {first}: completed (exit 0)" in lines
    assert f"run {second}: left for version {version}" in lines
    assert lines[-1] == "worker: no runnable runs left"
    assert status_of(project, env, second)["status"] == "queued"


def change_under(project: Path, env: dict[str, str], running: str) -> None:
    """Change the program once the run `running` has printed its first step."""
    deadline = time.monotonic() + 60
    while "step 0" not in sage(project, env, "runs", "logs", running).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    main = project / "src" / "main.sg"
    main.write_text(main.read_text() + "// changed\n")


def test_a_thread_mode_worker_whose_files_change_finishes_its_runs_and_takes_no_more(
        project: Path, env: dict[str, str], tmp_path: Path) -> None:
    first = submit(project, env, "0", "400")
    second = submit(project, env, "0", "1")
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50", "--concurrency", "1")
    try:
        change_under(project, env, first)
        assert worker.process.wait(120) == 0   # without --drain: it stops because the files changed
    finally:
        worker.stop()
    lines = worker.lines()
    assert lines[-2:] == [f"run {first}: completed (exit 0)", "worker: program files changed; restart the worker"]
    assert status_of(project, env, second)["status"] == "queued"


def test_cancel_a_queued_run(project: Path, env: dict[str, str]) -> None:
    run_id = submit(project, env, "0", "1")
    done = sage(project, env, "runs", "cancel", run_id)
    assert (done.returncode, done.stderr) == (0, f"run {run_id} cancelled\n")
    run = status_of(project, env, run_id)
    assert (run["status"], run["exit_code"]) == ("cancelled", 130)
    waited = sage(project, env, "runs", "wait", run_id)
    assert (waited.returncode, waited.stderr) == (130, f"run {run_id} cancelled (exit 130)\n")
    again = sage(project, env, "runs", "cancel", run_id)
    assert (again.returncode, again.stderr) == (1, f"error: run {run_id} already ended with exit code 130\n")
    resumed = sage(project, env, "run", "--resume", run_id)
    assert (resumed.returncode, resumed.stderr) == (130, f"run {run_id} was cancelled\n")
    assert f"run {run_id}" not in drain(project, env).stderr


def test_cancel_a_running_run_stops_it_before_its_next_step(project: Path, env: dict[str, str],
                                                            tmp_path: Path) -> None:
    run_id = submit(project, env, "0", "1500")
    worker = start_worker(project, env, tmp_path / "w.log", "--drain", "--poll-ms", "50")
    try:
        worker.wait_for(f"run {run_id}: started")
        deadline = time.monotonic() + 60
        while "step 0" not in sage(project, env, "runs", "logs", run_id).stdout:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        done = sage(project, env, "runs", "cancel", run_id)
        assert (done.returncode, done.stderr) == (0, f"run {run_id} cancelled\n")
        waited = sage(project, env, "runs", "wait", run_id, "--timeout-s", "60")
        assert (waited.returncode, waited.stderr) == (130, f"run {run_id} cancelled (exit 130)\n")
        assert worker.process.wait(60) == 0
    finally:
        worker.stop()
    assert f"run {run_id}: cancelled" in worker.lines()
    assert "step 3" not in sage(project, env, "runs", "logs", run_id).stdout


def test_wait_times_out_with_124(project: Path, env: dict[str, str]) -> None:
    run_id = submit(project, env, "0", "1")
    done = sage(project, env, "runs", "wait", run_id, "--timeout-s", "0.3")
    assert (done.returncode, done.stderr) == (124, f"error: run {run_id} is still queued after 0.3 s\n")


def test_logs_follow_prints_until_the_run_ends(project: Path, env: dict[str, str], tmp_path: Path) -> None:
    run_id = submit(project, env, "0", "200")
    follower = subprocess.Popen([sys.executable, "-m", "sagepy", "runs", "logs", run_id, "--follow"], cwd=project,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worked = drain(project, env)
    assert f"run {run_id}: completed (exit 0)" in worked.stderr
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0
    assert out == "".join(f"step {i}\n" for i in range(4)) and err == "".join(f"err {i}\n" for i in range(4))


def test_sigterm_stops_a_worker_and_another_resumes_its_run(project: Path, env: dict[str, str],
                                                            tmp_path: Path) -> None:
    run_id = submit(project, env, "7", "700")
    worker = start_worker(project, env, tmp_path / "w.log", "--poll-ms", "50")
    try:
        worker.wait_for(f"run {run_id}: started")
        deadline = time.monotonic() + 60
        while "step 0" not in sage(project, env, "runs", "logs", run_id).stdout:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(15) == 143
    finally:
        worker.stop()
    run = status_of(project, env, run_id)
    assert run["status"] == "interrupted" and run["recoveries"] == 0
    worked = drain(project, env)
    assert f"run {run_id}: resumed" in worked.stderr and f"run {run_id}: completed (exit 7)" in worked.stderr
    run = status_of(project, env, run_id)
    assert run["recoveries"] == 0
    # replayed lines are not stored again; the one printed after the last committed step (the sleep the stop
    # interrupted is performed again) is printed, and stored, once more
    lines = sage(project, env, "runs", "logs", run_id).stdout.splitlines()
    assert [line for i, line in enumerate(lines) if i == 0 or lines[i - 1] != line] == [f"step {i}" for i in range(4)]
    assert len(lines) <= 5


def test_a_killed_worker_is_recovered_until_max_recoveries(tmp_path: Path) -> None:
    project = make_project(tmp_path, "slow", max_recoveries=1)
    env = sage_env(project, tmp_path / "cache")
    run_id = submit(project, env, "0", "2000")
    for attempt, line in enumerate(("started", "resumed")):
        worker = start_worker(project, env, tmp_path / f"w{attempt}.log", "--poll-ms", "50")
        try:
            worker.wait_for(f"run {run_id}: {line}")
            leased_by(project, env, run_id, worker.process.pid)   # its run is under way, under its lease
        finally:
            worker.stop()   # SIGKILL: the run's process dies with it
        assert not wait_until_gone(project)
        assert status_of(project, env, run_id)["status"] == "interrupted"
    worked = drain(project, env)
    assert worked.returncode == 0
    assert f"run {run_id}: gave up after 1 recoveries" in worked.stderr.splitlines()
    run = status_of(project, env, run_id)
    assert (run["status"], run["exit_code"], run["recoveries"]) == ("failed", 1, 1)


def test_sage_run_resume_executes_a_queued_run_with_its_recorded_arguments(project: Path,
                                                                          env: dict[str, str]) -> None:
    run_id = submit(project, env, "3", "1")
    done = sage(project, env, "run", "--resume", run_id)
    assert done.returncode == 3 and done.stdout == "".join(f"step {i}\n" for i in range(4))
    assert done.stderr.splitlines()[0] == f"resuming run {run_id}"
    assert status_of(project, env, run_id)["status"] == "completed"


def test_list_json_fields_of_a_run_started_by_sage_run(project: Path, env: dict[str, str]) -> None:
    done = sage(project, env, "run", "--", "5", "1")
    assert done.returncode == 5
    [run] = runs_json(project, env)
    assert set(run) == {"id", "started_at", "status", "exit_code", "entry", "queue", "version", "host",
                        "recoveries"}
    assert (run["status"], run["exit_code"], run["queue"], run["recoveries"]) == ("completed", 5, "default", 0)
    assert json.dumps(run["started_at"]).endswith('Z"')
