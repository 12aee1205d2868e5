"""List builtins (SPEC §6.4): fresh results, clamping, structural equality, stability, E206 and E200."""
from __future__ import annotations

import math

import pytest

from sagepy.builtins import lists as L
from sagepy.core.errors import SageRaise, runtime_error
from sagepy.core.values import NONE, Function, Record, err, ok, some

B = L.BUILTINS
INT_MAX = (1 << 63) - 1
INT_MIN = -(1 << 63)
NAN = float("nan")


def raised(fn, *args):
    with pytest.raises(SageRaise) as info:
        fn(*args)
    return info.value.error


def sage_fn(py):
    """Builtins receive Sage functions as `Function` values; call them the way the interpreter would."""
    return Function("f", py)


def test_push_concat_reverse_return_new_lists():
    original = [1, 2]
    pushed = B["push"](original, 3)
    assert pushed == [1, 2, 3] and original == [1, 2]
    assert B["push"]([], "a") == ["a"]
    assert B["concat"]([1], [2, 3]) == [1, 2, 3]
    assert B["concat"]([], []) == []
    reversed_ = B["reverse"](original)
    assert reversed_ == [2, 1] and original == [1, 2]
    assert B["reverse"]([]) == []


@pytest.mark.parametrize("name, args", [
    ("take", ([1, 2], 5)), ("drop", ([1, 2], 0)), ("list_slice", ([1, 2], -1, 9)),
    ("sort", ([1, 2],)), ("unique", ([1, 2],)), ("concat", ([1, 2], [])), ("push", ([1], 2)),
    ("filter", ([1, 2], Function("f", lambda x: True))), ("flatten", ([[1, 2]],)),
])
def test_results_are_fresh_objects(name, args):
    result = B[name](*args)
    assert result == [1, 2]
    assert result is not args[0]


def test_unique_keeps_first_occurrences():
    assert B["unique"]([]) == []
    assert B["unique"]([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert B["unique"](["b", "a", "b"]) == ["b", "a"]
    assert B["unique"]([True, False, True]) == [True, False]


def test_unique_uses_structural_equality():
    p1, p2, q = Record("P", {"x": 1}), Record("P", {"x": 1}), Record("P", {"x": 2})
    result = B["unique"]([p1, q, p2])
    assert len(result) == 2 and result[0] is p1 and result[1] is q
    assert B["unique"]([(1, "a"), (1, "a"), (2, "a")]) == [(1, "a"), (2, "a")]
    assert B["unique"]([{"a": 1, "b": 2}, {"b": 2, "a": 1}]) == [{"a": 1, "b": 2}]
    assert B["unique"]([some(1), NONE, some(1), NONE]) == [some(1), NONE]
    assert B["unique"]([[1], [1], [2]]) == [[1], [2]]


def test_unique_keeps_every_nan():
    result = B["unique"]([NAN, 1.0, NAN, 1.0, -0.0, 0.0])
    assert len(result) == 4
    assert math.isnan(result[0]) and result[1] == 1.0 and math.isnan(result[2]) and result[3] == 0.0


def test_first_last_pop_get():
    assert B["first"]([]) == NONE
    assert B["last"]([]) == NONE
    assert B["pop"]([]) == NONE
    assert B["first"]([1, 2, 3]) == some(1)
    assert B["last"]([1, 2, 3]) == some(3)
    assert B["pop"]([1, 2, 3]) == some(3)
    assert B["get"]([1, 2, 3], 0) == some(1)
    assert B["get"]([1, 2, 3], 2) == some(3)
    assert B["get"]([1, 2, 3], 3) == NONE
    assert B["get"]([1, 2, 3], -1) == NONE
    assert B["get"]([], 0) == NONE


def test_list_contains_structural():
    assert B["list_contains"]([1, 2, 3], 2) is True
    assert B["list_contains"]([1, 2, 3], 4) is False
    assert B["list_contains"]([], 1) is False
    assert B["list_contains"]([Record("P", {"x": 1})], Record("P", {"x": 1})) is True
    assert B["list_contains"]([Record("P", {"x": 1})], Record("P", {"x": 2})) is False
    assert B["list_contains"]([{"a": [1]}], {"a": [1]}) is True
    assert B["list_contains"]([ok("x")], err("x")) is False
    assert B["list_contains"]([NAN], NAN) is False
    nan_list = [NAN]
    assert B["list_contains"](nan_list, nan_list[0]) is False
    assert B["list_contains"]([(NAN, 1)], (NAN, 1)) is False


def test_sort_ints_floats_strings():
    assert B["sort"]([]) == []
    assert B["sort"]([3, -1, 2, -1]) == [-1, -1, 2, 3]
    assert B["sort"]([2.5, -1.0, 0.0]) == [-1.0, 0.0, 2.5]
    assert B["sort"](["b", "B", "a", "é", "Z"]) == ["B", "Z", "a", "b", "é"]


def test_sort_puts_nan_last():
    result = B["sort"]([2.0, NAN, 1.0, NAN, -1.0])
    assert result[:3] == [-1.0, 1.0, 2.0]
    assert math.isnan(result[3]) and math.isnan(result[4])


def test_sort_is_stable_for_equal_floats():
    zero, negative_zero = 0.0, -0.0
    result = B["sort"]([zero, negative_zero, -1.0])
    assert result[0] == -1.0
    assert math.copysign(1, result[1]) == 1 and math.copysign(1, result[2]) == -1


def test_sort_by_uses_sign_and_is_stable():
    items = [(2, "a"), (1, "b"), (2, "c"), (1, "d")]
    by_key = sage_fn(lambda a, b: a[0] - b[0])
    assert B["sort_by"](items, by_key) == [(1, "b"), (1, "d"), (2, "a"), (2, "c")]
    descending = sage_fn(lambda a, b: (b[0] - a[0]) * 1000)
    assert B["sort_by"](items, descending) == [(2, "a"), (2, "c"), (1, "b"), (1, "d")]
    assert B["sort_by"]([], by_key) == []
    assert items == [(2, "a"), (1, "b"), (2, "c"), (1, "d")]


def test_sort_by_propagates_comparator_errors():
    def failing(a, b):
        raise runtime_error("boom")
    e = raised(B["sort_by"], [1, 2], sage_fn(failing))
    assert e.message == "boom"


@pytest.mark.parametrize("begin, end, expected", [
    (1, 3, [1, 2]), (-5, 2, [0, 1]), (3, 100, [3, 4]), (2, 2, []), (4, 1, []), (9, 12, []), (-3, -1, []),
])
def test_list_slice_clamps(begin, end, expected):
    assert B["list_slice"]([0, 1, 2, 3, 4], begin, end) == expected


@pytest.mark.parametrize("n, taken, dropped", [
    (0, [], [1, 2, 3]), (2, [1, 2], [3]), (3, [1, 2, 3], []), (10, [1, 2, 3], []), (-1, [], [1, 2, 3]),
])
def test_take_drop_clamp(n, taken, dropped):
    assert B["take"]([1, 2, 3], n) == taken
    assert B["drop"]([1, 2, 3], n) == dropped


def test_chunk():
    assert B["chunk"]([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert B["chunk"]([1, 2], 5) == [[1, 2]]
    assert B["chunk"]([], 3) == []
    assert B["chunk"]([1, 2, 3], 1) == [[1], [2], [3]]


@pytest.mark.parametrize("n", [0, -1])
def test_chunk_rejects_non_positive_size(n):
    e = raised(B["chunk"], [1, 2], n)
    assert (e.kind, e.code, e.message) == ("Runtime", "E206", "invalid argument: chunk: size must be > 0")


def test_range_and_range_step():
    assert B["range"](0, 4) == [0, 1, 2, 3]
    assert B["range"](-2, 1) == [-2, -1, 0]
    assert B["range"](3, 3) == []
    assert B["range"](5, 1) == []
    assert B["range_step"](0, 10, 3) == [0, 3, 6, 9]
    assert B["range_step"](0, 9, 3) == [0, 3, 6]
    assert B["range_step"](5, 1, 2) == []


@pytest.mark.parametrize("step", [0, -2])
def test_range_step_rejects_non_positive_step(step):
    e = raised(B["range_step"], 0, 10, step)
    assert (e.code, e.message) == ("E206", "invalid argument: range_step: step must be > 0")


def test_flatten_zip_enumerate():
    assert B["flatten"]([[1, 2], [], [3]]) == [1, 2, 3]
    assert B["flatten"]([]) == []
    assert B["zip"]([1, 2, 3], ["a", "b"]) == [(1, "a"), (2, "b")]
    assert B["zip"]([], [1]) == []
    assert type(B["zip"]([1], [2])[0]) is tuple
    assert B["enumerate"](["x", "y"]) == [(0, "x"), (1, "y")]
    assert B["enumerate"]([]) == []


def test_map_filter_flat_map():
    calls = []

    def double(x):
        calls.append(x)
        return x * 2
    assert B["map"]([1, 2, 3], sage_fn(double)) == [2, 4, 6]
    assert calls == [1, 2, 3]
    assert B["map"]([], sage_fn(double)) == []
    assert B["filter"]([1, 2, 3, 4], sage_fn(lambda x: x % 2 == 0)) == [2, 4]
    assert B["flat_map"]([1, 2], sage_fn(lambda x: [x, x])) == [1, 1, 2, 2]
    assert B["flat_map"]([1, 2], sage_fn(lambda x: [])) == []


def test_take_while_drop_while():
    small = sage_fn(lambda x: x < 3)
    assert B["take_while"]([1, 2, 3, 1], small) == [1, 2]
    assert B["drop_while"]([1, 2, 3, 1], small) == [3, 1]
    assert B["take_while"]([5], small) == []
    assert B["drop_while"]([1, 2], small) == []


def test_reduce_folds_left():
    assert B["reduce"]([1, 2, 3], "", sage_fn(lambda acc, x: acc + str(x))) == "123"
    assert B["reduce"]([], 10, sage_fn(lambda acc, x: acc + x)) == 10


def test_any_all_short_circuit():
    seen = []

    def positive(x):
        seen.append(x)
        return x > 0
    assert B["any"]([-1, 2, 3], sage_fn(positive)) is True
    assert seen == [-1, 2]
    seen.clear()
    assert B["all"]([1, -2, 3], sage_fn(positive)) is False
    assert seen == [1, -2]
    assert B["any"]([], sage_fn(positive)) is False
    assert B["all"]([], sage_fn(positive)) is True


def test_find_and_count_where():
    even = sage_fn(lambda x: x % 2 == 0)
    assert B["find"]([1, 4, 6], even) == some(4)
    assert B["find"]([1, 3], even) == NONE
    assert B["find"]([], even) == NONE
    assert B["count_where"]([1, 2, 4], even) == 2
    assert B["count_where"]([], even) == 0


def test_sum():
    assert B["sum"]([]) == 0
    assert B["sum"]([1, 2, 3]) == 6
    assert B["sum"]([INT_MAX, -1]) == INT_MAX - 1
    assert B["sum"]([INT_MIN]) == INT_MIN


@pytest.mark.parametrize("values", [[INT_MAX, 1], [INT_MIN, -1], [INT_MAX, 1, -1], [INT_MIN, -1, 1]])
def test_sum_overflow(values):
    e = raised(B["sum"], values)
    assert (e.kind, e.code, e.message) == ("Runtime", "E200", "integer overflow")


def test_sum_floats_is_a_plain_left_fold():
    assert B["sum_floats"]([]) == 0.0 and type(B["sum_floats"]([])) is float
    assert B["sum_floats"]([0.5, 0.25]) == 0.75
    # Compensated summation would give 1.0 here.
    assert B["sum_floats"]([1e16, 1.0, -1e16]) == 0.0
    assert math.isnan(B["sum_floats"]([1.0, NAN]))


def test_unique_is_linear_for_values_with_an_equality_key(monkeypatch):
    """Records, lists, maps and variants are deduplicated by key: no pairwise comparison at all."""
    compared = []
    monkeypatch.setattr(L, "values_equal", lambda a, b: compared.append(1) or a == b)
    items = [Record("R", {"n": i % 500, "tags": [str(i % 500)]}) for i in range(2000)]
    items += [{"k": i % 7} for i in range(100)] + [some([i % 3]) for i in range(100)]
    kept = B["unique"](items)
    assert len(kept) == 500 + 7 + 3
    assert kept[0] is items[0] and kept[500] is items[2000]
    assert compared == []


def test_unique_keeps_sage_equality():
    f, g = sage_fn(lambda: 1), sage_fn(lambda: 1)
    maps = [{"a": 1, "b": 2}, {"b": 2, "a": 1}]
    assert B["unique"](maps) == [maps[0]]                   # maps are equal whatever their order
    assert B["unique"]([f, g, f]) == [f, g]                 # functions compare by identity
    assert len(B["unique"]([NAN, NAN, [NAN], [NAN]])) == 4  # NaN equals nothing, itself included
    assert B["unique"]([0.0, -0.0]) == [0.0]
    assert B["unique"]([ok(1), err(1), ok(1), NONE, NONE]) == [ok(1), err(1), NONE]


@pytest.mark.parametrize("name, args, reason", [
    ("range", (0, 1 << 62), "result too large (4611686018427387904 elements, limit 1073741824)"),
    ("range", (INT_MIN, INT_MAX), "result too large (18446744073709551615 elements, limit 1073741824)"),
    ("range_step", (INT_MIN, INT_MAX, 2), "result too large (9223372036854775808 elements, limit 1073741824)"),
])
def test_impossible_ranges_are_e206(name, args, reason):
    e = raised(B[name], *args)
    assert (e.kind, e.code, e.message) == ("Runtime", "E206", f"invalid argument: {name}: {reason}")
