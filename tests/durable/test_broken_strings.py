"""Strings that are not valid Unicode in a durable run (docs/durable.md, "Strings that are not valid Unicode"): a
lone surrogate from a model's answer, from an environment variable or stdin holding bytes that are not UTF-8,
or from a JSON string, is journaled losslessly (as its `\\uXXXX` escape), traced, printed as U+FFFD; the run
ends and its end is recorded, a resume replays it, `sage runs show` shows it. On SQLite and on a real
PostgreSQL server (tests/pgcluster.py): PostgreSQL's text refuses both lone surrogates and NUL."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.store.base import CRASH_AFTER_VAR

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "llm"))
from strict_server import StrictChatServer  # noqa: E402  (tests/llm: the scripted model)

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
agent Main {
    on start {
        let answer = try divine("say something");
        let weird = env_or("WEIRD", "unset");
        let line = try read_line();
        let j: String = try json_decode("\\"x\\\\ud800y\\\\u0000z\\"");
        trace(j);
        try append_file("log.txt", "{answer}|{weird}|{line}|{j}\\n");
        print("{answer}|{weird}|{line}|{j}");
        yield(0);
    }
}
run Main;
"""

ANSWER = "smile \ud83d here"


def _project(tmp_path: Path, state_url: str | None) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    persistence = 'backend = "sqlite"' if state_url is None else f'backend = "postgres"\nurl = {json.dumps(state_url)}'
    (root / "grove.toml").write_text(f'[project]\nname = "broken-{tmp_path.name}"\n\n[persistence]\n{persistence}\n',
                                     encoding="utf-8")
    return root


def _sage(root: Path, args: list[str], env: dict, stdin: bytes = b"") -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environb.items() if not k.startswith(b"SAGE_")}
    environ.update({b"NO_COLOR": b"1", b"PYTHONPATH": str(REPO).encode(),
                    b"SAGE_CACHE_DIR": str(root.parent / "cache").encode()})
    environ.update({k.encode(): v if isinstance(v, bytes) else v.encode() for k, v in env.items()})
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=environ, input=stdin,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_lone_surrogates_are_journaled_replayed_and_shown(backend: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    root = _project(tmp_path, state_url)
    with StrictChatServer([ANSWER]) as model:
        llm = {"SAGE_LLM_URL": model.url, "SAGE_API_KEY": "sk-test", "SAGE_MODEL": "gpt-4o-mini"}
        # the first attempt dies right after the read_line outcome is committed (it is committed at once)
        first = _sage(root, ["run", "--trace-file", "t.ndjson"], {**llm, "WEIRD": b"a\xffb", CRASH_AFTER_VAR: "3"},
                      stdin=b"l\xfel\n")
        assert first.returncode == 77, first.stderr.decode()
        run_id = first.stderr.decode().split("run id: ", 1)[1].split()[0]
        # the resume replays the answer, the variable and the line: none of them is there any more
        resumed = _sage(root, ["run", "--resume", run_id, "--trace-file", "t.ndjson"], llm)
        assert len(model.requests) == 1 and model.errors == []
    assert resumed.returncode == 0, resumed.stderr.decode()
    shown_text = "smile \ufffd here|a\ufffdb|l\ufffdl|x\ufffdy\x00z"
    assert resumed.stdout.decode() == shown_text + "\n"
    assert (root / "log.txt").read_text(encoding="utf-8") == shown_text + "\n"

    listed = _sage(root, ["runs", "list", "--format", "json"], {})
    assert listed.returncode == 0, listed.stderr.decode()
    assert [(r["id"], r["status"], r["exit_code"]) for r in json.loads(listed.stdout)] == [(run_id, "completed", 0)]
    shown = _sage(root, ["runs", "show", run_id, "--format", "json"], {})
    assert shown.returncode == 0, shown.stderr.decode()
    outcomes = {s["target"]: s["outcome"] for s in json.loads(shown.stdout)}
    assert outcomes["divine"] == ANSWER
    assert outcomes["env_or"] == "a\udcffb" and outcomes["read_line"] == "l\udcfel"
    text = _sage(root, ["runs", "show", run_id], {})
    assert text.returncode == 0 and '"a\\udcffb"' in text.stdout.decode(), text.stderr.decode()

    events = [json.loads(line) for line in (root / "t.ndjson").read_text(encoding="utf-8").splitlines()]
    assert [e["message"] for e in events if e["kind"] == "user"] == ["x\ud800y\x00z"]
    assert [e["exit_code"] for e in events if e["kind"] == "run.end"] == [0]



WORKER_PROGRAM = """
agent Main {
    on start {
        let j: String = try json_decode("\\"x\\\\ud800y\\\\u0000z\\"");
        let a = args();
        print(j);
        print_err("{a}");
        yield(0);
    }
}
run Main;
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_workers_stored_output_and_arguments_take_broken_strings(backend: str, tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    root = _project(tmp_path, state_url)
    (root / "src" / "main.sg").write_text(WORKER_PROGRAM, encoding="utf-8")
    submitted = _sage(root, ["runs", "submit", "--", b"q\xffq".decode("utf-8", "surrogateescape")], {})
    assert submitted.returncode == 0, submitted.stderr.decode()
    run_id = submitted.stdout.decode().strip()
    worked = _sage(root, ["worker", "--drain", "--poll-ms", "50"], {})
    assert worked.returncode == 0 and f"run {run_id}: completed (exit 0)" in worked.stderr.decode(), \
        worked.stderr.decode()
    logs = _sage(root, ["runs", "logs", run_id], {})
    assert logs.returncode == 0, logs.stderr.decode()
    # as printed (U+FFFD for each lone surrogate), and NUL, which PostgreSQL's text cannot hold, as U+FFFD too
    assert logs.stdout.decode() == "x\ufffdy\ufffdz\n"
    assert logs.stderr.decode() == '["q\ufffdq"]\n'
