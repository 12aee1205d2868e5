"""The §5 mapping: Sage values <-> JSON data, JSON Schema of types, type defaults, strict JSON parsing."""
from __future__ import annotations

import math

import jsonschema
import pytest

from sagepy.core.convert import ConversionError, default_value, fitted_json, from_json, json_schema, to_json
from sagepy.core.json_text import compact_json, parse_json
from sagepy.core.values import NONE, UNIT, ErrorValue, Function, Record, Variant, err, ok, some
from sagepy.core.types import (
    BOOL,
    ERROR,
    FLOAT,
    INT,
    STRING,
    AgentT,
    EnumInfo,
    EnumT,
    FnT,
    ListT,
    MapT,
    OptionT,
    RecordInfo,
    RecordT,
    ResultT,
    TupleT,
    TypeVar,
)
from sagepy.core.types import UNIT as UNIT_T

INT_MAX = (1 << 63) - 1
INT_MIN = -(1 << 63)

POINT = RecordT(RecordInfo("Point", [], [("x", INT), ("y", INT)]))
ITEM = RecordT(RecordInfo("Item", [], [("id", INT), ("note", OptionT(STRING)), ("tags", ListT(STRING))]))
ORDER = RecordT(RecordInfo("Order", [], [("items", ListT(ITEM))]))
COLOR = EnumT(EnumInfo("Color", [], [("Red", None), ("Green", None), ("Blue", None)]))
SHAPE = EnumT(EnumInfo("Shape", [], [("Empty", None), ("Circle", FLOAT), ("Rect", TupleT([FLOAT, FLOAT]))]))
PAIR_INFO = RecordInfo("Pair", ["A", "B"], [("first", TypeVar("A")), ("second", TypeVar("B"))])
PAIR = RecordT(PAIR_INFO, [INT, STRING])
MAYBE = EnumT(EnumInfo("Maybe", ["T"], [("Nothing", None), ("Just", TypeVar("T"))]), [BOOL])


def _tree() -> EnumT:
    # enum Tree { Node((Tree, Tree)), Leaf(Int) }: the first variant contains the type itself.
    info = EnumInfo("Tree", [], [])
    tree = EnumT(info)
    info.variants = [("Node", TupleT([tree, tree])), ("Leaf", INT)]
    return tree


def _linked() -> RecordT:
    # record Node { value: Int, next: Option<Node> }
    info = RecordInfo("Node", [], [])
    node = RecordT(info)
    info.fields = [("value", INT), ("next", OptionT(node))]
    return node


def _list_of(elem):
    # enum L<T> { Nil, Cons((T, L<T>)) } instantiated at elem
    info = EnumInfo("L", ["T"], [])
    info.variants = [("Nil", None), ("Cons", TupleT([TypeVar("T"), EnumT(info, [TypeVar("T")])]))]
    return EnumT(info, [elem])


TREE = _tree()
NODE = _linked()


def canon(v):
    """A fully tagged form of a Sage value, so that 1, 1.0 and true, or lists and tuples, never compare
    equal (Python's == would call them equal)."""
    t = type(v)
    if t is list or t is tuple:
        return (t.__name__, [canon(x) for x in v])
    if t is dict:
        return ("dict", [(canon(k), canon(x)) for k, x in v.items()])
    if t is Variant:
        return ("variant", v.enum, v.name, None if v.payload is None else canon(v.payload))
    if t is Record:
        return ("record", v.name, canon(v.fields))
    if t is ErrorValue:
        return ("error", v.kind, v.message)
    if v is UNIT:
        return ("unit",)
    return (t.__name__, v)


def json_canon(d):
    """Tagged form of JSON data for the same reason (True == 1 in Python)."""
    t = type(d)
    if t is list:
        return ("list", [json_canon(x) for x in d])
    if t is dict:
        return ("dict", [(k, json_canon(x)) for k, x in d.items()])
    return (t.__name__, d)


def leaf(n):
    return Variant("Tree", "Leaf", n)


def node(a, b):
    return Variant("Tree", "Node", (a, b))


def item(i, note, tags):
    return Record("Item", {"id": i, "note": note, "tags": tags})


ROUND_TRIPS = [
    ("int", 42, INT, 42),
    ("negative int", -7, INT, -7),
    ("int max", INT_MAX, INT, INT_MAX),
    ("int min", INT_MIN, INT, INT_MIN),
    ("float", 1.5, FLOAT, 1.5),
    ("integral float", 2.0, FLOAT, 2.0),
    ("bool", True, BOOL, True),
    ("false", False, BOOL, False),
    ("string", 'héllo "q"\n', STRING, 'héllo "q"\n'),
    ("unit", UNIT, UNIT_T, None),
    ("list", [1, 2, 3], ListT(INT), [1, 2, 3]),
    ("empty list", [], ListT(STRING), []),
    ("string map", {"a": 1, "b": 2}, MapT(STRING, INT), {"a": 1, "b": 2}),
    ("int map", {12: "x", -3: "y"}, MapT(INT, STRING), {"12": "x", "-3": "y"}),
    ("bool map", {True: 1, False: 0}, MapT(BOOL, INT), {"true": 1, "false": 0}),
    ("some", some(3), OptionT(INT), 3),
    ("none", NONE, OptionT(INT), None),
    ("ok", ok(1), ResultT(INT, STRING), {"Ok": 1}),
    ("err", err("bad"), ResultT(INT, STRING), {"Err": "bad"}),
    ("ok unit", ok(UNIT), ResultT(UNIT_T, STRING), {"Ok": None}),
    ("tuple", (1, "a", True), TupleT([INT, STRING, BOOL]), [1, "a", True]),
    ("record", Record("Point", {"x": 1, "y": -2}), POINT, {"x": 1, "y": -2}),
    ("record with none", item(1, NONE, ["a"]), ITEM, {"id": 1, "tags": ["a"]}),
    ("record with some", item(2, some("n"), []), ITEM, {"id": 2, "note": "n", "tags": []}),
    ("nested records", Record("Order", {"items": [item(1, NONE, []), item(2, some("x"), ["t"])]}), ORDER,
     {"items": [{"id": 1, "tags": []}, {"id": 2, "note": "x", "tags": ["t"]}]}),
    ("unit variant", Variant("Color", "Green"), COLOR, "Green"),
    ("payload-free variant of mixed enum", Variant("Shape", "Empty"), SHAPE, "Empty"),
    ("payload variant", Variant("Shape", "Circle", 1.5), SHAPE, {"Circle": 1.5}),
    ("tuple payload", Variant("Shape", "Rect", (1.0, 2.0)), SHAPE, {"Rect": [1.0, 2.0]}),
    ("error", ErrorValue("Tool", "refused"), ERROR, {"kind": "Tool", "message": "refused"}),
    ("generic record", Record("Pair", {"first": 1, "second": "s"}), PAIR, {"first": 1, "second": "s"}),
    ("generic enum", Variant("Maybe", "Just", False), MAYBE, {"Just": False}),
    ("recursive enum", node(leaf(1), node(leaf(2), leaf(3))), TREE,
     {"Node": [{"Leaf": 1}, {"Node": [{"Leaf": 2}, {"Leaf": 3}]}]}),
    ("recursive record", Record("Node", {"value": 1, "next": some(Record("Node", {"value": 2, "next": NONE}))}),
     NODE, {"value": 1, "next": {"value": 2}}),
    ("list of options", [some(1), NONE], ListT(OptionT(INT)), [1, None]),
    ("map of options keeps null", {"a": NONE}, MapT(STRING, OptionT(INT)), {"a": None}),
    ("result in option", some(err(ErrorValue("User", "x"))), OptionT(ResultT(INT, ERROR)),
     {"Err": {"kind": "User", "message": "x"}}),
]


@pytest.mark.parametrize("value, t, data", [c[1:] for c in ROUND_TRIPS], ids=[c[0] for c in ROUND_TRIPS])
def test_round_trip(value, t, data):
    assert json_canon(to_json(value)) == json_canon(data)
    assert canon(from_json(data, t)) == canon(value)
    # The text form survives too: what json_stringify writes, json_decode reads back.
    assert canon(from_json(parse_json(compact_json(to_json(value))), t)) == canon(value)


@pytest.mark.parametrize("value, t, data", [c[1:] for c in ROUND_TRIPS], ids=[c[0] for c in ROUND_TRIPS])
def test_round_trip_data_fits_schema(value, t, data):
    jsonschema.Draft202012Validator(json_schema(t)).validate(to_json(value))


# ---------------------------------------------------------------- JSON -> Sage, accepted forms

def test_int_accepts_integral_float():
    assert canon(from_json(3.0, INT)) == ("int", 3)
    assert canon(from_json(-0.0, INT)) == ("int", 0)
    assert canon(from_json(-9.223372036854775808e18, INT)) == ("int", INT_MIN)


def test_float_accepts_integer():
    assert canon(from_json(3, FLOAT)) == ("float", 3.0)


def test_unit_accepts_anything():
    for data in ({"any": 1}, [1, 2], "x", 0, None, True):
        assert from_json(data, UNIT_T) is UNIT


def test_record_ignores_extra_keys_and_defaults_missing_options():
    value = from_json({"tags": ["a"], "id": 5, "extra": [1, 2]}, ITEM)
    # Fields come in declaration order, whatever the JSON order.
    assert canon(value) == canon(item(5, NONE, ["a"]))
    assert list(value.fields) == ["id", "note", "tags"]


def test_record_null_option_field_is_none():
    assert canon(from_json({"id": 1, "note": None, "tags": []}, ITEM)) == canon(item(1, NONE, []))


def test_option_of_option_null_is_none():
    assert canon(from_json(None, OptionT(OptionT(INT)))) == canon(NONE)
    assert canon(from_json(4, OptionT(OptionT(INT)))) == canon(some(some(4)))


def test_python_tuples_count_as_arrays():
    assert canon(from_json((1, 2), ListT(INT))) == canon([1, 2])
    assert canon(from_json((1, "a"), TupleT([INT, STRING]))) == canon((1, "a"))


def test_native_map_keys_from_python_externs():
    assert canon(from_json({7: "x"}, MapT(INT, STRING))) == canon({7: "x"})
    assert canon(from_json({True: 1}, MapT(BOOL, INT))) == canon({True: 1})


def test_map_int_keys_parse():
    value = from_json({"0": True, "-15": False, str(INT_MAX): True}, MapT(INT, BOOL))
    assert canon(value) == canon({0: True, -15: False, INT_MAX: True})


def test_error_value_has_given_kind_and_message():
    e = from_json({"kind": "Llm", "message": "down", "extra": 1}, ERROR)
    assert (type(e), e.kind, e.message, e.display()) == (ErrorValue, "Llm", "down", "LLM error: down")


def test_generic_record_substitutes_arguments():
    with pytest.raises(ConversionError) as info:
        from_json({"first": "1", "second": "s"}, PAIR)
    assert (info.value.path, info.value.expected) == ("$.first", "Int")


# ---------------------------------------------------------------- JSON -> Sage, failures

FAILURES = [
    # (id, data, type, path, expected, value, reason)
    ("string for int", "x", INT, "$", "Int", '"x"', ""),
    ("true for int", True, INT, "$", "Int", "true", ""),
    ("false for float", False, FLOAT, "$", "Float", "false", ""),
    ("one for bool", 1, BOOL, "$", "Bool", "1", ""),
    ("zero for bool", 0, BOOL, "$", "Bool", "0", ""),
    ("number for string", 1, STRING, "$", "String", "1", ""),
    ("null for string", None, STRING, "$", "String", "null", ""),
    ("fractional int", 3.5, INT, "$", "Int", "3.5", "not an integral number"),
    ("int above range", 1 << 63, INT, "$", "Int", str(1 << 63), "out of the 64-bit Int range"),
    ("int below range", INT_MIN - 1, INT, "$", "Int", str(INT_MIN - 1), "out of the 64-bit Int range"),
    ("float above int range", 9.3e18, INT, "$", "Int", "9.3e+18", "out of the 64-bit Int range"),
    ("2^63 as float", 9.223372036854775808e18, INT, "$", "Int", "9.223372036854776e+18",
     "out of the 64-bit Int range"),
    ("huge int for float", 10 ** 400, FLOAT, "$", "Float", str(10 ** 400)[:199] + "…", "out of the Float range"),
    ("object for list", {"a": 1}, ListT(INT), "$", "List<Int>", '{"a":1}', ""),
    ("list element", [1, "x"], ListT(INT), "$[1]", "Int", '"x"', ""),
    ("bool list element", [1, True], ListT(INT), "$[1]", "Int", "true", ""),
    ("deep path", {"items": [{"id": 1, "tags": []}, {"id": 2, "tags": []}, {"id": "3", "tags": []}]}, ORDER,
     "$.items[2].id", "Int", '"3"', ""),
    ("missing field", {"items": [{"tags": []}]}, ORDER, "$.items[0].id", "Int", None, "field missing from Item"),
    ("null for required field", {"id": None, "tags": []}, ITEM, "$.id", "Int", "null", ""),
    ("wrong option field", {"id": 1, "note": 5, "tags": []}, ITEM, "$.note", "String", "5", ""),
    ("array for record", [1], POINT, "$", "Point", "[1]", ""),
    ("generic record", "x", PAIR, "$", "Pair<Int, String>", '"x"', ""),
    ("tuple too long", [1, 2, 3], TupleT([INT, INT]), "$", "(Int, Int)", "[1,2,3]", "needs exactly 2 elements"),
    ("tuple too short", [1], TupleT([INT, INT]), "$", "(Int, Int)", "[1]", "needs exactly 2 elements"),
    ("tuple element", [1, "b"], TupleT([INT, INT]), "$[1]", "Int", '"b"', ""),
    ("object for tuple", {}, TupleT([INT, INT]), "$", "(Int, Int)", "{}", ""),
    ("int key", {"x": "a"}, MapT(INT, STRING), "$.x", "Int", '"x"', "map key does not parse as Int"),
    ("non-canonical int key", {"007": "a"}, MapT(INT, STRING), '$["007"]', "Int", '"007"',
     "map key does not parse as Int"),
    ("int key out of range", {"99999999999999999999": 1}, MapT(INT, INT), '$["99999999999999999999"]', "Int",
     '"99999999999999999999"', "map key out of the 64-bit Int range"),
    ("bool key", {"yes": 1}, MapT(BOOL, INT), "$.yes", "Bool", '"yes"', "map key does not parse as Bool"),
    ("map value path", {"a b": "x"}, MapT(STRING, INT), '$["a b"]', "Int", '"x"', ""),
    ("list for map", [], MapT(STRING, INT), "$", "Map<String, Int>", "[]", ""),
    ("option inner", "x", OptionT(INT), "$", "Int", '"x"', ""),
    ("result both keys", {"Ok": 1, "Err": "x"}, ResultT(INT, STRING), "$", "Result<Int, String>",
     '{"Ok":1,"Err":"x"}', 'needs an object with the single key "Ok" or "Err"'),
    ("result lower case", {"ok": 1}, ResultT(INT, STRING), "$", "Result<Int, String>", '{"ok":1}',
     'needs an object with the single key "Ok" or "Err"'),
    ("result payload", {"Ok": "x"}, ResultT(INT, STRING), "$.Ok", "Int", '"x"', ""),
    ("err payload", {"Err": 3}, ResultT(INT, STRING), "$.Err", "String", "3", ""),
    ("unknown variant", "Purple", COLOR, "$", "Color", '"Purple"', 'unknown variant; one of "Red", "Green", "Blue"'),
    ("unknown payload variant", {"Square": 1}, SHAPE, "$", "Shape", '{"Square":1}',
     'unknown variant; one of "Empty", {"Circle": …}, {"Rect": …}'),
    ("payload of wrong type", {"Circle": "big"}, SHAPE, "$.Circle", "Float", '"big"', ""),
    ("payload variant as string", "Circle", SHAPE, "$", "Shape", '"Circle"',
     'variant Circle carries a payload: write {"Circle": …}'),
    ("unit variant as object", {"Empty": None}, SHAPE, "$", "Shape", '{"Empty":null}',
     'variant Empty has no payload: write "Empty"'),
    ("number for enum", 5, SHAPE, "$", "Shape", "5", 'one of "Empty", {"Circle": …}, {"Rect": …}'),
    ("two keys for enum", {"Circle": 1.0, "Empty": None}, SHAPE, "$", "Shape", '{"Circle":1.0,"Empty":null}',
     'one of "Empty", {"Circle": …}, {"Rect": …}'),
    ("recursive payload", {"Node": [{"Leaf": 1}, {"Leaf": "x"}]}, TREE, "$.Node[1].Leaf", "Int", '"x"', ""),
    ("error without message", {"kind": "Tool"}, ERROR, "$", "Error", '{"kind":"Tool"}',
     'needs string fields "kind" and "message"'),
    ("string for error", "boom", ERROR, "$", "Error", '"boom"', 'needs string fields "kind" and "message"'),
    ("type variable", 1, TypeVar("T"), "$", "T", None, "type parameter T is not resolved"),
    ("function type", 1, FnT([INT], INT), "$", "Fn(Int) -> Int", None,
     "functions, agents and type variables have no JSON form"),
    ("agent type in record", {"a": 1}, RecordT(RecordInfo("H", [], [("a", AgentT("W"))])), "$.a", "Agent<W>", None,
     "functions, agents and type variables have no JSON form"),
]


@pytest.mark.parametrize("data, t, path, expected, value, reason", [c[1:] for c in FAILURES],
                         ids=[c[0] for c in FAILURES])
def test_conversion_failure(data, t, path, expected, value, reason):
    with pytest.raises(ConversionError) as info:
        from_json(data, t)
    e = info.value
    assert (e.path, e.expected, e.value, e.reason) == (path, expected, value, reason)


# ---------------------------------------------------------------- JSON -> JSON: fitted_json

FITTED = [(data, t) for _, _, t, data in ROUND_TRIPS] + [
    ({"tags": ["a"], "id": 5, "extra": [1, 2], "note": None}, ITEM),
    ({"id": 5.0, "note": "n", "tags": []}, ITEM),
    (3, FLOAT), (3.0, INT), ({"any": 1}, UNIT_T), ((1, "a"), TupleT([INT, STRING])),
    ({7: "x"}, MapT(INT, STRING)), ({"0": [1, 2]}, MapT(INT, ListT(FLOAT))), (4, OptionT(OptionT(INT))),
    ({"kind": "Llm", "message": "down", "extra": 1}, ERROR), ({"Ok": {"Circle": 2}}, ResultT(SHAPE, STRING)),
    ([{"value": 1, "next": None}], ListT(NODE)), (float("nan"), FLOAT), ({"x": {"y": float("inf")}},
                                                                         MapT(STRING, MapT(STRING, FLOAT))),
]


@pytest.mark.parametrize("data, t", FITTED + [c[1:3] for c in FAILURES])
def test_fitted_json_is_to_json_of_from_json_in_one_walk(data, t):
    """Same JSON, same key order, same failure (path, expected type, value, reason) as the two walks."""
    try:
        expected = ("ok", to_json(from_json(data, t)))
    except ConversionError as exc:
        expected = ("failed", str(exc), exc.path, exc.expected, exc.value, exc.reason)
    try:
        got = ("ok", fitted_json(data, t))
    except ConversionError as exc:
        got = ("failed", str(exc), exc.path, exc.expected, exc.value, exc.reason)
    assert got == expected
    if got[0] == "ok":
        assert compact_json(got[1]) == compact_json(expected[1])


def test_failure_sentence_names_path_type_and_value():
    with pytest.raises(ConversionError) as info:
        from_json({"items": [{"id": "3", "tags": []}]}, ORDER)
    assert str(info.value) == 'expected Int at $.items[0].id, got "3"'


def test_failure_sentence_with_reason():
    with pytest.raises(ConversionError) as info:
        from_json(3.5, INT)
    assert str(info.value) == "expected Int at $, got 3.5: not an integral number"


def test_failure_sentence_without_value():
    with pytest.raises(ConversionError) as info:
        from_json({}, POINT)
    assert str(info.value) == "expected Int at $.x: field missing from Point"


def test_offending_value_is_truncated_to_200_characters():
    with pytest.raises(ConversionError) as info:
        from_json("a" * 500, INT)
    value = info.value.value
    assert len(value) == 200
    assert value == '"' + "a" * 198 + "…"


def test_short_value_is_not_truncated():
    with pytest.raises(ConversionError) as info:
        from_json("a" * 100, INT)
    assert info.value.value == '"' + "a" * 100 + '"'


def test_non_json_python_value_is_rendered_with_repr():
    with pytest.raises(ConversionError) as info:
        from_json({1, 2}, ListT(INT))
    assert info.value.value == "{1, 2}"


# ---------------------------------------------------------------- Sage -> JSON specifics

def test_bool_is_not_an_int():
    assert json_canon(to_json([True, 1, 1.0])) == ("list", [("bool", True), ("int", 1), ("float", 1.0)])


def test_bool_map_key_is_true_not_one():
    assert to_json({True: 1, False: 2}) == {"true": 1, "false": 2}
    assert to_json({1: True, 0: False}) == {"1": True, "0": False}


def test_tuple_becomes_list():
    assert type(to_json((1, 2))) is list


def test_record_keeps_field_order_and_omits_only_none():
    value = Record("R", {"b": NONE, "a": some(UNIT), "c": UNIT, "d": some(NONE)})
    data = to_json(value)
    assert list(data.items()) == [("a", None), ("c", None), ("d", None)]


def test_record_none_is_omitted_also_when_nested():
    value = Record("Order", {"items": [item(1, NONE, [])]})
    assert to_json(value) == {"items": [{"id": 1, "tags": []}]}


def _to_json_failure(value):
    with pytest.raises(ConversionError) as info:
        to_json(value)
    e = info.value
    return (e.path, e.expected, e.value, e.reason)


def test_nan_fails_with_path():
    assert _to_json_failure([1.0, math.nan]) == (
        "$[1]", "a finite Float", "NaN", "NaN and infinities have no JSON form")


def test_infinity_in_record_field_fails():
    assert _to_json_failure(Record("P", {"x": 1.0, "y": -math.inf})) == (
        "$.y", "a finite Float", "-inf", "NaN and infinities have no JSON form")


def test_infinity_in_payload_fails():
    assert _to_json_failure(Variant("Shape", "Circle", math.inf))[0] == "$.Circle"
    assert _to_json_failure(ok(math.inf))[0] == "$.Ok"


def test_function_fails():
    f = Function("double", lambda x: x * 2)
    assert _to_json_failure({"f": f}) == (
        "$.f", "a JSON-convertible value", "<fn double>", "functions and agents have no JSON form")


def test_agent_handle_fails():
    class Handle:
        display_name = "Worker#1"

    assert _to_json_failure([Handle()]) == (
        "$[0]", "a JSON-convertible value", "<agent Worker#1>", "functions and agents have no JSON form")


def test_error_value_message_is_without_display_prefix():
    assert to_json(ErrorValue("Runtime", "division by zero", "E201")) == {
        "kind": "Runtime", "message": "division by zero"}


# ---------------------------------------------------------------- JSON Schema

S_INT = {"type": "integer"}
S_STR = {"type": "string"}


@pytest.mark.parametrize("t, schema", [
    (INT, {"type": "integer"}),
    (FLOAT, {"type": "number"}),
    (BOOL, {"type": "boolean"}),
    (STRING, {"type": "string"}),
    (UNIT_T, {"type": "null"}),
    (ListT(INT), {"type": "array", "items": S_INT}),
    (MapT(STRING, INT), {"type": "object", "additionalProperties": S_INT}),
    (MapT(INT, BOOL), {"type": "object", "additionalProperties": {"type": "boolean"}}),
    (MapT(BOOL, STRING), {"type": "object", "additionalProperties": S_STR}),
    (OptionT(STRING), {"anyOf": [S_STR, {"type": "null"}]}),
    (TupleT([INT, STRING]), {"type": "array", "prefixItems": [S_INT, S_STR], "minItems": 2, "maxItems": 2}),
    (ERROR, {"type": "object", "properties": {"kind": S_STR, "message": S_STR}, "required": ["kind", "message"]}),
    (COLOR, {"type": "string", "enum": ["Red", "Green", "Blue"]}),
], ids=lambda x: repr(x) if not isinstance(x, dict) else "")
def test_simple_schemas(t, schema):
    assert json_schema(t) == schema


def test_result_schema():
    assert json_schema(ResultT(INT, STRING)) == {"oneOf": [
        {"type": "object", "properties": {"Ok": S_INT}, "required": ["Ok"], "additionalProperties": False},
        {"type": "object", "properties": {"Err": S_STR}, "required": ["Err"], "additionalProperties": False},
    ]}


def test_record_schema_requires_non_option_fields():
    assert json_schema(ITEM) == {
        "type": "object",
        "properties": {
            "id": S_INT,
            "note": {"anyOf": [S_STR, {"type": "null"}]},
            "tags": {"type": "array", "items": S_STR},
        },
        "required": ["id", "tags"],
    }


def test_record_with_only_option_fields_has_empty_required():
    t = RecordT(RecordInfo("Opts", [], [("a", OptionT(INT))]))
    assert json_schema(t) == {
        "type": "object", "properties": {"a": {"anyOf": [S_INT, {"type": "null"}]}}, "required": []}


def test_mixed_enum_schema():
    assert json_schema(SHAPE) == {"oneOf": [
        {"type": "string", "const": "Empty"},
        {"type": "object", "properties": {"Circle": {"type": "number"}}, "required": ["Circle"],
         "additionalProperties": False},
        {"type": "object", "properties": {"Rect": {
            "type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2, "maxItems": 2}},
         "required": ["Rect"], "additionalProperties": False},
    ]}


def test_generic_record_schema():
    assert json_schema(PAIR) == {
        "type": "object", "properties": {"first": S_INT, "second": S_STR}, "required": ["first", "second"]}


def test_non_recursive_record_used_twice_is_inlined_twice():
    t = TupleT([POINT, POINT])
    point = {"type": "object", "properties": {"x": S_INT, "y": S_INT}, "required": ["x", "y"]}
    assert json_schema(t) == {"type": "array", "prefixItems": [point, point], "minItems": 2, "maxItems": 2}


TREE_BODY = {"oneOf": [
    {"type": "object", "properties": {"Node": {
        "type": "array", "prefixItems": [{"$ref": "#/$defs/Tree"}, {"$ref": "#/$defs/Tree"}],
        "minItems": 2, "maxItems": 2}}, "required": ["Node"], "additionalProperties": False},
    {"type": "object", "properties": {"Leaf": S_INT}, "required": ["Leaf"], "additionalProperties": False},
]}


def test_recursive_enum_schema_uses_defs():
    assert json_schema(TREE) == {**TREE_BODY, "$defs": {"Tree": TREE_BODY}}


def test_recursive_type_inside_a_list():
    assert json_schema(ListT(TREE)) == {
        "type": "array", "items": {"$ref": "#/$defs/Tree"}, "$defs": {"Tree": TREE_BODY}}


def test_recursive_record_schema():
    body = {"type": "object",
            "properties": {"value": S_INT, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
            "required": ["value"]}
    assert json_schema(NODE) == {**body, "$defs": {"Node": body}}


def test_generic_recursive_enum_def_name():
    body = {"oneOf": [
        {"type": "string", "const": "Nil"},
        {"type": "object", "properties": {"Cons": {
            "type": "array", "prefixItems": [S_INT, {"$ref": "#/$defs/L_Int"}], "minItems": 2, "maxItems": 2}},
         "required": ["Cons"], "additionalProperties": False},
    ]}
    assert json_schema(_list_of(INT)) == {**body, "$defs": {"L_Int": body}}


def test_mutually_recursive_records():
    a_info = RecordInfo("A", [], [])
    b_info = RecordInfo("B", [], [])
    a, b = RecordT(a_info), RecordT(b_info)
    a_info.fields = [("b", OptionT(b))]
    b_info.fields = [("a", ListT(a))]
    # Only A contains itself (through B); B is inlined inside A's definition.
    a_body = {"type": "object", "properties": {"b": {"anyOf": [
        {"type": "object", "properties": {"a": {"type": "array", "items": {"$ref": "#/$defs/A"}}},
         "required": ["a"]},
        {"type": "null"}]}}, "required": []}
    assert json_schema(a) == {**a_body, "$defs": {"A": a_body}}


def test_two_recursive_types_with_one_name_get_distinct_defs():
    other = _tree()
    schema = json_schema(TupleT([TREE, other]))
    assert schema["prefixItems"] == [{"$ref": "#/$defs/Tree"}, {"$ref": "#/$defs/Tree_2"}]
    assert set(schema["$defs"]) == {"Tree", "Tree_2"}


def test_recursive_schema_validates_documents():
    validator = jsonschema.Draft202012Validator(json_schema(TREE))
    validator.validate({"Node": [{"Leaf": 1}, {"Node": [{"Leaf": 2}, {"Leaf": 3}]}]})
    assert not validator.is_valid({"Node": [{"Leaf": 1}, {"Node": [{"Leaf": "x"}, {"Leaf": 3}]}]})


def test_schema_rejects_what_conversion_rejects():
    assert not jsonschema.Draft202012Validator(json_schema(ITEM)).is_valid({"tags": []})
    assert not jsonschema.Draft202012Validator(json_schema(TupleT([INT, INT]))).is_valid([1, 2, 3])
    assert not jsonschema.Draft202012Validator(json_schema(ResultT(INT, STRING))).is_valid({"Ok": 1, "Err": "x"})
    assert not jsonschema.Draft202012Validator(json_schema(SHAPE)).is_valid("Circle")


def test_polymorphic_recursion_stops_at_a_depth():
    # enum W<T> { Stop, Wrap(W<List<T>>) }: every level has a new type argument.
    info = EnumInfo("W", ["T"], [])
    info.variants = [("Stop", None), ("Wrap", EnumT(info, [ListT(TypeVar("T"))]))]
    with pytest.raises(ConversionError) as info_:
        json_schema(EnumT(info, [INT]))
    assert info_.value.reason == "type nests too deeply for a schema"


@pytest.mark.parametrize("t, path, expected", [
    (FnT([INT], INT), "$", "Fn(Int) -> Int"),
    (AgentT("W"), "$", "Agent<W>"),
    (TypeVar("T"), "$", "T"),
    (RecordT(RecordInfo("H", [], [("f", FnT([], INT))])), "$.f", "Fn() -> Int"),
    (ListT(AgentT("W")), "$[*]", "Agent<W>"),
    (MapT(STRING, FnT([], INT)), "$[*]", "Fn() -> Int"),
])
def test_schema_of_unconvertible_type(t, path, expected):
    with pytest.raises(ConversionError) as info:
        json_schema(t)
    assert (info.value.path, info.value.expected, info.value.value) == (path, expected, None)


# ---------------------------------------------------------------- defaults

@pytest.mark.parametrize("t, value", [
    (INT, 0),
    (FLOAT, 0.0),
    (BOOL, False),
    (STRING, ""),
    (UNIT_T, UNIT),
    (ListT(INT), []),
    (MapT(INT, STRING), {}),
    (OptionT(INT), NONE),
    (TupleT([INT, STRING, BOOL]), (0, "", False)),
    (ITEM, item(0, NONE, [])),
    (ORDER, Record("Order", {"items": []})),
    (COLOR, Variant("Color", "Red")),
    (SHAPE, Variant("Shape", "Empty")),
    (PAIR, Record("Pair", {"first": 0, "second": ""})),
    (MAYBE, Variant("Maybe", "Nothing")),
    (NODE, Record("Node", {"value": 0, "next": NONE})),
    (ResultT(INT, STRING), ok(0)),
    (ERROR, ErrorValue("User", "")),
    (EnumT(EnumInfo("Wrapped", [], [("Num", INT), ("Nothing", None)])), Variant("Wrapped", "Num", 0)),
    (TREE, Variant("Tree", "Leaf", 0)),
], ids=repr)
def test_default_value(t, value):
    assert canon(default_value(t)) == canon(value)


@pytest.mark.parametrize("t", [INT, FLOAT, BOOL, STRING, UNIT_T, ListT(INT), ITEM, ORDER, COLOR, SHAPE, PAIR,
                               NODE, TREE, ResultT(INT, STRING), ERROR, TupleT([FLOAT, COLOR])], ids=repr)
def test_default_value_fits_schema(t):
    # The echo model answers typed divine with this value, which must be schema-valid.
    jsonschema.Draft202012Validator(json_schema(t)).validate(to_json(default_value(t)))


def test_default_of_self_containing_record_fails():
    info = RecordInfo("Loop", [], [])
    info.fields = [("again", RecordT(info))]
    with pytest.raises(ConversionError) as e:
        default_value(RecordT(info))
    assert (e.value.path, e.value.expected, e.value.reason) == (
        "$.again", "Loop", "a type that contains itself has no default")


@pytest.mark.parametrize("t", [FnT([], INT), AgentT("W"), TypeVar("T")], ids=repr)
def test_default_of_unconvertible_type_fails(t):
    with pytest.raises(ConversionError):
        default_value(t)


# ---------------------------------------------------------------- JSON text

def test_compact_json_has_no_blanks_and_keeps_unicode():
    assert compact_json({"a": [1, 2.5, None], "é": "ü\n"}) == '{"a":[1,2.5,null],"é":"ü\\n"}'


def test_parse_json_accepts_valid_text():
    assert json_canon(parse_json(' {"a": [1, 2.0, true, null, "x"]} ')) == ("dict", [
        ("a", ("list", [("int", 1), ("float", 2.0), ("bool", True), ("NoneType", None), ("str", "x")]))])


@pytest.mark.parametrize("text, reason", [
    ("NaN", "NaN is not allowed in JSON"),
    ("[Infinity]", "Infinity is not allowed in JSON"),
    ('{"a": -Infinity}', "-Infinity is not allowed in JSON"),
    ("[1e400]", "number out of range: 1e400"),
    ("", "Expecting value at line 1 column 1"),
    ("[1, 2", "Expecting ',' delimiter at line 1 column 6"),
    ("{} x", "Extra data at line 1 column 4"),
    ("{'a': 1}", "Expecting property name enclosed in double quotes at line 1 column 2"),
    ("[" * 100000, "nesting too deep"),
])
def test_parse_json_rejects(text, reason):
    with pytest.raises(ValueError) as info:
        parse_json(text)
    assert str(info.value) == reason


# ---------------------------------------------------------------- map keys outside String, Int and Bool

def test_to_json_rejects_other_map_keys():
    assert _to_json_failure({"a": {(1, 2): 3}}) == (
        "$.a", "a map key of type String, Int or Bool", "(1, 2)", "map keys must be String, Int or Bool")


@pytest.mark.parametrize("convert", [lambda t: from_json({"1.5": 1}, t), json_schema],
                         ids=["from_json", "json_schema"])
def test_float_map_keys_are_not_convertible(convert):
    with pytest.raises(ConversionError) as info:
        convert(MapT(FLOAT, INT))
    assert (info.value.expected, info.value.value, info.value.reason) == (
        "Float", None, "map keys must be String, Int or Bool")


def test_unresolved_map_key_type():
    with pytest.raises(ConversionError) as info:
        from_json({"a": 1}, MapT(TypeVar("K"), INT))
    assert info.value.reason == "type parameter K is not resolved"


def test_fitted_json_keeps_a_non_finite_float_when_asked_as_from_json_does():
    data = fitted_json({"a": [1, float("inf")]}, MapT(STRING, ListT(FLOAT)), finite=False)
    assert data == {"a": [1.0, math.inf]} and type(data["a"][0]) is float
