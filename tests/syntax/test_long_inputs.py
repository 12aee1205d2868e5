"""Long inputs cost work linear in their length (SPEC: checking and running are linear in the program text):
long string literals, many diagnostics on one long line, long files. Work is counted (characters printed,
garbage collections run), never timed; bench/linear.py has the timings."""
from __future__ import annotations

import gc
from pathlib import Path

from sagepy.diagnostics import LONG_LINE, format_diagnostics
from sagepy.syntax import ast as A
from sagepy.syntax.parser import parse_source


def e007_line(n: int) -> str:
    """A program whose one long line holds n + 1 unterminated interpolations: n + 1 E007 diagnostics."""
    return 'agent Main {\n    on start {\n        print("{"' + ' + "{' * n + ');\n    }\n}\nrun Main;\n'


def report_of(tmp_path: Path, name: str, source: str) -> tuple[str, list]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    _, diags = parse_source(source, str(path))
    return format_diagnostics(diags), diags


def test_the_report_of_many_diagnostics_on_one_line_grows_linearly(tmp_path: Path) -> None:
    """Each diagnostic printed the whole line: n diagnostics on a line of length O(n) printed O(n²) text."""
    small, small_diags = report_of(tmp_path, "small.sg", e007_line(500))
    large, large_diags = report_of(tmp_path, "large.sg", e007_line(1000))
    small_count, large_count = ([d.code for d in ds].count("E007") for ds in (small_diags, large_diags))
    assert small_count > 200 and large_count == 2 * small_count - 1
    assert len(large) / len(small) < 2.1


def test_a_long_line_is_shown_as_a_window_with_the_carets_under_the_span(tmp_path: Path) -> None:
    head = 'const S: String = "'
    source = "const A: Int = 1;\n" + head + "x" * 3000 + "\\q" + "y" * 3000 + '";\n'
    report, diags = report_of(tmp_path, "long.sg", source)
    assert [d.code for d in diags] == ["E003"]
    lines = report.splitlines()
    assert lines[1].endswith(f"long.sg:2:{len(head) + 3000 + 1}")
    shown, carets = lines[3], lines[4]
    code = shown.split(" | ", 1)[1]
    assert code.startswith("…") and code.endswith("…")
    assert len(code) < LONG_LINE
    start = carets.split("| ", 1)[1].index("^")
    assert code[start:start + 2] == "\\q"
    assert carets.count("^") == 2


def test_a_short_line_is_shown_whole(tmp_path: Path) -> None:
    source = "const S: String = \"" + "x" * 200 + "\\q\";\n"
    report, _ = report_of(tmp_path, "short.sg", source)
    assert report.splitlines()[3] == "1 | " + source.splitlines()[0]


def test_long_string_literals_decode_exactly_with_their_positions() -> None:
    text = "a" * 5000 + "}" + "é" * 3000
    items, errors = parse_source(f'const S: String = "{text}\\n{{1}}\\{{";\n', "main.sg")
    assert errors == []
    template = items[0].value
    assert isinstance(template, A.Template)
    assert template.parts[0] == text + "\n" and template.parts[2] == "{"
    # A bad escape after a long run and a newline inside the literal is reported at its own line and column.
    _, errors = parse_source('const S: String = "' + "b" * 4000 + "\nccc\\q\";\n", "main.sg")
    assert [(d.code, d.span[:2]) for d in errors] == [("E003", (2, 4))]


def test_a_parse_runs_no_garbage_collection_and_leaves_the_collector_as_it_found_it() -> None:
    """A parse only builds objects that stay alive: collections during it scanned a growing heap for nothing
    and took about half of a long file's parse time."""
    source = "".join(f"fn f{i}() -> Int {{ return {i}; }}\n" for i in range(3000))
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])
    gc.callbacks.append(count)
    try:
        items, errors = parse_source(source, "many.sg")
    finally:
        gc.callbacks.remove(count)
    assert errors == [] and len(items) == 3000
    # Unpaused, this parse runs hundreds of collections; one may still start on the way into parse_source.
    assert len(collections) <= 1, collections
    assert gc.isenabled()
    gc.disable()
    try:
        parse_source("fn f() -> Int { return 1; }\n", "one.sg")
        assert not gc.isenabled()
    finally:
        gc.enable()
