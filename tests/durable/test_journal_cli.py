"""`sage run` of durable runs (SPEC §14): activation, run ids, `--resume RUN_ID|last`, `--no-journal`, the
lease, and what an ended, halted or interrupted run records. Every program runs as a real `sage run`."""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_ID = re.compile(r"^run id: (\d{8}-\d{6}-[0-9a-f]{4})$", re.M)


def project(root: Path, source: str, persistence: bool = True) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text('[project]\nname = "durable"\n' + ("\n[persistence]\n" if persistence else ""),
                                     encoding="utf-8")
    (root / "src" / "main.sg").write_text(textwrap.dedent(source), encoding="utf-8")
    return root


def sage(*args: str, cwd: Path, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def run_row(root: Path, run_id: str) -> tuple:
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        return db.execute("SELECT status, exit_code, lease_token FROM runs WHERE id = ?", (run_id,)).fetchone()


HELLO = """
agent Main {
    on start {
        print("hello");
        yield(7);
    }
}
run Main;
"""


def test_a_project_with_persistence_runs_durably_and_names_the_run(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO)
    r = sage("run", cwd=root)
    assert (r.returncode, r.stdout) == (7, "hello\n")
    match = RUN_ID.search(r.stderr)
    assert match is not None and r.stderr == match.group(0) + "\n"
    assert run_row(root, match.group(1)) == ("completed", 7, None)


def test_no_journal_runs_without_a_run_id(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO)
    r = sage("run", "--no-journal", cwd=root)
    assert (r.returncode, r.stdout, r.stderr) == (7, "hello\n", "")
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_without_persistence_there_is_no_run_and_resume_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO, persistence=False)
    r = sage("run", cwd=root)
    assert (r.returncode, r.stderr) == (7, "")
    r = sage("run", "--resume", "last", cwd=root)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "error: durable runs need a [persistence] table in grove.toml\n"


def test_resume_and_no_journal_together_are_a_usage_error(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO)
    r = sage("run", "--resume", "last", "--no-journal", cwd=root)
    assert r.returncode == 2 and "not allowed with argument" in r.stderr


def test_resuming_an_ended_run_runs_nothing(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO)
    run_id = RUN_ID.search(sage("run", cwd=root).stderr).group(1)
    for name in (run_id, "last"):
        r = sage("run", "--resume", name, cwd=root)
        assert (r.returncode, r.stdout, r.stderr) == (7, "", f"run {run_id} already ended with exit code 7\n")


def test_a_failed_run_ends_failed_and_stays_ended(tmp_path: Path) -> None:
    root = project(tmp_path, """
        agent Main {
            use Fs;
            on start {
                let text = try Fs.read("missing.txt");
                print(text);
            }
        }
        run Main;
    """)
    r = sage("run", cwd=root)
    assert r.returncode == 1 and "unhandled error in agent Main#0" in r.stderr
    run_id = RUN_ID.search(r.stderr).group(1)
    assert run_row(root, run_id) == ("failed", 1, None)
    r = sage("run", "--resume", run_id, cwd=root)
    assert (r.returncode, r.stderr) == (1, f"run {run_id} already ended with exit code 1\n")


def test_unknown_run_ids(tmp_path: Path) -> None:
    root = project(tmp_path, HELLO)
    r = sage("run", "--resume", "last", cwd=root)
    assert (r.returncode, r.stderr) == (1, "error: no durable run in this project yet\n")
    r = sage("run", "--resume", "20260101-000000-abcd", cwd=root)
    assert (r.returncode, r.stderr) == (1, "error: no run 20260101-000000-abcd in this project\n")


SLOW = """
agent Main {
    on start {
        print("before");
        let started = now_ms();   // committed: "before" is not printed again on resume
        sleep_ms(60000);
        print("after");
    }
}
run Main;
"""


def _start_slow(root: Path) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "sagepy", "run"], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = RUN_ID.search(line)
    assert match is not None, line
    assert proc.stdout.readline() == "before\n"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:   # the step after the print is committed
        with sqlite3.connect(root / ".sage" / "state.db") as db:
            if db.execute("SELECT count(*) FROM steps WHERE run_id = ?", (match.group(1),)).fetchone()[0]:
                break
        time.sleep(0.02)
    return proc, match.group(1)


def test_a_run_being_executed_is_not_resumed_twice(tmp_path: Path) -> None:
    root = project(tmp_path, SLOW)
    proc, run_id = _start_slow(root)
    try:
        r = sage("run", "--resume", "last", cwd=root)
        import socket
        assert (r.returncode, r.stdout) == (1, "")
        assert r.stderr == f"error: run {run_id} is being executed by process {proc.pid} on {socket.gethostname()}\n"
    finally:
        proc.kill()
        proc.wait()


def test_sigterm_leaves_the_run_resumable_and_a_dead_owner_is_taken_over(tmp_path: Path) -> None:
    root = project(tmp_path, SLOW.replace("60000", "300"))
    proc, run_id = _start_slow(root)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 143
    proc.stdout.close()
    proc.stderr.close()
    status, code, lease = run_row(root, run_id)
    assert (status, code, lease) == ("running", None, None)
    r = sage("run", "--resume", run_id, cwd=root)
    assert (r.returncode, r.stdout, r.stderr) == (0, "after\n", f"resuming run {run_id}\n")
    assert run_row(root, run_id) == ("completed", 0, None)


def test_a_killed_run_is_taken_over_at_once_on_the_same_host(tmp_path: Path) -> None:
    root = project(tmp_path, SLOW.replace("60000", "300"))
    proc, run_id = _start_slow(root)
    proc.kill()   # SIGKILL: the lease is still in the record, with a fresh heartbeat, but its process is gone
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        assert db.execute("SELECT lease_pid FROM runs WHERE id = ?", (run_id,)).fetchone() == (proc.pid,)
    assert run_row(root, run_id)[2] is not None   # its token: the lease is held
    started = time.monotonic()
    r = sage("run", "--resume", "last", cwd=root)
    assert (r.returncode, r.stdout, r.stderr) == (0, "after\n", f"resuming run {run_id}\n")
    assert time.monotonic() - started < 60
