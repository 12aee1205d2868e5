"""The error-code table (sagepy/errorcodes/): complete, rendered into docs/errors.md, and with examples that do
what they claim: each wrong example reports its code, each fixed example passes."""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.errorcodes import ErrorCode, all_codes, explain_text, lookup, markdown

REPO = Path(__file__).resolve().parent.parent
SAGEPY = REPO / "sagepy"
CODE_LITERAL = re.compile(r"\b[EW]\d{3}\b")


def test_docs_errors_md_is_generated_from_the_table() -> None:
    page = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    assert page == markdown(), "docs/errors.md is stale: run `python -m sagepy.errorcodes > docs/errors.md`"


def test_codes_are_unique_and_well_formed() -> None:
    codes = [entry.code for entry in all_codes()]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[EW]\d{3}", c) for c in codes)
    assert all(entry.title and entry.explanation for entry in all_codes())


def test_every_code_in_the_source_is_in_the_table() -> None:
    """Any code the parser, checker or runtime can emit is written as a literal somewhere under sagepy/."""
    known = {entry.code for entry in all_codes()}
    missing: dict[str, list[str]] = {}
    for path in SAGEPY.rglob("*.py"):
        if path.is_relative_to(SAGEPY / "errorcodes"):
            continue
        for code in CODE_LITERAL.findall(path.read_text(encoding="utf-8")):
            if code not in known:
                missing.setdefault(code, []).append(str(path.relative_to(REPO)))
    assert not missing, f"codes used in sagepy/ but absent from sagepy/errorcodes/: {missing}"


def test_lookup_ignores_case() -> None:
    assert lookup("e013") is lookup("E013") is not None
    assert lookup("E999") is None


def _run_cli(args: list[str], cwd: Path) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), SAGE_CACHE_DIR=str(cwd / ".cache"), SAGE_MODEL="echo")
    env.pop("NO_COLOR", None)
    result = subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def test_sage_explain_prints_the_table_entry(tmp_path: Path) -> None:
    status, output = _run_cli(["explain", "E013"], tmp_path)
    assert status == 0
    assert output == explain_text(lookup("E013"))


def test_sage_explain_unknown_code_exits_1(tmp_path: Path) -> None:
    status, output = _run_cli(["explain", "E999"], tmp_path)
    assert status == 1
    assert "unknown error code 'E999'" in output


def _check_in_process(target: str, cwd: Path) -> tuple[int, str]:
    """`sage check` through the command's entry point in this process: ~90 examples, a subprocess each would
    dominate the suite's time."""
    from sagepy.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["check", target])
    finally:
        os.chdir(previous)
    return status, out.getvalue() + err.getvalue()


def _write(entry: ErrorCode, example: str, where: Path) -> list[str]:
    names = []
    for name, text in entry.files(example):
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        names.append(name)
    return names


def _examples() -> list:
    params = []
    for entry in all_codes():
        for kind in ("wrong", "fixed"):
            if getattr(entry, kind) and entry.command:
                params.append(pytest.param(entry, kind, id=f"{entry.code}-{kind}"))
    return params


@pytest.mark.parametrize(("entry", "kind"), _examples())
def test_example(entry: ErrorCode, kind: str, tmp_path: Path) -> None:
    names = _write(entry, getattr(entry, kind), tmp_path)
    sources = [n for n in names if n.endswith(".sg")]
    if entry.command == "check":
        target = next((n for n in sources if n.endswith("_test.sg")), sources[0])
        status, output = _check_in_process(target, tmp_path)
        reported = f"{entry.severity}[{entry.code}]" in output
    elif entry.command == "run":
        status, output = _run_cli(["run", sources[0]], tmp_path)
        reported = f"[{entry.code}]" in output
    else:
        status, output = _run_cli(["test", "."], tmp_path)
        reported = f"{entry.code}" in output
    if kind == "wrong":
        assert reported, f"{entry.code}: the wrong example does not report it:\n{output}"
    else:
        assert status == 0 and entry.code not in output, f"{entry.code}: the fixed example fails:\n{output}"
