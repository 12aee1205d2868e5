"""Every trace event carries the agent's `"path"` (SPEC §4.11): `null`, with `agent`, only on `run.*` events."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
agent Helper {
    on start {
        let s = try Fs.read("notes.txt");
        yield(str_len(s));
    }
}
agent Main {
    use Fs;
    on start {
        let h = summon Helper {};
        span "thinking" {
            trace("about to ask");
            let a = try divine("a question");
        }
        let n = try await h;
        print("{n}");
    }
}
run Main;
"""


def test_every_event_names_its_agent_path(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(textwrap.dedent(PROGRAM).replace("agent Helper {", "agent Helper {\n    use Fs;"),
                                      encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OTEL_"))}
    env.update(PYTHONPATH=str(REPO), SAGE_MODEL="echo", SAGE_NO_CACHE="1", NO_COLOR="1")
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", "--trace-file", "t.ndjson", "main.sg"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in (tmp_path / "t.ndjson").read_text().splitlines()]
    kinds = {e["kind"] for e in events}
    assert {"run.start", "agent.spawn", "tool.call", "tool.result", "llm.request", "llm.response", "span.start",
            "span.end", "user", "agent.result", "agent.stop", "run.end"} <= kinds
    for event in events:
        assert "path" in event and "agent" in event, event
        if event["kind"].startswith("run."):
            assert (event["agent"], event["path"]) == (None, None)
        else:
            assert event["path"] in ("Main", "Main/Helper#1"), event
    paths = {(e["kind"], e["path"]) for e in events}
    assert ("tool.call", "Main/Helper#1") in paths and ("llm.request", "Main") in paths


def test_a_program_that_fails_checking_leaves_no_trace_file(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text('agent Main { on start { let x: Int = "a"; } }\nrun Main;\n', encoding="utf-8")
    (tmp_path / "kept.ndjson").write_text("", encoding="utf-8")   # a file that was there stays
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OTEL_"))}
    env.update(PYTHONPATH=str(REPO), SAGE_NO_CACHE="1", NO_COLOR="1")
    for name in ("t.ndjson", "kept.ndjson"):
        result = subprocess.run([sys.executable, "-m", "sagepy", "run", "--trace-file", name, "main.sg"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and "error[E018]" in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.ndjson", "main.sg"]
    (tmp_path / "main.sg").write_text('agent Main { on start { print("hi"); } }\nrun Main;\n', encoding="utf-8")
    unwritable = subprocess.run([sys.executable, "-m", "sagepy", "run", "--trace-file", "no/such/dir/t.ndjson",
                                 "main.sg"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert (unwritable.returncode, unwritable.stderr) == (
        1, "error: cannot open trace file no/such/dir/t.ndjson: No such file or directory\n")
