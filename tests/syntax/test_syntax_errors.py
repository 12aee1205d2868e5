"""Syntax errors worded and placed where a person looks (SPEC §13.3), contextual words (§1.2), the nesting limit
(§13.3) and carets in display cells (§13.1), at the level of `parse_source` and of the formatted diagnostic."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.diagnostics import Diagnostic, format_diagnostic, remember_source
from sagepy.syntax.nesting import NESTING_LIMIT
from sagepy.syntax.parser import parse_source

REPO = Path(__file__).resolve().parents[2]


def diagnostics(text: str) -> list[Diagnostic]:
    _, diags = parse_source(text, "t.sg")
    return diags


def one(text: str) -> tuple[str, str, int, int, str | None]:
    diags = diagnostics(text)
    assert len(diags) == 1, diags
    d = diags[0]
    return (d.code, d.message, d.span[0], d.span[1], d.hint)


# ---------------------------------------------------------------- contextual words

CONTEXTUAL = ["start", "stop", "message", "error", "waking", "resting", "pause", "resume", "strategy", "children",
              "restart", "test", "mock", "timeout", "belief", "follows", "handler", "handles", "super", "delay"]


@pytest.mark.parametrize("word", CONTEXTUAL)
def test_a_contextual_word_is_a_name_outside_its_construct(word: str) -> None:
    text = (f"record R {{ {word}: Int }}\n"
            f"fn {word}({word}: Int) -> Int {{\n"
            f"    let {word} = {word} + 1;\n"
            f"    {word} = {word} * 2;\n"
            f"    let f = |{word}: Int| {word};\n"
            f"    for {word} in [1] {{ print({word}); }}\n"
            f"    R {{ {word}: f({word}) }}.{word}\n"
            f"}}\n")
    assert diagnostics(text) == []


def test_contextual_words_keep_their_meaning_in_their_construct() -> None:
    text = ("agent A {\n    message: Int\n"
            "    on start { let h = summon A { message: 1 }; let r = await h timeout(5) catch { () }; }\n"
            "    on message(message: Int) { print(message); }\n"
            "    on error(error: Error) { print(error); }\n"
            "    on stop {}\n}\n"
            "supervisor S { strategy: OneForOne, children { A { restart: Permanent, message: 2 } } }\n"
            'test "t" { mock divine -> "x"; mock tool T.f -> 1; mock elicit -> decline; }\n')
    assert diagnostics(text) == []


@pytest.mark.parametrize("text, word, col", [
    ("fn f() -> Int {\n    let if = 1;\n    1\n}\n", "if", 9),
    ("fn match() -> Int { 1 }\n", "match", 4),
    ("fn f(Int: Int) -> Int { 1 }\n", "Int", 6),
    ("agent A { let x: Int }\n", "let", 11),
    ("fn f() -> Int { print(loop); 1 }\n", "loop", 23),
])
def test_a_reserved_word_used_as_a_name_says_it_is_a_keyword(text: str, word: str, col: int) -> None:
    code, message, _, column, hint = one(text)
    assert (code, message, column) == ("E005", f"`{word}` is a keyword and cannot be used as a name", col)
    assert hint == f"rename it, e.g. `{word}_`"


# ---------------------------------------------------------------- where a syntax error is placed

def test_a_missing_semicolon_is_placed_after_the_token_before_it() -> None:
    text = "fn f() -> Int {\n    let x = 1\n    let y = 2;\n    x + y\n}\n"
    assert one(text) == ("E005", "missing `;` before `let`", 2, 14, "add `;` here")


def test_a_missing_semicolon_at_the_end_of_the_file() -> None:
    assert one("agent Main { on start {} }\nrun Main") == \
        ("E006", "missing `;` at the end of the file", 2, 9, "add `;` here")


def test_a_stray_token_after_a_complete_statement_is_not_a_missing_semicolon() -> None:
    text = "fn f() -> Int {\n    let x = 1;\n    )\n}\n"
    assert one(text) == ("E005", "unexpected `)`, expected a statement or `}`", 3, 5, None)
    text = "fn f() -> Int {\n    if true { 1; };\n    else { 2; }\n    1\n}\n"
    assert one(text) == ("E005", "unexpected `else`, expected a statement or `}`", 3, 5, None)


def test_an_unclosed_brace_at_the_end_of_the_file_is_placed_at_its_opening() -> None:
    text = 'agent Main {\n    on start {\n        print("x");\n'
    assert one(text) == ("E006", "unclosed `{`: the file ends before its `}`", 2, 14, "add the matching `}`")


def test_an_unclosed_brace_before_the_next_item_is_placed_at_its_opening() -> None:
    text = "fn a() -> Int {\n    1\n\nfn b() -> Int {\n    2\n}\n"
    diags = diagnostics(text)
    assert [(d.code, d.message, d.span[:2]) for d in diags] == [("E005", "unclosed `{`", (1, 15))]
    assert diags[0].notes == ["expected `}` before `fn` at 4:1"]


def test_the_indentation_of_closing_braces_finds_the_brace_left_open() -> None:
    """The `}` at column 1 closed `on start {` although it lines up with `agent Main {`: that one is open."""
    text = "agent Main {\n    on start {\n        print(1);\n\n}\nrun Main;\n"
    assert one(text)[:4] == ("E005", "unclosed `{`", 2, 14)


def test_a_misindented_brace_before_the_open_block_does_not_mislead() -> None:
    text = ("fn g() -> Int {\n    if true {\n        1;\n      }\n    2\n}\n"
            "agent A {\n    on start {\n        print(1);\n    on stop {\n        print(2);\n    }\n}\nrun A;\n")
    assert one(text)[:4] == ("E005", "unclosed `{`", 8, 14)


def test_an_unclosed_parenthesis_is_placed_at_its_opening() -> None:
    text = "fn f() -> Int {\n    let x = g(1, 2\n    let y = 3;\n    y\n}\n"
    assert one(text)[:4] == ("E005", "unclosed `(`", 2, 14)


def test_an_unclosed_parenthesis_on_the_same_line_is_reported_at_the_token() -> None:
    assert one("fn b() -> Int {\n    return (2;\n}\n")[:4] == ("E005", "unexpected `;`, expected `)` or `,`", 2, 14)


@pytest.mark.parametrize("text, message", [
    ("fn f() -> Int {\n    let x = ;\n    x\n}\n", "unexpected `;`, expected an expression"),
    ("fn f() -> Int { g(1, ) + }\n", "unexpected `}`, expected an expression"),
    ("fn f(x: 3) -> Int { 1 }\n", "unexpected integer `3`, expected a type"),
    ("let x = 1;\n", "unexpected `let`, expected an item or end of file"),
    ("fn f() -> Int { g(1 2) }\n", "unexpected integer `2`, expected `)` or `,`"),
    ("fn f() -> Bool { 1 < 2 < 3 }\n", "unexpected `<`, expected `;` or `}`"),
])
def test_expected_tokens_are_named_by_what_they_start(text: str, message: str) -> None:
    assert one(text)[1] == message


# ---------------------------------------------------------------- the nesting limit

def _body(expr: str) -> str:
    return "fn f() -> Int {\n" + expr + "\n}\n"


def test_a_chain_at_the_limit_parses_and_one_past_it_is_reported_at_its_operator() -> None:
    # the block is one level, so a chain of LIMIT - 1 operators is exactly at the limit
    assert diagnostics(_body("1" + " + 1" * (NESTING_LIMIT - 1))) == []
    for terms in (NESTING_LIMIT, 20_000):
        code, message, line, col, _ = one(_body("1" + " + 1" * terms))
        assert (code, message, line) == ("E005", f"nesting too deep (more than {NESTING_LIMIT} levels)", 2)
        assert col == 3 + 4 * (NESTING_LIMIT - 1)    # the operator that makes the chain one level too deep


@pytest.mark.parametrize("link", [".a", "()", ".0"])
def test_a_postfix_chain_past_the_limit_is_reported_at_its_first_link_too_many(link: str) -> None:
    code, _, line, col, _ = one("fn f() -> Int { x" + link * 20_000 + " }\n")
    assert (code, line, col) == ("E005", 1, 18 + len(link) * (NESTING_LIMIT - 1))


def test_deep_parentheses_are_reported_once_at_the_first_one_past_the_limit() -> None:
    assert diagnostics(_body("(" * (NESTING_LIMIT - 1) + "1" + ")" * (NESTING_LIMIT - 1))) == []
    code, message, line, col, _ = one(_body("(" * 17_000 + "1" + ")" * 17_000))
    assert (code, line, col) == ("E005", 2, NESTING_LIMIT)
    assert message.startswith("nesting too deep")


def test_deep_blocks_and_else_if_chains_are_levels() -> None:
    nested = "fn f() -> Int {\n" + "if true {\n" * 1200 + "1;\n" + "}\n" * 1200 + "1\n}\n"
    assert one(nested)[:3] == ("E005", f"nesting too deep (more than {NESTING_LIMIT} levels)", NESTING_LIMIT + 1)
    chain = "fn f(x: Int) -> Int {\n    if x == 0 { 0; }" + " else if x == 1 { 1; }" * 1500 + "\n    1\n}\n"
    assert one(chain)[0] == "E005"


def test_a_deep_interpolation_is_reported_inside_the_string() -> None:
    text = 'fn f() -> String {\n    "a{' + "(" * 3000 + "1" + ")" * 3000 + '}"\n}\n'
    assert [d.code for d in diagnostics(text)] == ["E005"]


def test_a_match_with_many_arms_is_not_deep() -> None:
    arms = "".join(f"        {i} => {i},\n" for i in range(5000))
    items, diags = parse_source("fn f(x: Int) -> Int {\n    match x {\n" + arms + "        _ => 0,\n    }\n}\n", "t.sg")
    assert diags == []
    arms = items[0].body.stmts[0].match.arms
    assert [a.pattern.value for a in arms[:3]] == [0, 1, 2] and len(arms) == 5001


@pytest.mark.parametrize("command", ["run", "check"])
def test_sage_reports_deep_input_without_crashing(tmp_path: Path, command: str) -> None:
    """`sage run` of these segfaulted (exit 139) before the limit: each is one E005 and exit 1."""
    for name, expr in (("chain", "1" + " + 1" * 20_000), ("parens", "(" * 17_000 + "1" + ")" * 17_000)):
        program = tmp_path / f"{name}.sg"
        program.write_text("agent Main {\n    on start {\n        print(" + expr + ");\n    }\n}\nrun Main;\n",
                           encoding="utf-8")
        env = dict(os.environ, NO_COLOR="1", SAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
        r = subprocess.run([sys.executable, "-m", "sagepy", command, program.name], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 1, r.stderr[-2000:]
        assert r.stderr.count("error[E005]: nesting too deep") == 1
        assert "internal error" not in r.stderr


# ---------------------------------------------------------------- carets in display cells

def _caret_lines(text: str, span: tuple) -> list[str]:
    remember_source("cells.sg", text)
    shown = format_diagnostic(Diagnostic("E001", "x", "cells.sg", span)).split("\n")
    return shown[3:5]


def test_carets_stand_under_the_marked_text_after_tabs() -> None:
    source, caret = _caret_lines("\t\tlet x = 1 $ 2;\n", (1, 13, 1, 14))
    assert "\t" not in source
    assert caret.index("^") == source.index("$")


def test_carets_count_wide_characters_as_two_cells() -> None:
    line = 'let 名前 = "値" $ 1;\n'
    assert _caret_lines(line, (1, 5, 1, 7))[1] == "  | " + " " * 4 + "^" * 4         # 名前: two cells each
    assert _caret_lines(line, (1, 14, 1, 15))[1] == "  | " + " " * 16 + "^"          # `$`, after 名, 前 and 値


# ---------------------------------------------------------------- Int literals out of range (E004)

HUGE = "1" * 4301   # past Python's 4,300-digit limit for int(): must be E004, never a ValueError


@pytest.mark.parametrize("text", [
    f"fn f() -> Int {{ return {HUGE}; }}",
    f"fn f() -> Int {{ return -{HUGE}; }}",
    "fn f() -> Int { return -99999999999999999999; }",
    f"fn f(x: Int) -> Int {{ match x {{ {HUGE} => 1, _ => 0 }} }}",
    f"fn f(x: Int) -> Int {{ match x {{ -{HUGE} => 1, _ => 0 }} }}",
    "const C: Int = -99999999999999999999;",
    f"const C: Int = -{HUGE};",
    f"fn f(t: (Int, Int)) -> Int {{ return t.{HUGE}; }}",
])
def test_an_int_literal_out_of_range_is_e004_whatever_its_length(text: str) -> None:
    code, message, *_ = one(text)
    assert (code, message) == ("E004", "integer literal out of the 64-bit range")


@pytest.mark.parametrize("text", [
    f"fn f() -> Int {{ return {'0' * 4400}7; }}",
    f"fn f() -> Int {{ return -{'0' * 4400}; }}",
    f"fn f(x: Int) -> Int {{ match x {{ -{'0' * 4400}1 => 1, _ => 0 }} }}",
    f"fn f(t: (Int, Int)) -> Int {{ return t.{'0' * 4400}1; }}",
])
def test_leading_zeros_do_not_count_against_the_digit_limit(text: str) -> None:
    """Found by the fuzz run: `-000…0` with 4,401 digits was a ValueError from int(), not a value."""
    assert diagnostics(text) == []


def test_the_smallest_int_is_a_valid_literal() -> None:
    assert diagnostics("const C: Int = -9223372036854775808;\nfn f() -> Int { return -9223372036854775808; }") == []



@pytest.mark.parametrize("nested", ["|| " * 400 + "1", "(" * 900 + "1" + ")" * 899, "-" * 3000 + "1"],
                         ids=["closures", "parentheses", "negations"])
def test_a_syntax_error_after_a_deeply_nested_expression_is_a_diagnostic(nested: str) -> None:
    """Found by the fuzz run: explaining the error copied Lark's whole value stack deeply, and a deep tree on
    it was an internal RecursionError."""
    found = diagnostics(f"fn pick() -> Int {{\n    let inner = {nested};\nrecord Point {{ x: Int }}\n")
    assert [d.code for d in found] == ["E005"]
