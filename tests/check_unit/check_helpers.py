"""Helpers for the checker's unit tests: check small programs given as strings."""
from __future__ import annotations

from pathlib import Path

from sagepy.check import check_program
from sagepy.loader import load_program


def check_files(tmp_path: Path, files: dict[str, str], entry: str, config: dict | None = None) -> list:
    """Write `files` under tmp_path, load `entry` and return the loader's and the checker's diagnostics."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    program = load_program(str(tmp_path / entry))
    found = list(program.diagnostics)
    if not any(d.severity == "error" for d in found):
        found += check_program(program, tools=(config or {}).get("tools", {}), test_file=entry.endswith("_test.sg"))
    return found


def codes(tmp_path: Path, source: str, name: str = "main.sg", config: dict | None = None) -> list[tuple[str, int]]:
    """(code, line) of every diagnostic of a one-file program, sorted by line."""
    found = check_files(tmp_path, {name: source}, name, config)
    return sorted(((d.code, d.span[0] if d.span else 0) for d in found), key=lambda c: (c[1], c[0]))
