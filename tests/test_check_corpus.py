"""Checker corpus: run `sage check --format json` on every program of tests/check and compare the diagnostics
with the `// diag: CODE LINE` comments written in the program itself (format: tests/check/README.md)."""
from __future__ import annotations

import json
import os
import re
import contextlib
import io
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

CHECK_DIR = Path(os.path.realpath(__file__)).parent / "check"
REPO_ROOT = CHECK_DIR.parent.parent
MIN_PROGRAMS = 100

# Every checker code of SPEC §13.4 that `sage check` can produce without live MCP servers. The
# --verify-tools codes (E080-E082, W083, E091, E092) and the planned ones (E074, E076, E078) are left out.
REQUIRED_CODES = (
    "E010 E011 E012 E013 E014 E015 E016 E017 E018 E019 E020 E021 E022 E023 E024 E026 E027 E028 E029 "
    "E030 E031 E032 E033 E034 E035 E036 E037 E038 E039 E040 E041 E042 E043 E044 E045 E046 E047 E048 "
    "E049 E050 E051 E052 E053 E055 E056 E057 E058 E060 E061 E062 E064 E065 E066 E070 E071 E072 E073 E075 "
    "E085 E086 E095 "
    "E090 E093 E096 E100 W006 W007 W008 W084"
).split()

# `// diag: CODE LINE` in Sage files, `# diag: CODE LINE` in grove.toml; several may share a line.
_SG_DIRECTIVE = re.compile(r"//\s*diag:\s*([EW]\d{3})\s+(\d+)")
_TOML_DIRECTIVE = re.compile(r"#\s*diag:\s*([EW]\d{3})\s+(\d+)")

def discover() -> list[Path]:
    """Programs: `*.sg` files directly in CHECK_DIR, and every subdirectory (a multi-file program)."""
    singles = sorted(CHECK_DIR.glob("*.sg"))
    projects = sorted(p for p in CHECK_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
    return singles + projects


def program_id(program: Path) -> str:
    return program.name + "/" if program.is_dir() else program.name


def checked_file(program: Path) -> Path:
    """The file given to `sage check`: the program itself, or `main_test.sg` / `main.sg` of a directory."""
    if not program.is_dir():
        return program
    test_file = program / "main_test.sg"
    return test_file if test_file.is_file() else program / "main.sg"


def expected_diagnostics(program: Path) -> Counter:
    """The multiset of (file, code, line) named by the comments of the program's files."""
    if program.is_dir():
        files = sorted(p for p in program.rglob("*") if p.suffix == ".sg" or p.name == "grove.toml")
        base = program
    else:
        files, base = [program], program.parent
    expected: Counter = Counter()
    for path in files:
        pattern = _TOML_DIRECTIVE if path.name == "grove.toml" else _SG_DIRECTIVE
        rel = path.relative_to(base).as_posix()
        for code, line in pattern.findall(path.read_text(encoding="utf-8")):
            expected[(rel, code, int(line))] += 1
    return expected


def run_check(target: Path) -> SimpleNamespace:
    """`sage check <file> --format json` run in this process: the command's own entry point, with the
    program's directory as the working directory (a subprocess per program would triple the corpus time)."""
    from sagepy.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(target.parent)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["check", target.name, "--format", "json"])
    finally:
        os.chdir(previous)
    return SimpleNamespace(stdout=out.getvalue().encode(), stderr=err.getvalue().encode(), returncode=code)


def owned_by(program: Path, path: Path) -> bool:
    """Whether a diagnosed file belongs to the program: the file itself, or anything inside its directory."""
    return path.is_relative_to(program) if program.is_dir() else path == program


def actual_diagnostics(stdout: str, program: Path, cwd: Path) -> tuple[Counter, list[str], bool]:
    """(multiset of (file, code, line) in the program's own files, the diagnostics as JSON lines, whether some
    *other* file has an error). Other files only appear if `sage check FILE` also checks the rest of the
    project; they are not this program's concern."""
    base = program if program.is_dir() else program.parent
    found: Counter = Counter()
    raw = []
    foreign_error = False
    for d in json.loads(stdout)["diagnostics"]:
        raw.append(json.dumps(d))
        path = Path(os.path.realpath(cwd / d["file"]))
        if owned_by(program, path):
            found[(path.relative_to(base).as_posix(), d["code"], d["line"])] += 1
        elif d.get("severity") == "error":
            foreign_error = True
    return found, raw, foreign_error


def describe(diags: Counter) -> list[str]:
    ordered = sorted(diags.elements(), key=lambda d: (d[0], d[2], d[1]))
    return [f"  {code} {file}:{line}" for file, code, line in ordered] or ["  (none)"]


PROGRAMS = discover()


def test_corpus_is_large_enough() -> None:
    assert len(PROGRAMS) >= MIN_PROGRAMS, f"only {len(PROGRAMS)} programs in {CHECK_DIR}"


def test_corpus_covers_every_checker_code() -> None:
    covered = {code for program in PROGRAMS for (_, code, _) in expected_diagnostics(program)}
    missing = [code for code in REQUIRED_CODES if code not in covered]
    assert not missing, f"no program of {CHECK_DIR} expects: {', '.join(missing)}"


def test_flat_test_files_have_no_sibling() -> None:
    # A flat `X_test.sg` next to a flat `X.sg` would be checked together with it (SPEC §3.8).
    clashes = [p.name for p in CHECK_DIR.glob("*_test.sg")
               if (CHECK_DIR / (p.name[: -len("_test.sg")] + ".sg")).exists()]
    assert not clashes, f"test files with an unintended sibling module: {clashes}"


@pytest.mark.parametrize("program", PROGRAMS, ids=program_id)
def test_check_program(program: Path) -> None:
    target = checked_file(program)
    assert target.is_file(), f"{program_id(program)}: no {target.name} to check"
    expected = expected_diagnostics(program)
    result = run_check(target)
    stdout = result.stdout.decode("utf-8", errors="replace")
    stderr = result.stderr.decode("utf-8", errors="replace")
    actual, raw, foreign_error = actual_diagnostics(stdout, program, target.parent)
    expect_exit = 1 if foreign_error or any(code.startswith("E") for (_, code, _) in expected) else 0
    missing, extra = expected - actual, actual - expected
    problems = []
    if missing:
        problems.append("missing diagnostics")
    if extra:
        problems.append("unexpected diagnostics")
    if result.returncode != expect_exit:
        problems.append(f"exit code {result.returncode}, expected {expect_exit}")
    if problems:
        pytest.fail("\n".join([
            f"{program_id(program)}: " + "; ".join(problems),
            "--- expected ---", *describe(expected),
            "--- actual ---", *describe(actual),
            "--- missing ---", *describe(missing),
            "--- unexpected ---", *describe(extra),
            "--- JSON output ---", *(raw or ["  (none)"]),
            "--- stderr ---", stderr.rstrip(),
        ]), pytrace=False)
