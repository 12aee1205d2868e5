"""The checker accepts every valid program: the run corpus (tests/programs) and the examples.

Programs of the corpus whose `// err: error[CODE]` comments expect a load-time error (a code below E200) are
checked too: the checker may report only the codes they expect.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sagepy.session import Session

REPO = Path(__file__).resolve().parent.parent.parent
_EXPECTED_ERROR = re.compile(r"//\s*err:\s*error\[(E\d{3})\]")

def _programs() -> list[Path]:
    corpus = REPO / "tests" / "programs"
    return sorted(corpus.glob("*.sg")) + sorted(corpus.glob("*/main.sg"))


def _examples() -> list[Path]:
    examples = REPO / "examples"
    found = sorted(examples.glob("*.sg"))
    for config in sorted(examples.glob("*/grove.toml")):
        found += sorted(p for p in config.parent.rglob("*.sg") if p.name in ("main.sg", "main_test.sg")
                        and p.parent.name == "src")
    return found


def _diagnostics(path: Path) -> tuple[list, list]:
    """(load diagnostics, checker diagnostics) of the program whose entry (or test file) is `path`."""
    session, _ = Session.open(str(path))
    program = session.load(str(path))
    if any(d.severity == "error" for d in program.diagnostics):
        return program.diagnostics, []
    return program.diagnostics, session.check(program, test_file=path.name.endswith("_test.sg"))


def _rel(path: Path) -> str:
    return os.path.relpath(path, REPO)


@pytest.mark.parametrize("path", _programs(), ids=_rel)
def test_corpus_program(path: Path) -> None:
    expected = {code for code in _EXPECTED_ERROR.findall(path.read_text(encoding="utf-8")) if code < "E200"}
    loaded, checked = _diagnostics(path)
    unexpected = [f"{d.code} {d.span[0] if d.span else '?'}: {d.message}" for d in checked if d.code not in expected]
    assert not unexpected, "\n".join(unexpected)
    if expected:
        assert expected & {d.code for d in loaded + checked}, f"none of {sorted(expected)} reported"


@pytest.mark.parametrize("path", _examples(), ids=_rel)
def test_example(path: Path) -> None:
    _, checked = _diagnostics(path)
    shown = [f"{d.code} {d.span[0] if d.span else '?'}: {d.message}" for d in checked]
    assert not shown, "\n".join(shown)
