"""Helpers of the `sage tools` / `--verify-tools` tests: the servers they talk to and two ways to run `sage`.

The servers are the project's own test server (`tests/mcp/servers/suite.py`, 23 tools served five per page)
and the third-party servers: mcp-server-time and mcp-server-git from the test extra, server-everything and
server-filesystem installed with npm into `tests/mcp/node/node_modules` on first use (tests/conftest.py). Tests that only need
output run `sage` in-process (`run_sage`), which saves the interpreter start; the round trips that must look
exactly like a user's run use a subprocess (`sage_process`).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SUITE = str(REPO / "tests" / "mcp" / "servers" / "suite.py")
NODE_BIN = REPO / "tests" / "mcp" / "node" / "node_modules" / ".bin"


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def suite_table(name: str, extra: str = "") -> str:
    return f"[tools.{name}]\ncommand = {toml_string(sys.executable)}\nargs = [{toml_string(SUITE)}]\n{extra}"


def python_tool(command: str) -> str:
    """A console script installed next to this interpreter (or on PATH); skips the test when missing."""
    beside = Path(sys.executable).parent / command
    path = str(beside) if beside.exists() else shutil.which(command)
    if path is None:
        pytest.fail(f"{command} is not installed (it comes with the test extra: pip install -e '.[test]')")
    return path


def node_tool(name: str) -> str:
    path = NODE_BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed (the node_servers fixture installs tests/mcp/node)")
    return str(path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@contextlib.contextmanager
def in_directory(path: Path) -> Iterator[None]:
    """The current directory for module-scoped fixtures, which cannot use monkeypatch."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_sage(capsys, monkeypatch, cwd: Path, *args: str) -> tuple[int, str, str]:
    """`sage ARGS` in this process, in directory cwd: (exit code, stdout, stderr)."""
    from sagepy.cli.main import main
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NO_COLOR", "1")
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def sage_process(cwd: Path, *args: str, timeout: int = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
