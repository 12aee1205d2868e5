"""The parser's lexical checks and its per-parse state (SPEC §1, §0.1, §13.3), at the level of `parse_source`:
exact codes and spans, which the program corpus (substring matches on stderr) cannot pin down."""
from __future__ import annotations

import threading

from sagepy.syntax import ast as A
from sagepy.syntax import cache
from sagepy.syntax.parser import parse_source


def codes_at(text: str) -> list[tuple[str, int, int]]:
    _, diags = parse_source(text, "t.sg")
    return sorted((d.code, d.span[0], d.span[1]) for d in diags)


def test_every_invalid_character_outside_strings_and_comments_is_reported() -> None:
    text = ('fn f() -> String {\n'
            '    let a = 1 $ ? ;\n'
            '    // $ ? ` in a comment\n'
            '    /* $ ? ` in a block comment */\n'
            '    "$ ? ` in a string {a} // not a comment"\n'
            '}\n')
    assert codes_at(text) == [("E001", 2, 15), ("E001", 2, 17)]


def test_a_run_of_ampersands_is_read_as_and_tokens() -> None:
    """`&&&&` is two `&&` tokens (a syntax error, not an invalid character); only an odd `&` left over is E001."""
    assert codes_at("fn f() -> Bool { true &&&& false }\n") == [("E005", 1, 25)]
    assert codes_at("fn f() -> Bool { true &&& false }\n") == [("E001", 1, 25)]


def test_an_invalid_character_inside_an_interpolation_is_reported_where_it_stands() -> None:
    assert codes_at('fn f(a: Int) -> String {\n    "x{a ` }y"\n}\n') == [("E001", 2, 10)]


def test_an_unterminated_block_comment_stops_at_nothing_else() -> None:
    assert codes_at("fn f() {}\n/* open\n$ ? `\n") == [("E002", 2, 1)]
    assert codes_at("fn f() {}\n/*/\n") == [("E002", 2, 1)]


def test_the_unit_literal_survives_the_ast_cache(tmp_path, monkeypatch) -> None:
    """The AST holds syntax's own unit marker, compared by identity downstream: it must stay the same object
    after a round trip through the on-disk cache."""
    monkeypatch.setenv("SAGE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SAGE_NO_CACHE", raising=False)
    source = tmp_path / "unit.sg"
    text = "fn f() -> Unit { () }\n"
    source.write_text(text, encoding="utf-8")
    cache.parse_file_cached(str(source), text)
    items, diags = cache.load(str(source), text, cache.cache_root())
    assert diags == []
    literal = items[0].body.value
    assert isinstance(literal, A.Literal) and literal.value is A.UNIT


def test_parses_in_threads_keep_their_own_diagnostics() -> None:
    """Each parse reports into its own context: parses running at once never see each other's errors."""
    texts = [f"fn f{i}() -> String {{\n    let x = {'$ ' * i}1;\n    \"a{{b ` }}c\\q\"\n}}\n" for i in range(1, 7)]
    expected = [parse_source(t, f"file{i}.sg") for i, t in enumerate(texts)]
    expected = [[(d.code, d.file, d.span) for d in diags] for _, diags in expected]
    failures: list[str] = []

    def parse_repeatedly(i: int) -> None:
        for _ in range(30):
            _, diags = parse_source(texts[i], f"file{i}.sg")
            got = [(d.code, d.file, d.span) for d in diags]
            if got != expected[i]:
                failures.append(f"file{i}.sg: {got} != {expected[i]}")
                return

    threads = [threading.Thread(target=parse_repeatedly, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(failures)
