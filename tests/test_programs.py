"""Black-box corpus: run every program of tests/programs with `sagepy run` and compare its stdout, stderr and
exit code with the expectations written in its own comments (format: tests/programs/README.md)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PROGRAMS_DIR = Path(__file__).parent / "programs"
REPO_ROOT = PROGRAMS_DIR.parent.parent
MIN_PROGRAMS = 150
TIMEOUT_S = 60

_DIRECTIVE = re.compile(r"// (out|err|exit|stdin|diag):(.*)$")


@dataclass
class Expectation:
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    exit: int = 0
    stdin: list[str] = field(default_factory=list)
    count: int = 0


def parse_expectations(source: str) -> Expectation:
    exp = Expectation()
    for line in source.split("\n"):
        m = _DIRECTIVE.search(line)
        if m is None:
            continue
        key, text = m.group(1), m.group(2)
        if text.startswith(" "):
            text = text[1:]
        exp.count += 1
        if key == "out":
            exp.out.append(text.rstrip())
        elif key == "err":
            exp.err.append(text.rstrip())
        elif key == "exit":
            exp.exit = int(text.strip())
        elif key == "stdin":
            exp.stdin.append(text)
    return exp


def discover() -> list[Path]:
    """Entry files: `*.sg` directly in PROGRAMS_DIR, and `<dir>/main.sg` for multi-file programs."""
    singles = sorted(PROGRAMS_DIR.glob("*.sg"))
    projects = sorted(p / "main.sg" for p in PROGRAMS_DIR.iterdir() if (p / "main.sg").is_file())
    return singles + projects


def program_id(entry: Path) -> str:
    return entry.name if entry.parent == PROGRAMS_DIR else entry.parent.name + "/"


def output_lines(text: str) -> list[str]:
    # split on "\n" only: str.splitlines would also break at characters such as U+2028 that a program may print
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


def run_program(entry: Path, stdin_text: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    for name in ("SAGE_TRACE", "SAGE_TRACE_FILE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "sagepy", "run", entry.name],
        cwd=entry.parent, env=env, input=stdin_text.encode("utf-8"),
        capture_output=True, timeout=TIMEOUT_S,
    )


def mismatches(exp: Expectation, stdout: list[str], stderr: str, code: int) -> list[str]:
    problems = []
    if stdout != exp.out:
        problems.append("stdout differs")
    if code != exp.exit:
        problems.append(f"exit code {code}, expected {exp.exit}")
    pos = 0
    for text in exp.err:
        found = stderr.find(text, pos)
        if found < 0:
            problems.append(f"stderr lacks (in order): {text!r}")
            break
        pos = found + len(text)
    return problems


def report(entry: Path, problems: list[str], exp: Expectation, stdout: list[str], stderr: str,
           code: int) -> str:
    return "\n".join([
        f"{program_id(entry)}: " + "; ".join(problems),
        "--- expected stdout ---", *exp.out,
        "--- actual stdout ---", *stdout,
        "--- expected in stderr ---", *exp.err,
        "--- actual stderr ---", stderr.rstrip(),
        f"--- exit code: expected {exp.exit}, actual {code} ---",
    ])


PROGRAMS = discover()


def test_corpus_is_complete() -> None:
    assert len(PROGRAMS) >= MIN_PROGRAMS, f"only {len(PROGRAMS)} programs in {PROGRAMS_DIR}"


@pytest.mark.parametrize("entry", PROGRAMS, ids=program_id)
def test_program(entry: Path) -> None:
    exp = parse_expectations(entry.read_text(encoding="utf-8"))
    assert exp.count > 0, f"{program_id(entry)} has no expectation directive"
    stdin_text = "".join(line + "\n" for line in exp.stdin)
    try:
        result = run_program(entry, stdin_text)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{program_id(entry)}: timed out after {TIMEOUT_S} s")
    stdout = output_lines(result.stdout.decode("utf-8", errors="replace"))
    stderr = result.stderr.decode("utf-8", errors="replace")
    problems = mismatches(exp, stdout, stderr, result.returncode)
    if problems:
        pytest.fail(report(entry, problems, exp, stdout, stderr, result.returncode), pytrace=False)
