"""The source lines kept for reports (sagepy.diagnostics) are bounded: a process that loads many programs (an
evaluation, a language server, the engine compiling program after program) keeps the latest files only."""
from __future__ import annotations

from pathlib import Path

from sagepy import diagnostics


def test_the_kept_sources_are_bounded_and_the_latest_win(tmp_path: Path) -> None:
    count = diagnostics._SOURCES_KEPT + 50
    for i in range(count):
        diagnostics.remember_source(str(tmp_path / f"m{i}.sg"), f"let x = {i};\nsecond")
    assert len(diagnostics._SOURCES) <= diagnostics._SOURCES_KEPT
    assert diagnostics.source_line(str(tmp_path / f"m{count - 1}.sg"), 1) == f"let x = {count - 1};"
    # an early file fell out: it is read from disk again, where it never was
    assert diagnostics.source_line(str(tmp_path / "m0.sg"), 1) is None
    on_disk = tmp_path / "m0.sg"
    on_disk.write_text("from disk\n", encoding="utf-8")
    assert diagnostics.source_line(str(on_disk), 1) == "from disk"
