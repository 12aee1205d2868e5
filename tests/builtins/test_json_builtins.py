"""JSON builtins (SPEC §6.7) called as the interpreter calls them, and their stdlib declarations."""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sagepy.builtins.json_ import BUILTINS
from sagepy.core.errors import SageRaise
from sagepy.core.values import NONE, Function, Record, Variant, some
from sagepy.core.types import INT, STRING, ListT, MapT, OptionT, RecordInfo, RecordT

STDLIB = Path(__file__).resolve().parents[2] / "stdlib"

USER = RecordT(RecordInfo("User", [], [("name", STRING), ("age", INT), ("email", OptionT(STRING))]))


def call(name, *args):
    return BUILTINS[name](*args)


def raised(name, *args):
    with pytest.raises(SageRaise) as info:
        call(name, *args)
    e = info.value.error
    return (e.kind, e.message, e.code)


def tagged(v):
    """Value with Python types made visible (True == 1 and 3 == 3.0 in Python)."""
    if isinstance(v, Variant):
        return (v.enum, v.name, None if v.payload is None else tagged(v.payload))
    if isinstance(v, list):
        return [tagged(x) for x in v]
    return (type(v).__name__, v)


def test_builtin_names():
    assert set(BUILTINS) == {"json_parse", "json_decode", "json_stringify", "json_get", "json_get_int",
                             "json_get_float", "json_get_bool", "json_get_list", "json_escape"}


# ---------------------------------------------------------------- json_parse

def test_json_parse_returns_the_text_unchanged():
    text = ' { "a" : [1, 2] } '
    assert call("json_parse", text) is text


@pytest.mark.parametrize("text, message", [
    ("{", "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ("[1,]", "invalid JSON: Expecting value at line 1 column 4"),
    ('{"a": 1,}', "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 9"),
    ("NaN", "invalid JSON: NaN is not allowed in JSON"),
    ("", "invalid JSON: Expecting value at line 1 column 1"),
])
def test_json_parse_rejects(text, message):
    assert raised("json_parse", text) == ("Runtime", message, None)


# ---------------------------------------------------------------- json_decode

def test_json_decode_record():
    value = call("json_decode", '{"name": "Ada", "age": 36, "admin": true}', USER)
    assert value == Record("User", {"name": "Ada", "age": 36, "email": NONE})


def test_json_decode_int_is_an_int():
    assert tagged(call("json_decode", "7.0", INT)) == ("int", 7)


def test_json_decode_map_with_int_keys():
    value = call("json_decode", '{"1": "a", "-2": "b"}', MapT(INT, STRING))
    assert list(value.items()) == [(1, "a"), (-2, "b")]


def test_json_decode_conversion_failure_is_e207():
    assert raised("json_decode", '[1, "x"]', ListT(INT)) == (
        "Runtime", 'cannot decode JSON as List<Int>: expected Int at $[1], got "x"', "E207")


def test_json_decode_true_is_not_an_int():
    assert raised("json_decode", "true", INT) == (
        "Runtime", "cannot decode JSON as Int: expected Int at $, got true", "E207")


def test_json_decode_missing_field():
    assert raised("json_decode", '{"name": "Ada"}', USER) == (
        "Runtime", "cannot decode JSON as User: expected Int at $.age: field missing from User", "E207")


def test_json_decode_invalid_json():
    assert raised("json_decode", "{oops}", USER) == (
        "Runtime", "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 2", None)


def test_json_decode_error_display():
    with pytest.raises(SageRaise) as info:
        call("json_decode", "1.5", INT)
    assert info.value.error.display() == (
        "Runtime error: cannot decode JSON as Int: expected Int at $, got 1.5: not an integral number")


# ---------------------------------------------------------------- json_stringify

@pytest.mark.parametrize("value, text", [
    ("hi", '"hi"'),
    (1, "1"),
    (True, "true"),
    (2.5, "2.5"),
    ([1, 2], "[1,2]"),
    ({3: "é"}, '{"3":"é"}'),
    (Record("User", {"name": "Ada", "age": 36, "email": NONE}), '{"name":"Ada","age":36}'),
    (Record("User", {"name": "A", "age": 1, "email": some("a@b")}), '{"name":"A","age":1,"email":"a@b"}'),
    (Variant("Color", "Red"), '"Red"'),
    (NONE, "null"),
])
def test_json_stringify(value, text):
    assert call("json_stringify", value) == text


def test_json_stringify_nan_is_e207():
    assert raised("json_stringify", [math.nan]) == (
        "Runtime",
        "cannot convert value to JSON: expected a finite Float at $[0], got NaN: NaN and infinities have no JSON form",
        "E207")


def test_json_stringify_function_is_e207():
    kind, message, code = raised("json_stringify", Function(None, lambda: 1))
    assert (kind, code) == ("Runtime", "E207")
    assert message.startswith("cannot convert value to JSON: expected a JSON-convertible value at $, got <closure>")


# ---------------------------------------------------------------- json_get family

DOC = '{"s": "text", "n": 3, "f": 3.5, "i": 3.0, "b": true, "z": null, "o": {"k": [1, 2]}, ' \
      '"l": ["a", 1, {"b": null}, [true]], "big": 9223372036854775808, "e": []}'


@pytest.mark.parametrize("key, expected", [
    ("s", some("text")),
    ("n", some("3")),
    ("f", some("3.5")),
    ("b", some("true")),
    ("z", some("null")),
    ("o", some('{"k":[1,2]}')),
    ("missing", NONE),
    ("k", NONE),
])
def test_json_get(key, expected):
    assert tagged(call("json_get", DOC, key)) == tagged(expected)


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"s"', "3"])
def test_json_get_needs_an_object(text):
    assert call("json_get", text, "s") == NONE


@pytest.mark.parametrize("key, expected", [
    ("n", some(3)),
    ("i", some(3)),
    ("f", NONE),
    ("b", NONE),
    ("s", NONE),
    ("z", NONE),
    ("big", NONE),
    ("missing", NONE),
])
def test_json_get_int(key, expected):
    assert tagged(call("json_get_int", DOC, key)) == tagged(expected)


@pytest.mark.parametrize("key, expected", [
    ("f", some(3.5)),
    ("n", some(3.0)),
    ("b", NONE),
    ("s", NONE),
    ("missing", NONE),
])
def test_json_get_float(key, expected):
    assert tagged(call("json_get_float", DOC, key)) == tagged(expected)


@pytest.mark.parametrize("key, expected", [
    ("b", some(True)),
    ("n", NONE),
    ("s", NONE),
    ("missing", NONE),
])
def test_json_get_bool(key, expected):
    assert tagged(call("json_get_bool", DOC, key)) == tagged(expected)


def test_json_get_bool_of_false():
    assert tagged(call("json_get_bool", '{"b": false}', "b")) == tagged(some(False))


@pytest.mark.parametrize("key, expected", [
    ("l", some(["a", "1", '{"b":null}', "[true]"])),
    ("e", some([])),
    ("o", NONE),
    ("s", NONE),
    ("missing", NONE),
])
def test_json_get_list(key, expected):
    assert tagged(call("json_get_list", DOC, key)) == tagged(expected)


@pytest.mark.parametrize("name", ["json_get_int", "json_get_float", "json_get_bool", "json_get_list"])
def test_typed_getters_on_invalid_json(name):
    assert call(name, "{", "n") == NONE


# ---------------------------------------------------------------- json_escape

def test_json_escape():
    assert call("json_escape", 'a"b\\c\n\t\r\x01é') == 'a\\"b\\\\c\\n\\t\\r\\u0001é'


def test_json_escape_plain_text_unchanged():
    assert call("json_escape", "plain text") == "plain text"


# ---------------------------------------------------------------- stdlib declarations

def _externs(path: Path) -> dict[str, str]:
    decls = re.findall(r"^extern fn (\w+)([^;]*);", path.read_text(encoding="utf-8"), re.MULTILINE)
    return dict(decls)


def test_stdlib_declares_every_json_builtin():
    decls = _externs(STDLIB / "json.sg")
    assert set(decls) == set(BUILTINS)
    assert {n for n, rest in decls.items() if rest.rstrip().endswith("fails")} == {"json_parse", "json_decode"}
    assert decls["json_decode"].startswith("<T>(s: String) -> T")


def test_stdlib_declares_every_mcp_builtin():
    decls = _externs(STDLIB / "mcp.sg")
    assert set(decls) == {"mcp_connect", "mcp_list_tools", "mcp_tools", "mcp_server_info", "mcp_connection",
                          "mcp_call", "mcp_disconnect", "mcp_resources", "mcp_resource_templates",
                          "mcp_read_resource", "mcp_prompts", "mcp_get_prompt"}
    assert {n for n, rest in decls.items() if not rest.rstrip().endswith("fails")} == {"mcp_connection"}


def test_importing_the_json_builtins_does_not_load_the_converter():
    # Every builtin family is imported at start-up; the §5 converter must wait for the first JSON call.
    code = ("import sys, sagepy.builtins.json_ as j; assert 'sagepy.core.convert' not in sys.modules; "
            "j.json_escape('x'); assert 'sagepy.core.convert' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


@pytest.mark.parametrize("msg, doc, pos, reason", [
    ("Illegal trailing comma before end of array", "[1, ]", 2, "Expecting value at line 1 column 5"),
    ("Illegal trailing comma before end of object", '{"a": 1,\n }', 7,
     "Expecting property name enclosed in double quotes at line 2 column 2"),
    ("Expecting value", "[1,]", 3, "Expecting value at line 1 column 4"),
])
def test_json_reasons_are_the_same_on_every_python(msg, doc, pos, reason):
    """Python 3.13 reports a trailing comma in its own words, at the comma; sagepy keeps one text."""
    import json

    from sagepy.core.json_text import decode_reason
    assert decode_reason(json.JSONDecodeError(msg, doc, pos)) == reason
