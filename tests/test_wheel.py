"""The wheel is self-contained: it carries the grammar and the prelude, and its `sage` script works from any
directory once installed into a fresh virtual environment.

The venv sees the site-packages of the interpreter running the tests (a .pth file lists them), so sagepy's
dependencies, and pip, are already there and the install needs no network (`--no-deps`). That works whether
the tests run in a virtual environment or not (`--system-site-packages` would reach the base interpreter,
not the virtual environment that holds the dependencies). The venv's own site-packages comes first on
sys.path, and the borrowed directories' own .pth files are not run, so the wheel's copy of sagepy is the one
that runs, even when the checkout is also installed in editable mode.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from sagepy import __version__

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Build from a copy: setuptools builds in the source tree, and a stale build/ directory there could put
    # files into the wheel that the checkout no longer has.
    source = tmp_path_factory.mktemp("source") / "sagepy"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".sage", ".venv"))
    outdir = tmp_path_factory.mktemp("dist")
    _run_ok([sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(source)], timeout=600)
    (built,) = outdir.glob("sagepy-*.whl")
    return built


@pytest.fixture(scope="module")
def venv_bin(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    # No pip of its own: the borrowed site-packages provide pip too. pip installs the wheel into the venv even
    # when the checkout is installed outside it, and leaves that installation alone.
    venv.create(root, with_pip=False)
    bin_dir = root / ("Scripts" if os.name == "nt" else "bin")
    purelib = subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(purelib, "borrowed_site_packages.pth").write_text("".join(f"{path}\n" for path in _site_dirs()))
    _run_ok([str(bin_dir / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
            timeout=300)
    return bin_dir


def _site_dirs() -> list[str]:
    """The site-packages directories of the running interpreter, in its sys.path order (user site included)."""
    sites = set(site.getsitepackages()) | {site.getusersitepackages()}
    return [path for path in sys.path if path in sites]


def _run_ok(command: list[str], timeout: float) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"


def _clean_env(cache: Path) -> dict[str, str]:
    # PYTHONPATH would let the checkout shadow the installed wheel.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SAGE_CACHE_DIR"] = str(cache)
    return env


def test_wheel_contains_grammar_and_stdlib(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "sagepy/_grammar/sage.lark" in names
    stdlib = sorted(p.relative_to(REPO / "stdlib").as_posix() for p in (REPO / "stdlib").rglob("*.sg"))
    assert stdlib, "the checkout has no stdlib/*.sg files"
    assert sorted(n.removeprefix("sagepy/_stdlib/") for n in names
                  if n.startswith("sagepy/_stdlib/") and n.endswith(".sg")) == stdlib
    assert "sagepy/resources.py" in names
    assert "sagepy/cli/main.py" in names
    console = REPO / "sagepy" / "console"
    assets = sorted(p.relative_to(REPO).as_posix() for d in ("templates", "static") for p in (console / d).iterdir())
    assert assets and sorted(n for n in names if n.startswith(("sagepy/console/templates/",
                                                                "sagepy/console/static/"))) == assets


def test_installed_package_finds_its_data(venv_bin: Path, tmp_path: Path) -> None:
    code = ("import sagepy, sagepy.resources as r; "
            "print(sagepy.__file__); print(r.grammar_file()); print(r.stdlib_dir())")
    result = subprocess.run([str(venv_bin / "python"), "-c", code], cwd=tmp_path, env=_clean_env(tmp_path),
                            capture_output=True, text=True, check=True, timeout=60)
    package, grammar, stdlib = (Path(line) for line in result.stdout.splitlines())
    site = package.parent
    assert venv_bin.parent in package.parents, "the venv imported sagepy from outside itself"
    assert grammar == site / "_grammar" / "sage.lark" and grammar.is_file()
    assert stdlib == site / "_stdlib" and any(stdlib.rglob("*.sg"))


def test_installed_sage_runs_hello(venv_bin: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(REPO / "examples" / "hello.sg", work / "hello.sg")
    result = subprocess.run([str(venv_bin / "sage"), "run", "hello.sg"], cwd=work,
                            env=_clean_env(tmp_path / "cache"), capture_output=True, text=True, timeout=120)
    assert (result.stdout, result.returncode) == ("Hello from Sage!\n", 0), result.stderr


def test_installed_sage_version(venv_bin: Path, tmp_path: Path) -> None:
    result = subprocess.run([str(venv_bin / "sage"), "version"], cwd=tmp_path,
                            env=_clean_env(tmp_path / "cache"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    python = ".".join(str(n) for n in sys.version_info[:3])
    assert result.stdout == f"sagepy {__version__} (Python {python})\n"
