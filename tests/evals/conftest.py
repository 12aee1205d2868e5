"""Helpers of the eval and cassette tests: `sage` run as a subprocess on this checkout, the project's own
model API test servers (tests/llm) and MCP test server (tests/mcp/servers). The browser is the suite's
`browser` fixture (tests/browser.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "llm"))
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"


def sage_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", **extra)
    return env


def sage(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env or sage_env(),
                          capture_output=True, text=True, timeout=timeout)
