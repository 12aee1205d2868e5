"""Helpers shared by the benchmark scripts: how to invoke sage, and timing of one subprocess run."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def sage_command() -> list[str]:
    """The installed `sage` script beside this interpreter if there is one, else `python -m sagepy`."""
    script = Path(sys.executable).parent / "sage"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "sagepy"]


def bench_env(cache_dir: Path) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE would make every run recompile sagepy's modules from source, which a normal
    # installation (pip writes bytecode) never does; the bench measures sagepy, not a missing .pyc cache.
    dropped = ("SAGE_NO_CACHE", "SAGE_TRACE", "SAGE_TRACE_FILE", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["SAGE_CACHE_DIR"] = str(cache_dir)
    # `python -m sagepy` must find the checkout when sagepy is not installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def timed_run(command: list[str], env: dict[str, str], cwd: Path = REPO) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time of one run in seconds, and its result."""
    start = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, result


def require_success(label: str, result: subprocess.CompletedProcess[str]) -> None:
    """Stop the benchmark when a run fails: its timing would measure an error path."""
    if result.returncode != 0:
        sys.exit(f"{label} failed with exit code {result.returncode}:\n{result.stderr}")


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000
