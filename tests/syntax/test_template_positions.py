"""Template interpolations (SPEC §1.4) are parsed each from its own text, in time linear in the template's
length, and their nodes and errors carry the file's own positions."""
from __future__ import annotations

import pytest

from sagepy.syntax import ast as A
from sagepy.syntax.grammar import lark_parser
from sagepy.syntax.parser import parse_source


def template_of(source: str) -> A.Template:
    items, errors = parse_source(source, "main.sg")
    assert errors == []
    return items[0].value


@pytest.fixture
def parsed_lengths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text handed to Lark while the test runs."""
    parser = lark_parser()
    lengths: list[int] = []
    real = parser.parse

    def counting(text: str, *args, **kwargs):
        lengths.append(len(text))
        return real(text, *args, **kwargs)
    monkeypatch.setattr(parser, "parse", counting)
    return lengths


def test_work_per_interpolation_does_not_grow_along_the_line(parsed_lengths: list[int]) -> None:
    """Each interpolation used to be padded out to its column (and line) before parsing: a line of n of them
    lexed O(n²) characters."""
    n = 2000
    source = 'const T: String = "' + "{x + 1}" * n + '";\n'
    parse_source(source, "main.sg")
    interpolations = parsed_lengths[1:]   # the first parse is the file itself
    assert len(interpolations) == n
    assert sum(interpolations) == n * len("x + 1")


def test_a_plain_name_or_int_needs_no_parse(parsed_lengths: list[int]) -> None:
    source = 'const T: String = "' + "{x}{1}" * 500 + '";\n'
    parse_source(source, "main.sg")
    assert len(parsed_lengths) == 1


@pytest.mark.parametrize("text", ["99999999999999999999", " 99999999999999999999"])
def test_an_int_too_large_in_an_interpolation_is_e004_at_its_place(text: str) -> None:
    _, errors = parse_source('const T: String = "{1} {' + text + '}";\n', "main.sg")
    start = 25 + len(text) - len(text.lstrip())
    assert [(e.code, e.span) for e in errors] == [("E004", (1, start, 1, start + 20))]


@pytest.mark.parametrize("text", ["x", "7", "x + 1", "f(x)", "start", "true", "self"])
def test_nodes_inside_an_interpolation_have_file_positions(text: str) -> None:
    source = f'const T: String =\n    "ab{{{text}}} and {{{text}}}";\n'
    parts = [p for p in template_of(source).parts if not isinstance(p, str)]
    first_col = len('    "ab{') + 1
    second_col = first_col + len(text) + len("} and {")
    assert [p.span for p in parts] == [(2, first_col, 2, first_col + len(text)),
                                       (2, second_col, 2, second_col + len(text))]


def test_a_plain_name_is_the_node_the_parser_would_build() -> None:
    fast = template_of('const T: String = "{abc}";\n').parts[0]
    parsed = template_of('const T: String = "{ abc}";\n').parts[0]
    assert (type(fast), fast.name, fast.targs) == (type(parsed), parsed.name, parsed.targs)
    assert fast.span == (1, 21, 1, 24) and parsed.span == (1, 22, 1, 25)


def test_an_error_inside_a_later_interpolation_is_at_its_own_place() -> None:
    source = 'const T: String = "{a}{b}\n{c} {d +}";\n'
    _, errors = parse_source(source, "main.sg")
    assert [(e.code, e.span[:2]) for e in errors] == [("E007", (2, 8))]


def test_an_interpolation_spanning_lines_keeps_its_columns() -> None:
    source = 'const T: String = "x{f(a,\n  b)}";\n'
    call = template_of(source).parts[1]
    assert call.span == (1, 22, 2, 5)
    assert call.args[1].span == (2, 3, 2, 4)


@pytest.mark.parametrize("text", ["a b", "a ` b", "f(x) y"])
def test_two_expressions_in_one_interpolation_are_e007(text: str) -> None:
    """Found while moving positions: `{a b}` ended in an internal IndexError describing what was expected."""
    _, errors = parse_source('const T: String = "{a} {' + text + '}";\n', "main.sg")
    assert [e.code for e in errors] == ["E007"]
    assert "expected an operator" in errors[0].message


def test_a_plain_int_is_the_node_the_parser_would_build() -> None:
    fast = template_of('const T: String = "{0042}";\n').parts[0]
    parsed = template_of('const T: String = "{ 0042}";\n').parts[0]
    assert (type(fast), fast.value) == (type(parsed), parsed.value) == (A.Literal, 42)
