"""`sage lsp` end to end: one server per module, started as a subprocess and spoken to over real stdio with
pygls's own client, on a project of several modules with a tool block and a test file (SPEC §19.2)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types as L

from .client import SageClient

MAIN = textwrap.dedent("""\
    mod util;
    use util::{Point, add, Shape};

    /// The issue tracker.
    tool Tracker {
        /// Lists the issues in a state.
        fn list_issues(state: String) -> List<String>
        #[mcp_name("close-issue")]
        fn close(id: Int) -> Bool
    }

    agent Main {
        use Tracker;
        @persistent count: Int
        on start {
            let p = Point { x: 1, y: 2 };
            let total = add(p.x, p.y);
            let s = Shape::Circle(total);
            let issues = try Tracker.list_issues("open");
            self.count.set(len(issues));
            print(str(total));
            yield(total);
        }
    }

    run Main;
    """)

UTIL = textwrap.dedent("""\
    /// A point on the plane.
    pub record Point { x: Int, y: Int }

    pub enum Shape { Circle(Int), Square }

    /// Adds two numbers.
    pub fn add(a: Int, b: Int) -> Int {
        let sum = a + b;
        return sum;
    }

    /// Looks a point up.
    #[mcp_tool = "find_point"]
    pub agent Finder {
        /// The name to look up.
        name: String
        on start {
            yield(self.name);
        }
    }
    """)

MAIN_TEST = textwrap.dedent("""\
    test "lists issues" {
        mock tool Tracker.list_issues -> ["a"];
        let n = add(1, 2);
        assert_eq(n, 3);
    }
    """)

GROVE = '[project]\nname = "demo"\nentry = "main.sg"\n\n[tools.Tracker]\ncommand = "true"\n'


@pytest.fixture(scope="module")
def lsp(tmp_path_factory: pytest.TempPathFactory) -> SageClient:
    root = tmp_path_factory.mktemp("project")
    (root / "grove.toml").write_text(GROVE)
    (root / "main.sg").write_text(MAIN)
    (root / "util.sg").write_text(UTIL)
    (root / "main_test.sg").write_text(MAIN_TEST)
    client = SageClient(root)
    mark = client.mark()
    for name in ("main.sg", "util.sg", "main_test.sg"):
        client.open(name)
    for name in ("main.sg", "util.sg", "main_test.sg"):
        client.wait_diagnostics(name, mark)
    yield client
    client.close()


def line_of(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """The 0-based (line, character) of the nth occurrence of needle."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at)
    return line, at - (text.rfind("\n", 0, at) + 1)


def test_capabilities_and_clean_diagnostics(lsp: SageClient) -> None:
    caps = lsp.init.capabilities
    for cap in ("hover_provider", "definition_provider", "references_provider", "rename_provider",
                "completion_provider", "signature_help_provider", "document_symbol_provider",
                "document_formatting_provider"):
        assert getattr(caps, cap), cap
    assert caps.position_encoding in (None, L.PositionEncodingKind.Utf16)
    assert not lsp.diagnostics[lsp.uri("main.sg")]
    assert not lsp.diagnostics[lsp.uri("util.sg")]
    assert not lsp.diagnostics[lsp.uri("main_test.sg")]


def test_hover_shows_signatures_docs_and_types(lsp: SageClient) -> None:
    hover = lsp.hover("main.sg", *line_of(MAIN, "add(p.x"))
    assert "fn add(a: Int, b: Int) -> Int" in hover.contents.value
    assert "Adds two numbers." in hover.contents.value
    hover = lsp.hover("main.sg", *line_of(MAIN, "total = add"))
    assert "total: Int" in hover.contents.value
    hover = lsp.hover("main.sg", *line_of(MAIN, "list_issues(\"open\")"))
    assert "fn list_issues(state: String) -> List<String>" in hover.contents.value
    assert "Lists the issues in a state." in hover.contents.value
    line, char = line_of(MAIN, "fn close")
    hover = lsp.hover("main.sg", line, char + 3)
    assert '#[mcp_name("close-issue")]' in hover.contents.value
    hover = lsp.hover("main.sg", *line_of(MAIN, "len(issues)"))
    assert "len(" in hover.contents.value and "number of elements" in hover.contents.value
    line, char = line_of(MAIN, "p.x")
    hover = lsp.hover("main.sg", line, char + 2)
    assert "x: Int" in hover.contents.value


def test_hover_shows_a_served_agent_and_its_documented_fields(lsp: SageClient) -> None:
    line, char = line_of(UTIL, "Finder")
    hover = lsp.hover("util.sg", line, char + 1)
    assert '#[mcp_tool = "find_point"]\nagent Finder {' in hover.contents.value
    assert "Looks a point up." in hover.contents.value
    line, char = line_of(UTIL, "self.name")
    hover = lsp.hover("util.sg", line, char + 6)
    assert "name: String" in hover.contents.value and "The name to look up." in hover.contents.value


def test_definition_across_modules(lsp: SageClient) -> None:
    loc = lsp.definition("main.sg", *line_of(MAIN, "add(p.x"))
    assert loc.uri == lsp.uri("util.sg")
    assert (loc.range.start.line, loc.range.start.character) == line_of(UTIL, "add(a")
    line, char = line_of(MAIN, "p.y")
    loc = lsp.definition("main.sg", line, char + 2)
    assert loc.uri == lsp.uri("util.sg") and (loc.range.start.line, loc.range.start.character) == line_of(UTIL, "y: Int")
    loc = lsp.definition("main.sg", *line_of(MAIN, "Circle(total)"))
    assert (loc.range.start.line, loc.range.start.character) == line_of(UTIL, "Circle")
    loc = lsp.definition("main.sg", *line_of(MAIN, "p.x"))
    assert loc.uri == lsp.uri("main.sg") and loc.range.start.line == line_of(MAIN, "let p")[0]
    line, char = line_of(MAIN, "count.set")
    loc = lsp.definition("main.sg", line, char)
    assert loc.range.start.line == line_of(MAIN, "@persistent count")[0]
    loc = lsp.definition("main_test.sg", *line_of(MAIN_TEST, "list_issues"))
    assert loc.uri == lsp.uri("main.sg") and loc.range.start.line == line_of(MAIN, "fn list_issues")[0]
    assert lsp.definition("main.sg", *line_of(MAIN, "print(")) is None


def test_references_across_the_project(lsp: SageClient) -> None:
    refs = lsp.references("util.sg", *line_of(UTIL, "add(a"))
    found = {(Path(r.uri).name if "://" not in r.uri else r.uri.rsplit("/", 1)[1], r.range.start.line) for r in refs}
    assert found == {("util.sg", line_of(UTIL, "add(a")[0]), ("main.sg", 1), ("main.sg", line_of(MAIN, "add(p.x")[0]),
                     ("main_test.sg", line_of(MAIN_TEST, "add(1")[0])}
    refs = lsp.references("util.sg", *line_of(UTIL, "sum = a"))
    assert [r.range.start.line for r in refs] == [line_of(UTIL, "sum = a")[0], line_of(UTIL, "return sum")[0]]


def test_rename_across_modules_and_tool_functions(lsp: SageClient) -> None:
    edit = lsp.rename("main.sg", *line_of(MAIN, "add(p.x"), "plus")
    changes = {uri.rsplit("/", 1)[1]: [(e.range.start.line, e.range.start.character, e.new_text) for e in edits]
               for uri, edits in edit.changes.items()}
    assert sorted(changes) == ["main.sg", "main_test.sg", "util.sg"]
    assert sorted(changes["main.sg"]) == [(1, line_of(MAIN, "add,")[1], "plus"),
                                         (*line_of(MAIN, "add(p.x"), "plus")]
    assert changes["util.sg"] == [(*line_of(UTIL, "add(a"), "plus")]
    edit = lsp.rename("main.sg", *line_of(MAIN, "list_issues(state"), "issues")
    changes = {uri.rsplit("/", 1)[1]: edits for uri, edits in edit.changes.items()}
    texts = sorted((e.range.start.line, e.new_text) for e in changes["main.sg"])
    decl = line_of(MAIN, "fn list_issues")[0]
    assert (decl, '#[mcp_name("list_issues")]\n    ') in texts
    assert (decl, "issues") in texts and (line_of(MAIN, "Tracker.list_issues")[0], "issues") in texts
    assert [e.new_text for e in changes["main_test.sg"]] == ["issues"]
    edit = lsp.rename("main.sg", *line_of(MAIN, "close(id"), "shut")
    assert [e.new_text for e in edit.changes[lsp.uri("main.sg")]] == ["shut"]   # its #[mcp_name] stays


@pytest.mark.parametrize("new, reason", [("match", "keyword"), ("2x", "not a valid name")])
def test_rename_refuses_keywords_and_invalid_names(lsp: SageClient, new: str, reason: str) -> None:
    from pygls.exceptions import JsonRpcException
    with pytest.raises(JsonRpcException) as info:
        lsp.rename("main.sg", *line_of(MAIN, "add(p.x"), new)
    assert reason in str(info.value)


def test_signature_help_and_symbols(lsp: SageClient) -> None:
    line, char = line_of(MAIN, "p.y);")
    help_ = lsp.signature_help("main.sg", line, char)
    sig = help_.signatures[0]
    assert sig.label == "add(a: Int, b: Int) -> Int" and help_.active_parameter == 1
    start, end = sig.parameters[1].label
    assert sig.label[start:end] == "b: Int"
    line, char = line_of(MAIN, '"open"')
    help_ = lsp.signature_help("main.sg", line, char)
    assert help_.signatures[0].label.startswith("list_issues(state: String)")
    outline = lsp.symbols("main.sg")
    assert [s.name for s in outline] == ["Tracker", "Main"]
    assert [c.name for c in outline[0].children] == ["list_issues", "close"]
    assert [c.name for c in outline[1].children] == ["count", "on start"]
    assert [c.name for c in lsp.symbols("util.sg")[1].children] == ["Circle", "Square"]


def labels(result: L.CompletionList) -> set[str]:
    return {i.label for i in result.items}


def test_completion_on_unsaved_edits(lsp: SageClient) -> None:
    base = MAIN.replace("        print(str(total));\n", "        print(str(total));\n        X\n")
    cases = {"p.": {"x", "y"}, "self.": {"count"}, "Tracker.": {"list_issues", "close"},
             "Shape::": {"Circle", "Square"}, "self.count.": {"get", "set", "update", "checkpoint"}}
    line = line_of(base, "        X")[0]
    for typed, expected in cases.items():
        lsp.change("main.sg", base.replace("        X\n", f"        {typed}\n"))
        got = labels(lsp.completion("main.sg", line, 8 + len(typed)))
        assert got == expected, typed
    lsp.change("main.sg", base.replace("        X\n", "        to\n"))
    got = labels(lsp.completion("main.sg", line, 10))
    assert {"total", "p", "issues", "Point", "add", "Main", "Tracker", "int_to_str", "let", "match"} <= got
    assert "a" not in got and "b" not in got   # the parameters of another module's function
    lsp.change("main.sg", MAIN)


def test_syntax_errors_are_diagnosed_and_completion_still_works(lsp: SageClient) -> None:
    mark = lsp.mark()
    broken = UTIL.replace("let sum = a + b;", "let sum = a + ;")
    lsp.change("util.sg", broken)
    diags = lsp.wait_diagnostics("util.sg", mark, predicate=lambda d: bool(d))
    assert diags[0].code in ("E005", "E006") and diags[0].severity == L.DiagnosticSeverity.Error
    assert diags[0].range.start.line == line_of(UTIL, "let sum")[0]
    got = labels(lsp.completion("util.sg", line_of(UTIL, "return sum")[0], 11))
    assert {"add", "Point", "Shape", "return"} <= got
    assert lsp.hover("util.sg", *line_of(UTIL, "add(a")) is not None   # an unchanged line keeps its analysis
    assert not lsp.formatting("util.sg")
    mark = lsp.mark()
    lsp.change("util.sg", UTIL)
    assert not lsp.wait_diagnostics("util.sg", mark, predicate=lambda d: not d)


def test_importers_are_rechecked(lsp: SageClient) -> None:
    mark = lsp.mark()
    lsp.change("util.sg", UTIL.replace("pub fn add(a: Int, b: Int)", "pub fn add(a: Int, b: Int, c: Int)"))
    diags = lsp.wait_diagnostics("main.sg", mark, predicate=lambda d: bool(d))
    assert [d.code for d in diags] == ["E020"]
    assert diags[0].range.start.line == line_of(MAIN, "add(p.x")[0]
    test_diags = lsp.wait_diagnostics("main_test.sg", mark, predicate=lambda d: bool(d))
    assert [d.code for d in test_diags] == ["E020"]
    mark = lsp.mark()
    lsp.change("util.sg", UTIL)
    assert not lsp.wait_diagnostics("main.sg", mark, predicate=lambda d: not d)


def test_diagnostics_ranges_use_utf16_and_carry_hints(lsp: SageClient) -> None:
    mark = lsp.mark()
    text = MAIN.replace('print(str(total));', 'print("😀😀"); print(totl);')
    lsp.change("main.sg", text)
    diags = lsp.wait_diagnostics("main.sg", mark, predicate=lambda d: bool(d))
    assert [d.code for d in diags] == ["E010"]
    line, char = line_of(text, "totl")
    assert (diags[0].range.start.line, diags[0].range.start.character) == (line, char + 2)   # 😀 is 2 UTF-16 units
    assert "undefined name `totl`" in diags[0].message and "total" in diags[0].message.split("\n", 1)[1]
    mark = lsp.mark()
    lsp.change("main.sg", MAIN)
    assert not lsp.wait_diagnostics("main.sg", mark, predicate=lambda d: not d)


def test_formatting_uses_the_formatter(lsp: SageClient) -> None:
    from sagepy.fmt import format_source
    canonical = format_source(UTIL)
    assert canonical != UTIL
    lsp.change("util.sg", UTIL.replace("return sum;", "return   sum ;"))
    edits = lsp.formatting("util.sg")
    assert len(edits) == 1 and edits[0].new_text == canonical
    assert (edits[0].range.start.line, edits[0].range.start.character) == (0, 0)
    lsp.change("util.sg", canonical)
    assert not lsp.formatting("util.sg")
    lsp.change("util.sg", UTIL)


def test_errors_inside_the_server_do_not_end_it(lsp: SageClient) -> None:
    assert lsp.hover("nowhere.sg", 0, 0) is None
    assert lsp.hover("main.sg", *line_of(MAIN, "add(p.x")) is not None


def test_without_pygls_a_clear_message(tmp_path: Path) -> None:
    blocker = tmp_path / "pygls"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('no pygls here')\n")
    result = subprocess.run([sys.executable, "-m", "sagepy", "lsp"], capture_output=True, text=True,
                            env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 2
    assert "pip install 'sagepy[lsp]'" in result.stderr and "Traceback" not in result.stderr
