"""Helpers of the eval and cassette tests: `sage` run as a subprocess on this checkout, the project's own
model API test servers (tests/llm) and MCP test server (tests/mcp/servers), and a real headless Chromium.

The browser is Playwright for Python on the system's Chromium (/usr/bin/chromium, installed with apt-get by
`chromium()` when missing, once, under a file lock); where none can be had, the test fails and says why.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "llm"))
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"
CHROMIUM = "/usr/bin/chromium"


def sage_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", **extra)
    return env


def sage(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env or sage_env(),
                          capture_output=True, text=True, timeout=timeout)


def chromium() -> str:
    """The system's Chromium, installed with apt-get when missing."""
    import fcntl
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    with open(os.path.join(tempfile.gettempdir(), "sagepy-chromium-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        apt = shutil.which("apt-get")
        if not os.path.exists(CHROMIUM) and apt is None:
            pytest.fail(f"no browser: {CHROMIUM} is missing and apt-get is not there to install it", pytrace=False)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
            if os.path.exists(CHROMIUM):
                break
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
            if done.returncode != 0:
                pytest.fail(f"no browser: `{' '.join(command)}` failed: {done.stderr[-800:]}", pytrace=False)
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no browser: {CHROMIUM} is still missing after apt-get", pytrace=False)
    return CHROMIUM
