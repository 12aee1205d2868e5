"""`sage fmt` over every `.sg` file of the repository (SPEC §19.1's proof): each file that parses formats to
text that parses to the same AST with the same comments, and formatting that text changes nothing; the files
that do not parse on purpose are refused. examples/ and stdlib/ are kept canonical (`sage fmt --check`), and a
sample of tests/programs prints the same after formatting."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.deepstack import call_on_deep_stack
from sagepy.fmt import SyntaxErrors, format_source
from sagepy.fmt.same import same_ast
from sagepy.syntax.cache import parse_file_cached
from sagepy.syntax.parser import parse_source
from sagepy.syntax.trivia import scan_comments
from tests.test_programs import PROGRAMS_DIR, output_lines, parse_expectations, run_program

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = sorted(p for top in ("examples", "stdlib", "tests") for p in (REPO / top).rglob("*.sg"))


def _parses(path: Path) -> bool:
    return not parse_source(path.read_text(encoding="utf-8"), str(path))[1]


# every twelfth single-file program of tests/programs that parses: each run costs a process
RUN_SAMPLE = [p for p in sorted(PROGRAMS_DIR.glob("*.sg")) if _parses(p)][::12]


def test_every_file_of_the_repository_formats_safely_and_idempotently(tmp_path: Path, monkeypatch) -> None:
    """The formatter checks its output itself; this checks it again, independently. Parses go through an
    AST cache of the test's own, so that each text is parsed once."""
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SAGE_NO_CACHE", raising=False)
    assert len(CORPUS) > 400
    formatted = refused = 0
    for path in CORPUS:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        items, diagnostics = parse_file_cached(str(path), text)
        try:
            out = format_source(text, str(path))
        except SyntaxErrors:
            assert any(d.severity == "error" for d in diagnostics), path
            refused += 1
            continue
        new_items, new_diagnostics = parse_file_cached(str(path), out)
        assert not new_diagnostics, path
        assert call_on_deep_stack(lambda: same_ast(items, new_items), "same-ast"), path
        assert [c.text for c in scan_comments(out)] == [c.text for c in scan_comments(text)], path
        assert format_source(out, str(path)) == out, f"not idempotent: {path}"
        assert out.endswith("\n") and not out.endswith("\n\n"), path
        formatted += 1
    assert formatted > 400 and refused > 0


def test_examples_and_stdlib_are_canonical() -> None:
    done = subprocess.run([sys.executable, "-m", "sagepy", "fmt", "--check", "examples", "stdlib"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("path", RUN_SAMPLE, ids=lambda p: p.stem)
def test_a_program_prints_the_same_after_formatting(path: Path, tmp_path: Path) -> None:
    """Its stdout and exit code as its expectations say (stderr may name other lines after formatting)."""
    text = path.read_text(encoding="utf-8")
    expected = parse_expectations(text)
    copy = tmp_path / path.name
    copy.write_text(format_source(text, str(path)), encoding="utf-8")
    done = run_program(copy, "".join(line + "\n" for line in expected.stdin))
    assert output_lines(done.stdout.decode("utf-8", "replace")) == expected.out
    assert done.returncode == expected.exit
