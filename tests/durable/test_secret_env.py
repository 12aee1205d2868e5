"""What a durable run reads with `env`/`env_or` is journaled so that a resume replays it, but the value of a
variable whose name looks secret (KEY, TOKEN, SECRET, PASSWORD, any case) or that grove.toml names in a `*_env`
key is never shown: `sage runs show` (text and JSON) shows `***` (docs/durable.md, "Secrets"). A custom
`[persistence] path` file is created 0600. On SQLite and on a real PostgreSQL server (tests/pgcluster.py)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.store.base import CRASH_AFTER_VAR

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
agent Main {
    on start {
        let key = env_or("My_Api_Key", "none");
        let cred = env_or("LLM_CRED", "none");
        let token = env("DEPLOY_TOKEN");
        let plain = env_or("GREETING", "none");
        let line = try read_line();
        print("{key} {cred} {token} {plain} {line}");
        yield(0);
    }
}
run Main;
"""

SECRETS = {"My_Api_Key": "sk-live-KeyValue1", "LLM_CRED": "CredValue2", "DEPLOY_TOKEN": "TokenValue3"}


def _project(tmp_path: Path, state_url: str | None) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    persistence = ('backend = "sqlite"\npath = "data/journal.db"' if state_url is None
                   else f'backend = "postgres"\nurl = {json.dumps(state_url)}')
    (root / "grove.toml").write_text(f'[project]\nname = "secret-{tmp_path.name}"\n\n[llm]\napi_key_env = "LLM_CRED"\n\n'
                                     f'[persistence]\n{persistence}\n', encoding="utf-8")
    return root


def _sage(root: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_") and k not in SECRETS}
    environ.update(NO_COLOR="1", PYTHONPATH=str(REPO), SAGE_CACHE_DIR=str(root.parent / "cache"), **env)
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=environ, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_secret_variables_are_replayed_but_never_shown(backend: str, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    state_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    root = _project(tmp_path, state_url)
    # the first attempt dies once the read_line outcome (and the grouped env reads before it) are committed
    first = _sage(root, "run", stdin="typed\n", GREETING="hello", **{CRASH_AFTER_VAR: "5"}, **SECRETS)
    assert first.returncode == 77, first.stderr
    run_id = first.stderr.split("run id: ", 1)[1].split()[0]
    resumed = _sage(root, "run", "--resume", run_id)   # none of the variables is set any more
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == 'sk-live-KeyValue1 CredValue2 Some("TokenValue3") hello typed\n'

    text = _sage(root, "runs", "show", run_id)
    shown = _sage(root, "runs", "show", run_id, "--format", "json")
    assert text.returncode == 0 and shown.returncode == 0, text.stderr + shown.stderr
    for value in SECRETS.values():
        assert value not in text.stdout + shown.stdout
    assert [line.split()[-1] for line in text.stdout.splitlines()[2:]] == ["***", "***", "***", '"hello"',
                                                                            '"typed"']
    assert [s["outcome"] for s in json.loads(shown.stdout)] == ["***", "***", "***", "hello", "typed"]
    if backend == "sqlite":
        assert stat.S_IMODE((root / "data" / "journal.db").stat().st_mode) == 0o600
