"""docs/embedding.md's examples run as written, from the repository's root, and print what the page says."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "embedding.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), SAGE_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_first_example_compiles_and_runs_the_triage_example(tmp_path: Path) -> None:
    result = run(python_blocks()[0], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "completed 0"


def test_the_threads_example_runs_one_program_eight_times_at_once(tmp_path: Path) -> None:
    block = next(b for b in python_blocks() if "threading" in b)
    result = run(block, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "8 runs completed\n"
