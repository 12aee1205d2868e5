"""A stdio server's answer holding a lone surrogate escape is read as Python's JSON reads it (the string keeps
the surrogate, docs/durable.md "Strings that are not valid Unicode") and reaches its call at once, instead of
being dropped and leaving the call to wait out its timeout; an argument holding one is sent as its escape."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).resolve().parent / "servers" / "lone_surrogate.py"

PROGRAM = """
agent Main {
    on start {
        let config = '{"transport": "stdio", "command": CMD, "args": [SRV], "timeout_ms": 600000}';
        let h = try mcp_connect(config);
        let text = try mcp_call(h, "smile", '{"a": "x\\\\ud800y"}');
        print(json_stringify(text));
        yield(0);
    }
}
run Main;
"""


def test_an_answer_with_a_lone_surrogate_escape_is_read_at_once(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "grove.toml").write_text('[project]\nname = "surrogates"\n', encoding="utf-8")
    program = PROGRAM.replace("CMD", json.dumps(sys.executable)).replace("SRV", json.dumps(str(SERVER)))
    (tmp_path / "src" / "main.sg").write_text(program, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(NO_COLOR="1", PYTHONPATH=str(REPO), SAGE_CACHE_DIR=str(tmp_path / "cache"))
    # without the fix the call waits for its 600 s timeout: the subprocess deadline ends the test first
    result = subprocess.run([sys.executable, "-m", "sagepy", "run"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '"x\\ud800y smile \\ud83d here"\n'
