"""Durable runs through the engine (SPEC §14, §20) on a real SQLite store: a run's id in its outcome, a pause
for a person as an outcome, the run resumed by id once a person answered, an ended run refused."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sagepy
from sagepy.deepstack import call_on_deep_stack

REPO = Path(__file__).resolve().parent.parent.parent

GROVE = """\
[project]
name = "engined"

[persistence]

[approvals]
Fs = ["write"]
calls = "all"
prompt = "never"
"""

MAIN = """\
agent Main {
    use Fs

    on start {
        let who = args();
        print("started with {len(who)}");
        let written = try Fs.write("out.txt", "hello");
        print("wrote {written}");
        yield(7);
    }
}

run Main;
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "engined"
    (root / "src").mkdir(parents=True)
    (root / "grove.toml").write_text(GROVE)
    (root / "src" / "main.sg").write_text(MAIN)
    return root


def caller_thread(run):
    """A run called from a plain thread starts its entry agent on a thread of its own; from a large-stack one
    (a served call's), the entry agent runs on the caller's thread: both behave the same."""
    return run


def large_stack(run):
    return lambda *args, **kwargs: call_on_deep_stack(lambda: run(*args, **kwargs), "caller")


@pytest.mark.parametrize("called", [caller_thread, large_stack], ids=["plain-caller", "large-stack-caller"])
def test_a_durable_run_pauses_resumes_by_id_and_then_refuses_to_run_again(tmp_path: Path, monkeypatch,
                                                                          called) -> None:
    root = project(tmp_path)
    monkeypatch.chdir(root)
    program = sagepy.compile(root)
    run = called(program.run)
    out: list[str] = []
    err: list[str] = []
    first = run(args=["a"], host=sagepy.Host(out=out.append, err=err.append))
    assert (first.status, first.exit_code) == ("paused", 5)
    assert first.run_id and any(line == f"run id: {first.run_id}" for line in err)
    assert out == ["started with 1"]
    paused = [line for line in err if line.startswith("paused: Fs.write")]
    assert paused, err
    where = paused[0].split(f"sage runs approve {first.run_id} ")[1].split("'")[0]

    answered = subprocess.run([sys.executable, "-m", "sagepy", "runs", "approve", first.run_id, where],
                              cwd=root, capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert answered.returncode == 0, answered.stderr

    out.clear()
    err.clear()
    second = run(host=sagepy.Host(out=out.append, err=err.append), run_id=first.run_id, resume=True)
    assert (second.status, second.exit_code, second.value, second.run_id) == ("completed", 7, 7, first.run_id)
    assert out == ["wrote ()"] and (root / "out.txt").read_text() == "hello"
    assert f"resuming run {first.run_id}" in err

    err.clear()
    third = run(host=sagepy.Host(out=out.append, err=err.append), run_id=first.run_id, resume=True)
    assert (third.status, third.exit_code) == ("completed", 7)
    assert err == [f"run {first.run_id} already ended with exit code 7"]


def test_a_durable_runs_trace_is_found_by_its_id(tmp_path: Path, monkeypatch) -> None:
    """The console's timeline finds a traced run's events at .sage/traces/<run id>.ndjson."""
    root = project(tmp_path)
    (root / "grove.toml").write_text(GROVE.split("[approvals]")[0])
    monkeypatch.chdir(root)
    outcome = sagepy.compile(root).run(args=["a"], host=sagepy.Host(out=lambda _: None, err=lambda _: None,
                                                                     trace_file=str(tmp_path / "t.ndjson")))
    assert outcome.status == "completed"
    found = root / ".sage" / "traces" / f"{outcome.run_id}.ndjson"
    assert found.read_text() == (tmp_path / "t.ndjson").read_text() and '"run.end"' in found.read_text()
