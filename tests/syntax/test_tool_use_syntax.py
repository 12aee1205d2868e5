"""Syntax of tool use by the model (SPEC §1.1, §2.2, §2.3, §4.12): `divine` options, `mock divine -> call …`,
and `///` doc comments on items and tool functions, also after a round trip through the AST cache."""
from __future__ import annotations

from sagepy.syntax import ast as A
from sagepy.syntax import cache
from sagepy.syntax.parser import parse_source


def parse_ok(text: str) -> list:
    items, diags = parse_source(text, "t.sg")
    assert diags == []
    return items


def codes_at(text: str) -> list[tuple[str, int, int]]:
    _, diags = parse_source(text, "t.sg")
    return sorted((d.code, d.span[0], d.span[1]) for d in diags)


def value_of(text: str) -> object:
    return parse_ok(f"fn f() -> String {{\n    {text}\n}}\n")[0].body.value


def test_divine_options_after_the_prompt_and_the_type() -> None:
    node = value_of('divine("p" -> Plan, tools: [Fs, Fs.read, h], max_steps: 2 + 1,)')
    assert isinstance(node, A.DivineExpr) and node.type.name == "Plan" and not node.infer
    assert [o.name for o in node.options] == ["tools", "max_steps"]
    tools = node.options[0].value
    assert isinstance(tools, A.ListLit) and len(tools.items) == 3
    assert isinstance(node.options[1].value, A.Binary)
    assert value_of('infer("p")').options == []


def test_option_names_are_not_keywords() -> None:
    body = parse_ok('fn f() -> String {\n    let tools = [1];\n    let max_steps = 2;\n'
                    '    infer("p", tools: [Fs], bogus: tools)\n}\n')[0].body
    assert [o.name for o in body.value.options] == ["tools", "bogus"]


def test_an_option_needs_a_name_and_a_colon() -> None:
    assert codes_at('fn f() -> String {\n    divine("p", [Fs])\n}\n') == [("E005", 2, 17)]


def test_mock_divine_call_turns() -> None:
    body = parse_ok('test "t" {\n    mock divine -> call Fs.read("a"), call T.f(1, 2);\n'
                    '    mock infer -> call Fs.list(".");\n    mock divine -> call;\n}\n')[0].body
    first, second, plain = body.stmts
    assert first.kind == "divine" and isinstance(first.value, A.MockCalls)
    assert [(c.fn.obj.name, c.fn.name, len(c.args)) for c in first.value.calls] == [("Fs", "read", 1), ("T", "f", 2)]
    assert second.kind == "infer" and isinstance(second.value, A.MockCalls)
    assert isinstance(plain.value, A.Name) and plain.value.name == "call"   # `call` is a name elsewhere


def test_a_scripted_call_must_be_a_tool_call() -> None:
    assert codes_at('test "t" {\n    mock divine -> call helper(1);\n}\n') == [("E005", 2, 25)]


def test_doc_comments_on_items_and_tool_functions() -> None:
    items = parse_ok(
        "/// A tracker.\n"
        "///\n"
        "///   Indented.\n"
        "tool Tracker {\n"
        "    /// Search issues.\n"
        '    #[mcp_name = "search-issues"]\n'
        "    fn search(q: String) -> String\n"
        "    // an ordinary comment\n"
        "    fn other() -> Int\n"
        "}\n"
        "\n"
        "/// Not attached: a blank line follows.\n"
        "\n"
        "record R { x: Int }\n"
        "/// A function.\n"
        "pub fn f() -> Int { 1 }\n")
    tool, record, fn = items
    assert tool.doc == "A tracker.\n\n  Indented."
    assert [(f.name, f.doc) for f in tool.fns] == [("search", "Search issues."), ("other", None)]
    assert record.doc is None
    assert fn.doc == "A function."


def test_doc_comments_survive_the_ast_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SAGE_NO_CACHE", raising=False)
    source = tmp_path / "tools.sg"
    text = "tool T {\n    /// Does f.\n    fn f() -> Int\n}\n"
    source.write_text(text, encoding="utf-8")
    cache.parse_file_cached(str(source), text)
    items, diags = cache.load(str(source), text, cache.cache_root())
    assert diags == [] and items[0].fns[0].doc == "Does f."
