"""String builtins (SPEC §6.2): code-point indexing, clamping, splitting and padding rules."""
from __future__ import annotations

import pytest

from sagepy.builtins import strings as S
from sagepy.core.errors import SageRaise
from sagepy.core.values import NONE, some

B = S.BUILTINS


def test_str_len_and_chars_count_code_points():
    assert B["str_len"]("") == 0
    assert B["str_len"]("héllo") == 5
    assert B["str_len"]("a😀b") == 3
    assert B["chars"]("") == []
    assert B["chars"]("h😀é") == ["h", "😀", "é"]


@pytest.mark.parametrize("s, sep, expected", [
    ("a,b,c", ",", ["a", "b", "c"]),
    ("a,,b,", ",", ["a", "", "b", ""]),
    (",", ",", ["", ""]),
    ("", ",", [""]),
    ("abc", "", ["a", "b", "c"]),
    ("é😀", "", ["é", "😀"]),
    ("", "", []),
    ("a::b::c", "::", ["a", "b", "c"]),
    ("abc", "x", ["abc"]),
])
def test_split(s, sep, expected):
    assert B["split"](s, sep) == expected


@pytest.mark.parametrize("s, expected", [
    ("", []),
    ("a", ["a"]),
    ("a\n", ["a"]),
    ("a\nb", ["a", "b"]),
    ("a\r\nb\r\n", ["a", "b"]),
    ("a\n\nb", ["a", "", "b"]),
    ("a\n\n", ["a", ""]),
    ("\n", [""]),
    ("a\r\r\n", ["a\r"]),
    ("x\ry", ["x\ry"]),
])
def test_lines(s, expected):
    assert B["lines"](s) == expected


def test_join_and_repeat():
    assert B["join"]([], ", ") == ""
    assert B["join"](["a"], ", ") == "a"
    assert B["join"](["a", "b", "c"], ", ") == "a, b, c"
    assert B["join"](["a", "b"], "") == "ab"
    assert B["str_repeat"]("ab", 3) == "ababab"
    assert B["str_repeat"]("ab", 0) == ""
    assert B["str_repeat"]("ab", -2) == ""
    assert B["str_repeat"]("", 5) == ""


def test_trim_is_unicode_aware():
    assert B["trim"]("  \t a b \n") == "a b"
    assert B["trim"]("\u3000\u00a0x\u2003") == "x"
    assert B["trim_start"]("  x  ") == "x  "
    assert B["trim_end"]("  x  ") == "  x"
    assert B["trim"]("") == ""
    assert B["trim"]("   ") == ""
    # U+001F is a control character, not white space.
    assert B["trim"]("\x1fx\x1f") == "\x1fx\x1f"


def test_case_mapping():
    assert B["to_upper"]("héllo") == "HÉLLO"
    assert B["to_lower"]("ÀBC") == "àbc"
    assert B["to_upper"]("straße") == "STRASSE"
    assert B["to_upper"]("") == ""


def test_prefix_suffix_contains():
    assert B["starts_with"]("héllo", "hé") is True
    assert B["starts_with"]("héllo", "he") is False
    assert B["starts_with"]("x", "") is True
    assert B["ends_with"]("héllo", "llo") is True
    assert B["ends_with"]("lo", "hello") is False
    assert B["str_contains"]("a😀b", "😀") is True
    assert B["str_contains"]("abc", "d") is False
    assert B["str_contains"]("", "") is True


def test_str_index_of_counts_code_points():
    assert B["str_index_of"]("héllo", "l") == some(2)
    assert B["str_index_of"]("😀😀x", "x") == some(2)
    assert B["str_index_of"]("abc", "z") == NONE
    assert B["str_index_of"]("abc", "") == some(0)
    assert B["str_index_of"]("", "a") == NONE


def test_replace_all_and_first():
    assert B["replace"]("a-b-c", "-", "+") == "a+b+c"
    assert B["replace_first"]("a-b-c", "-", "+") == "a+b-c"
    assert B["replace"]("abc", "x", "y") == "abc"
    assert B["replace"]("aaa", "aa", "b") == "ba"
    assert B["replace"]("héé", "é", "e") == "hee"
    assert B["replace"]("", "a", "b") == ""


@pytest.mark.parametrize("begin, end, expected", [
    (0, 5, "héllo"),
    (1, 3, "él"),
    (-5, 2, "hé"),
    (3, 100, "lo"),
    (3, 3, ""),
    (4, 2, ""),
    (10, 20, ""),
    (-3, -1, ""),
])
def test_str_slice_clamps(begin, end, expected):
    assert B["str_slice"]("héllo", begin, end) == expected


def test_str_slice_emoji():
    assert B["str_slice"]("a😀b😀c", 1, 4) == "😀b😀"


def test_padding():
    assert B["str_pad_start"]("7", 3, "0") == "007"
    assert B["str_pad_end"]("ab", 7, "xyz") == "abxyzxy"
    assert B["str_pad_start"]("ab", 7, "xyz") == "xyzxyab"
    assert B["str_pad_start"]("long", 2, "0") == "long"
    assert B["str_pad_end"]("four", 4, "-") == "four"
    assert B["str_pad_start"]("x", 5, "") == "x"
    assert B["str_pad_end"]("é", 3, "😀") == "é😀😀"
    assert B["str_pad_start"]("x", -1, "0") == "x"


@pytest.mark.parametrize("s, n, expected", [
    ("hello world", 8, "hello..."),
    ("hello", 5, "hello"),
    ("hello", 10, "hello"),
    ("héllo wörld", 6, "hél..."),
    ("hello", 3, "..."),
    ("hello", 1, "..."),
    ("hello", 0, "..."),
    ("", 0, ""),
    ("", -1, ""),
    ("ab", -1, "..."),
])
def test_str_truncate(s, n, expected):
    assert B["str_truncate"](s, n) == expected


@pytest.mark.parametrize("code, expected", [
    (65, "A"),
    (0xE9, "é"),
    (0x1F600, "😀"),
    (0, "\x00"),
    (0x10FFFF, "\U0010ffff"),
    (-1, "\ufffd"),
    (0x110000, "\ufffd"),
    (0xD800, "\ufffd"),
    (0xDFFF, "\ufffd"),
    (1 << 62, "\ufffd"),
])
def test_chr(code, expected):
    assert B["chr"](code) == expected


def test_builtins_leave_no_name_unmapped():
    assert set(B) == {
        "str_len", "chars", "split", "lines", "join", "str_repeat", "trim", "trim_start", "trim_end",
        "to_upper", "to_lower", "starts_with", "ends_with", "str_contains", "str_index_of", "replace",
        "replace_first", "str_slice", "str_pad_start", "str_pad_end", "str_truncate", "chr",
    }


@pytest.mark.parametrize("name, args, size", [
    ("str_repeat", ("ab", 1 << 62), 1 << 63),
    ("str_pad_start", ("x", 1 << 62, "0"), 1 << 62),
    ("str_pad_end", ("x", (1 << 63) - 1, "ab"), (1 << 63) - 1),
    ("replace", ("a" * 1000, "", "b" * (1 << 21)), 1000 + 1001 * (1 << 21)),
])
def test_impossible_sizes_are_e206_not_python_errors(name, args, size):
    with pytest.raises(SageRaise) as info:
        B[name](*args)
    e = info.value.error
    assert (e.kind, e.code) == ("Runtime", "E206")
    assert e.message == f"invalid argument: {name}: result too large ({size} characters, limit 1073741824)"


def test_out_of_memory_while_building_is_e206():
    with pytest.raises(SageRaise) as info:
        with S.building("str_repeat"):
            raise MemoryError()
    e = info.value.error
    assert (e.code, e.message) == ("E206", "invalid argument: str_repeat: result does not fit in memory")
