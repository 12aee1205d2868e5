"""Math builtins (SPEC §6.3, §4.2) and conversions (SPEC §6.1): 64-bit overflow, IEEE floats, parsers."""
from __future__ import annotations

import math

import pytest

from sagepy.builtins import conversions as C
from sagepy.builtins import numbers as N
from sagepy.core.errors import SageRaise
from sagepy.core.values import Record, err, some

M = N.BUILTINS
K = C.BUILTINS
INT_MAX = (1 << 63) - 1
INT_MIN = -(1 << 63)
INF = float("inf")
NAN = float("nan")


def raised(fn, *args):
    with pytest.raises(SageRaise) as info:
        fn(*args)
    return info.value.error


def assert_overflow(fn, *args):
    e = raised(fn, *args)
    assert (e.kind, e.message, e.code) == ("Runtime", "integer overflow", "E200")


def assert_ok(result, expected):
    # Variant equality would let True pass for 1 and 0 for 0.0, so the payload type is checked too.
    assert result.name == "Ok"
    assert type(result.payload) is type(expected) and result.payload == expected


def assert_same_float(actual, expected):
    assert type(actual) is float
    if math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert actual == expected and math.copysign(1, actual) == math.copysign(1, expected)


# ------------------------------------------------------------------ Int math

def test_abs_min_max():
    assert M["abs"](-5) == 5
    assert M["abs"](0) == 0
    assert M["abs"](INT_MAX) == INT_MAX
    assert M["abs"](INT_MIN + 1) == INT_MAX
    assert_overflow(M["abs"], INT_MIN)
    assert M["min"](3, -4) == -4
    assert M["max"](3, -4) == 3
    assert M["min"](2, 2) == 2


def test_clamp():
    assert M["clamp"](5, 0, 10) == 5
    assert M["clamp"](-5, 0, 10) == 0
    assert M["clamp"](50, 0, 10) == 10
    assert M["clamp"](3, 7, 7) == 7
    e = raised(M["clamp"], 1, 5, 2)
    assert (e.kind, e.code) == ("Runtime", "E206")
    assert e.message == "invalid argument: clamp: lo (5) > hi (2)"


@pytest.mark.parametrize("base, exp, expected", [
    (2, 10, 1024),
    (2, 0, 1),
    (0, 0, 1),
    (0, 5, 0),
    (1, 10**18, 1),
    (-1, 10**18 + 1, -1),
    (-1, 10**18, 1),
    (-2, 63, INT_MIN),
    (2, 62, 1 << 62),
    (-3, 3, -27),
])
def test_pow(base, exp, expected):
    assert M["pow"](base, exp) == expected


@pytest.mark.parametrize("base, exp", [(2, 63), (-2, 64), (10, 19), (2, 10**18), (3, 40)])
def test_pow_overflow(base, exp):
    assert_overflow(M["pow"], base, exp)


def test_pow_negative_exponent_is_e206():
    e = raised(M["pow"], 2, -1)
    assert (e.code, e.message) == ("E206", "invalid argument: pow: negative exponent")


# ------------------------------------------------------------------ Float -> Int

@pytest.mark.parametrize("x, expected", [
    (2.5, 3), (-2.5, -3), (0.5, 1), (-0.5, -1), (1.4999, 1), (2.4, 2), (-2.6, -3),
    (0.49999999999999994, 0), (0.0, 0), (-0.0, 0), (4503599627370497.0, 4503599627370497),
    (9.2e18, 9200000000000000000),
])
def test_round_half_away_from_zero(x, expected):
    assert M["round"](x) == expected


@pytest.mark.parametrize("name", ["round", "floor", "ceil"])
@pytest.mark.parametrize("x", [NAN, INF, -INF, 9.223372036854775807e18, 1e19, -1e19])
def test_float_to_int_functions_overflow(name, x):
    assert_overflow(M[name], x)


def test_floor_ceil():
    assert M["floor"](2.7) == 2
    assert M["floor"](-2.1) == -3
    assert M["ceil"](2.1) == 3
    assert M["ceil"](-2.7) == -2
    assert M["floor"](-9.223372036854775808e18) == INT_MIN
    assert M["ceil"](5.0) == 5


# ------------------------------------------------------------------ Float math

def test_float_min_max_abs():
    assert M["abs_float"](-2.5) == 2.5
    assert_same_float(M["abs_float"](-0.0), 0.0)
    assert M["min_float"](1.5, -2.0) == -2.0
    assert M["max_float"](1.5, -2.0) == 1.5
    assert M["min_float"](NAN, 3.0) == 3.0
    assert M["min_float"](3.0, NAN) == 3.0
    assert M["max_float"](NAN, 3.0) == 3.0
    assert M["max_float"](3.0, NAN) == 3.0
    assert math.isnan(M["max_float"](NAN, NAN))
    assert M["max_float"](-INF, INF) == INF


def test_clamp_float():
    assert M["clamp_float"](5.5, 0.0, 1.0) == 1.0
    assert M["clamp_float"](-5.5, 0.0, 1.0) == 0.0
    assert M["clamp_float"](0.25, 0.0, 1.0) == 0.25
    assert math.isnan(M["clamp_float"](NAN, 0.0, 1.0))
    e = raised(M["clamp_float"], 0.5, 2.0, 1.0)
    assert (e.code, e.message) == ("E206", "invalid argument: clamp_float: lo (2.0) > hi (1.0)")
    e = raised(M["clamp_float"], 0.5, NAN, 1.0)
    assert (e.code, e.message) == ("E206", "invalid argument: clamp_float: NaN bound")


@pytest.mark.parametrize("fn, x, expected", [
    ("floor_float", 2.7, 2.0), ("floor_float", -2.1, -3.0), ("floor_float", 0.5, 0.0),
    ("floor_float", -0.0, -0.0), ("floor_float", INF, INF), ("floor_float", NAN, NAN),
    ("ceil_float", 2.1, 3.0), ("ceil_float", -0.5, -0.0), ("ceil_float", -INF, -INF),
    ("ceil_float", 1e300, 1e300),
    ("sqrt", 9.0, 3.0), ("sqrt", -1.0, NAN), ("sqrt", INF, INF), ("sqrt", NAN, NAN), ("sqrt", -0.0, -0.0),
])
def test_float_rounding_and_sqrt(fn, x, expected):
    assert_same_float(M[fn](x), expected)


@pytest.mark.parametrize("base, exp, expected", [
    (2.0, 10.0, 1024.0),
    (2.0, -1.0, 0.5),
    (-8.0, 1.0 / 3.0, NAN),
    (10.0, 400.0, INF),
    (-10.0, 401.0, -INF),
    (-10.0, 400.0, INF),
    (0.5, -2000.0, INF),
    (0.0, -1.0, INF),
    (-0.0, -1.0, -INF),
    (-0.0, -2.0, INF),
    (NAN, 0.0, 1.0),
    (1.0, NAN, 1.0),
    (2.0, NAN, NAN),
])
def test_pow_float_is_ieee(base, exp, expected):
    assert_same_float(M["pow_float"](base, exp), expected)


def test_constants():
    assert N.CONSTANTS["PI"] == 3.141592653589793
    assert N.CONSTANTS["E"] == 2.718281828459045


# ------------------------------------------------------------------ conversions

def test_display_conversions():
    assert K["int_to_str"](-42) == "-42"
    assert K["float_to_str"](3.0) == "3.0"
    assert K["float_to_str"](1e20) == "1e+20"
    assert K["float_to_str"](NAN) == "NaN"
    assert K["float_to_str"](-INF) == "-inf"
    assert K["bool_to_str"](True) == "true"
    assert K["bool_to_str"](False) == "false"
    assert K["str"]("hi") == "hi"
    assert K["str"](["a", 1]) == '["a", 1]'
    assert K["str"](Record("P", {"x": 1})) == "P { x: 1 }"
    assert K["str"](some("x")) == 'Some("x")'


def test_len_of_lists_and_maps():
    assert K["len"]([]) == 0
    assert K["len"]([1, 2, 3]) == 3
    assert K["len"]({"a": 1, "b": 2}) == 2
    assert K["len"]({}) == 0


def test_int_float_conversions():
    assert K["int_to_float"](3) == 3.0 and type(K["int_to_float"](3)) is float
    assert K["float_to_int"](2.9) == 2
    assert K["float_to_int"](-2.9) == -2
    assert K["float_to_int"](NAN) == 0
    assert K["float_to_int"](INF) == INT_MAX
    assert K["float_to_int"](-INF) == INT_MIN
    assert K["float_to_int"](1e30) == INT_MAX
    assert K["float_to_int"](-1e30) == INT_MIN
    assert K["float_to_int"](-9.223372036854775808e18) == INT_MIN
    assert K["float_to_int"](9.2e18) == 9200000000000000000


@pytest.mark.parametrize("s, expected", [
    ("42", 42), ("  -17 \n", -17), ("+5", 5), ("007", 7), ("-0", 0),
    ("9223372036854775807", INT_MAX), ("-9223372036854775808", INT_MIN),
    ("00000000000000000000000001", 1),
])
def test_parse_int_ok(s, expected):
    assert_ok(K["parse_int"](s), expected)


@pytest.mark.parametrize("s", ["", "  ", "abc", "1.5", "1_000", "0x10", "--1", "+-1", "1 2", "١٢", "- 5", "1e3"])
def test_parse_int_invalid(s):
    assert K["parse_int"](s) == err(f"invalid integer: '{s}'")


@pytest.mark.parametrize("s", ["9223372036854775808", "-9223372036854775809", " 99999999999999999999 ", "1" * 5000])
def test_parse_int_out_of_range_quotes_original(s):
    assert K["parse_int"](s) == err(f"integer out of range: '{s}'")


@pytest.mark.parametrize("s, expected", [
    ("3.5", 3.5), (" -2 ", -2.0), ("+1.25e2", 125.0), ("1E-2", 0.01), ("7e+1", 70.0), ("0", 0.0),
    ("inf", INF), ("-INF", -INF), ("Inf", INF), ("1e999", INF),
])
def test_parse_float_ok(s, expected):
    assert_ok(K["parse_float"](s), expected)


@pytest.mark.parametrize("s", ["nan", "NaN", " -nan "])
def test_parse_float_nan(s):
    result = K["parse_float"](s)
    assert result.name == "Ok" and math.isnan(result.payload)


@pytest.mark.parametrize("s", ["", "abc", ".5", "5.", "1_000", "0x10", "1e", "e5", "infinity", "1.2.3", "1,5", "--1"])
def test_parse_float_invalid(s):
    assert K["parse_float"](s) == err(f"invalid float: '{s}'")


@pytest.mark.parametrize("s, expected", [
    ("true", True), ("TRUE", True), (" True ", True), ("1", True),
    ("false", False), ("FaLsE", False), ("0", False), ("\t0\n", False),
])
def test_parse_bool_ok(s, expected):
    assert_ok(K["parse_bool"](s), expected)


@pytest.mark.parametrize("s", ["", "yes", "2", "t", "01", "truex"])
def test_parse_bool_invalid(s):
    assert K["parse_bool"](s) == err(f"invalid boolean: '{s}'")
