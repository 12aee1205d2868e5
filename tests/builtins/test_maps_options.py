"""Map builtins (SPEC §6.5) and Option/Result builtins (SPEC §6.6), E202 messages included."""
from __future__ import annotations

import pytest

from sagepy.builtins import maps as Mp
from sagepy.builtins import options as O
from sagepy.core.errors import SageRaise
from sagepy.core.values import NONE, ErrorValue, Function, Record, err, ok, some

M = Mp.BUILTINS
B = O.BUILTINS


def raised(fn, *args):
    with pytest.raises(SageRaise) as info:
        fn(*args)
    return info.value.error


def sage_fn(py):
    return Function("f", py)


def never_called(*args):
    raise AssertionError("callback must not run")


# ------------------------------------------------------------------ maps

def test_map_get_and_has():
    m = {"a": 1, "b": 0}
    assert M["map_get"](m, "a") == some(1)
    assert M["map_get"](m, "b") == some(0)
    assert M["map_get"](m, "z") == NONE
    assert M["map_get"]({}, "a") == NONE
    assert M["map_get"]({1: False}, 1) == some(False)
    assert M["map_get"]({True: "t"}, False) == NONE
    assert M["map_has"](m, "b") is True
    assert M["map_has"](m, "z") is False
    assert M["map_has"]({}, "") is False


def test_keys_and_values_keep_insertion_order():
    m = {"z": 1, "a": 2, "m": 3}
    assert M["map_keys"](m) == ["z", "a", "m"]
    assert M["map_values"](m) == [1, 2, 3]
    assert M["map_keys"]({}) == []
    assert M["map_values"]({}) == []


def test_map_with_returns_a_new_map():
    original = {"a": 1, "b": 2}
    added = M["map_with"](original, "c", 3)
    assert list(added.items()) == [("a", 1), ("b", 2), ("c", 3)]
    assert original == {"a": 1, "b": 2}
    updated = M["map_with"](original, "a", 9)
    assert list(updated.items()) == [("a", 9), ("b", 2)]
    assert original == {"a": 1, "b": 2}
    assert M["map_with"]({}, 1, "x") == {1: "x"}


def test_map_without_returns_a_new_map():
    original = {"a": 1, "b": 2, "c": 3}
    reduced = M["map_without"](original, "b")
    assert list(reduced.items()) == [("a", 1), ("c", 3)]
    assert original == {"a": 1, "b": 2, "c": 3}
    assert M["map_without"](original, "zz") == original
    assert M["map_without"]({}, "a") == {}


# ------------------------------------------------------------------ Option

def test_is_some_is_none():
    assert B["is_some"](some(0)) is True
    assert B["is_some"](NONE) is False
    assert B["is_none"](NONE) is True
    assert B["is_none"](some(0)) is False


def test_unwrap():
    assert B["unwrap"](some("x")) == "x"
    assert B["unwrap"](some(NONE)) == NONE
    e = raised(B["unwrap"], NONE)
    assert (e.kind, e.code, e.message) == ("Runtime", "E202", "unwrap called on None")


def test_unwrap_or_and_unwrap_or_else():
    assert B["unwrap_or"](some(1), 2) == 1
    assert B["unwrap_or"](NONE, 2) == 2
    assert B["unwrap_or_else"](some(1), sage_fn(never_called)) == 1
    assert B["unwrap_or_else"](NONE, sage_fn(lambda: 7)) == 7


def test_map_option_and_or_option():
    assert B["map_option"](some(2), sage_fn(lambda x: x * 10)) == some(20)
    assert B["map_option"](NONE, sage_fn(never_called)) == NONE
    assert B["or_option"](some(1), some(2)) == some(1)
    assert B["or_option"](NONE, some(2)) == some(2)
    assert B["or_option"](NONE, NONE) == NONE


# ------------------------------------------------------------------ Result

def test_is_ok_is_err():
    assert B["is_ok"](ok(1)) is True
    assert B["is_ok"](err("x")) is False
    assert B["is_err"](err("x")) is True
    assert B["is_err"](ok(1)) is False


def test_unwrap_result():
    assert B["unwrap_result"](ok(5)) == 5
    e = raised(B["unwrap_result"], err("boom"))
    assert (e.kind, e.code, e.message) == ("Runtime", "E202", 'unwrap_result called on Err("boom")')


@pytest.mark.parametrize("payload, shown", [
    (42, "Err(42)"),
    (["a", "b"], 'Err(["a", "b"])'),
    ('say "hi"\n', 'Err("say \\"hi\\"\\n")'),
    (Record("Oops", {"code": 3}), "Err(Oops { code: 3 })"),
    (ErrorValue("Tool", "refused"), "Err(Tool error: refused)"),
])
def test_unwrap_result_displays_the_err_like_a_composite(payload, shown):
    e = raised(B["unwrap_result"], err(payload))
    assert e.message == f"unwrap_result called on {shown}"


def test_unwrap_err():
    assert B["unwrap_err"](err("bad")) == "bad"
    e = raised(B["unwrap_err"], ok(1))
    assert (e.kind, e.code, e.message) == ("Runtime", "E202", "unwrap_err called on Ok(1)")
    e = raised(B["unwrap_err"], ok("fine"))
    assert e.message == 'unwrap_err called on Ok("fine")'


def test_unwrap_or_result():
    assert B["unwrap_or_result"](ok(1), 2) == 1
    assert B["unwrap_or_result"](err("x"), 2) == 2


def test_map_result_and_map_err():
    assert B["map_result"](ok(2), sage_fn(lambda x: x + 1)) == ok(3)
    failure = err("e")
    assert B["map_result"](failure, sage_fn(never_called)) == err("e")
    assert B["map_err"](err("e"), sage_fn(lambda x: x + "!")) == err("e!")
    assert B["map_err"](ok(1), sage_fn(never_called)) == ok(1)


def test_ok_and_err_value():
    assert B["ok"](ok(1)) == some(1)
    assert B["ok"](err("x")) == NONE
    assert B["err_value"](err("x")) == some("x")
    assert B["err_value"](ok(1)) == NONE
