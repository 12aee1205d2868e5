"""What the approvals tests share: projects written from strings, `sage` as a subprocess (with the caller's
SAGE_* settings left out), and `sage runs …` in-process."""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PAUSED = re.compile(r"^paused: .*\((\S+) step (\d+)\)", re.M)
RUN_ID = re.compile(r"^run id: (\S+)$", re.M)
CACHE = tempfile.mkdtemp(prefix="sagepy-approvals-ast-")   # one AST cache for the session's subprocesses


def project(root: Path, toml: str, files: dict[str, str]) -> Path:
    """grove.toml (`[project] entry = "main.sg"` then `toml`) and the given files, dedented."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n' + textwrap.dedent(toml), encoding="utf-8")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def env(**extra: str) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_CACHE_DIR=CACHE, **extra)
    return full


def sage(root: Path, *args: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=env(**extra), input=stdin or "",
                          capture_output=True, text=True, timeout=120)


def runs(root: Path, *args: str) -> tuple[int, str, str]:
    """`sage runs ARGS` in-process from the project directory: (exit code, stdout, stderr)."""
    from sagepy.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--no-color", "runs", *args])
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def run_id(stderr: str) -> str:
    found = RUN_ID.search(stderr)
    assert found is not None, stderr
    return found.group(1)
