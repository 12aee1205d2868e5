"""`sage new NAME` (SPEC §10.2): the skeleton it writes, the project runs, and bad names are refused."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sagepy.cli.new import create_project

REPO = Path(__file__).resolve().parent.parent
BAD_NAMES = ["9lives", "has space", "dotted.name", "a/b", "../up", "naïve", "-", ""]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def sage(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The working directory is a temporary one: make the checkout importable whether or not it is installed,
    # and keep the AST cache out of the user's cache directory and out of `cwd`.
    env = dict(os.environ, SAGE_CACHE_DIR=str(cwd.parent / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_new_creates_the_skeleton(workdir: Path) -> None:
    result = sage("new", "demo", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "created demo\nnext: cd demo && sage run   (then sage test, sage check)\n"

    root = workdir / "demo"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [".gitignore", "README.md", "grove.toml", "src/main.sg", "src/main_test.sg"]

    config = tomllib.loads((root / "grove.toml").read_text(encoding="utf-8"))
    assert config == {"project": {"name": "demo", "version": "0.1.0", "entry": "src/main.sg"}}
    assert "/.sage/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()

    main = (root / "src" / "main.sg").read_text(encoding="utf-8")
    assert "fn greeting(" in main and "agent Main" in main and main.rstrip().endswith("run Main;")
    assert "greeting(" in (root / "src" / "main_test.sg").read_text(encoding="utf-8")


def test_new_project_runs(workdir: Path) -> None:
    assert sage("new", "demo", cwd=workdir).returncode == 0
    result = sage("run", "demo", cwd=workdir)
    assert (result.stdout, result.returncode) == ("Hello, world!\n", 0), result.stderr


def test_new_project_runs_from_its_root(workdir: Path) -> None:
    assert sage("new", "demo", cwd=workdir).returncode == 0
    result = sage("run", cwd=workdir / "demo")
    assert (result.stdout, result.returncode) == ("Hello, world!\n", 0), result.stderr


def test_new_project_checks_clean(workdir: Path) -> None:
    # `sage check` also checks src/main_test.sg, so this proves the generated test file is valid Sage.
    assert sage("new", "demo", cwd=workdir).returncode == 0
    result = sage("check", "demo", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "check passed: 2 files, 0 warnings\n"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_new_refuses_bad_names(workdir: Path, name: str) -> None:
    result = sage("new", name, cwd=workdir)
    assert result.returncode == 1
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stdout == ""
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("make", [Path.mkdir, Path.touch], ids=["directory", "file"])
def test_new_refuses_existing_path(workdir: Path, make) -> None:
    make(workdir / "taken")
    result = sage("new", "taken", cwd=workdir)
    assert result.returncode == 1
    assert result.stderr.startswith("error: "), result.stderr
    assert [p.name for p in workdir.iterdir()] == ["taken"]


def test_create_project_accepts_dash_and_underscore(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ["_private", "my-app", "App_2"]:
        assert create_project(name, workdir) == 0
        assert (workdir / name / "grove.toml").is_file()
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("created")] == [
        "created _private", "created my-app", "created App_2"]


def test_create_project_leaves_an_existing_directory_alone(workdir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "kept").mkdir()
    (workdir / "kept" / "notes.txt").write_text("mine", encoding="utf-8")
    assert create_project("kept", workdir) == 1
    assert [p.name for p in (workdir / "kept").iterdir()] == ["notes.txt"]
    assert capsys.readouterr().err == "error: 'kept' already exists\n"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_create_project_rejects_bad_names(workdir: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert create_project(name, workdir) == 1
    assert capsys.readouterr().err.startswith("error: invalid project name")
    assert list(workdir.iterdir()) == []


def test_new_dot_fills_the_empty_current_directory(workdir: Path) -> None:
    target = workdir / "my_app"
    target.mkdir()
    result = sage("new", ".", cwd=target)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "created my_app\nnext: sage run   (then sage test, sage check)\n"
    config = tomllib.loads((target / "grove.toml").read_text(encoding="utf-8"))
    assert config["project"]["name"] == "my_app"
    assert sage("run", cwd=target).stdout == "Hello, world!\n"


def test_new_dot_refuses_a_directory_that_is_not_empty(workdir: Path) -> None:
    (workdir / "notes.txt").write_text("mine", encoding="utf-8")
    result = sage("new", ".", cwd=workdir)
    assert result.returncode == 1
    assert result.stderr.startswith("error: the current directory is not empty")
    assert [p.name for p in workdir.iterdir()] == ["notes.txt"]
