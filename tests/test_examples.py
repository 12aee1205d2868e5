"""Every example runs and prints what its `// out:` comments say.

Each example states its expected stdout as `// out: TEXT` lines (one per line of output, in order) and its
exit code as `// exit: N` (default 0). Single-file examples are `examples/*.sg`; a project example is a
directory with a grove.toml, run through the directory, whose comments sit in its entry file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# Project examples that start the Node MCP servers of tests/mcp/node (installed on first use, tests/conftest.py).
NODE_EXAMPLES = {"repo_report"}


def _examples() -> list[Path]:
    files = sorted(EXAMPLES.glob("*.sg"))
    # a project without an entry file (examples/evals holds evals only, tested in tests/evals) is not run
    projects = sorted(p.parent for p in EXAMPLES.glob("*/grove.toml") if _entry_file(p.parent).exists())
    return files + projects


def _entry_file(example: Path) -> Path:
    if example.is_file():
        return example
    config = tomllib.loads((example / "grove.toml").read_text(encoding="utf-8"))
    return example / config.get("project", {}).get("entry", "src/main.sg")


def _expectations(source: str) -> tuple[str, int]:
    out_lines = []
    exit_code = 0
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("// out:"):
            out_lines.append(text[len("// out:"):].removeprefix(" "))
        elif text.startswith("// exit:"):
            exit_code = int(text[len("// exit:"):])
    stdout = "".join(line + "\n" for line in out_lines)
    return stdout, exit_code


def test_examples_exist() -> None:
    names = {p.name for p in _examples()}
    assert {"hello.sg", "parallel_agents.sg", "records_enums.sg", "errors.sg", "modules"} <= names


@pytest.mark.parametrize("example", _examples(), ids=lambda p: p.name)
def test_example(example: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if example.name in NODE_EXAMPLES:
        request.getfixturevalue("node_servers")
    expected_stdout, expected_exit = _expectations(_entry_file(example).read_text(encoding="utf-8"))
    env = dict(os.environ, SAGE_CACHE_DIR=str(tmp_path / "cache"))
    if example.is_dir():
        # a project may keep state (.sage/) and write files: run a fresh copy in its own directory
        copy = tmp_path / example.name
        shutil.copytree(example, copy, ignore=shutil.ignore_patterns(".sage", "__pycache__"))
        command, cwd = [sys.executable, "-m", "sagepy", "run", "."], copy
    else:
        command, cwd = [sys.executable, "-m", "sagepy", "run", str(example.relative_to(REPO))], REPO
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    detail = f"stderr:\n{result.stderr}"
    assert result.stdout == expected_stdout, detail
    assert result.returncode == expected_exit, detail


@pytest.mark.parametrize("example", [p for p in _examples() if p.is_dir() and list(p.rglob("*_test.sg"))],
                         ids=lambda p: p.name)
def test_example_tests_pass(example: Path, tmp_path: Path) -> None:
    """Project examples ship tests; they pass with mocks only: no server, no network, no API key."""
    copy = tmp_path / example.name
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns(".sage", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env["SAGE_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run([sys.executable, "-m", "sagepy", "test"], cwd=copy, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test result: ok." in result.stdout
    assert not (copy / ".sage" / "logs").exists()   # no MCP server was started


@pytest.mark.parametrize("example", [p for p in _examples() if p.is_dir() and p.name not in NODE_EXAMPLES],
                         ids=lambda p: p.name)
def test_project_example_writes_only_inside_its_folder(example: Path, tmp_path: Path) -> None:
    """Run from elsewhere (`sage run path/to/example`), an example leaves the current directory untouched."""
    copy = tmp_path / example.name
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns(".sage", "__pycache__"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, SAGE_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", str(copy)], cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == _expectations(_entry_file(copy).read_text(encoding="utf-8"))[1], result.stderr
    assert list(elsewhere.iterdir()) == []
