"""Option and Result builtins (SPEC §6.6).

Values are `Variant("Option", "Some"|"None", …)` and `Variant("Result", "Ok"|"Err", …)`; the builtins only
look at the variant name, since the checker guarantees the enum.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.errors import runtime_error
from ..core.values import NONE, Variant, display, err, ok, some


def is_some(o: Variant) -> bool:
    return o.name == "Some"


def is_none(o: Variant) -> bool:
    return o.name == "None"


def unwrap(o: Variant) -> Any:
    if o.name == "Some":
        return o.payload
    raise runtime_error("unwrap called on None", "E202")


def unwrap_or(o: Variant, default: Any) -> Any:
    return o.payload if o.name == "Some" else default


def unwrap_or_else(o: Variant, f: Callable[[], Any]) -> Any:
    return o.payload if o.name == "Some" else f()


def map_option(o: Variant, f: Callable[[Any], Any]) -> Variant:
    return some(f(o.payload)) if o.name == "Some" else NONE


def or_option(a: Variant, b: Variant) -> Variant:
    return a if a.name == "Some" else b


def is_ok(r: Variant) -> bool:
    return r.name == "Ok"


def is_err(r: Variant) -> bool:
    return r.name == "Err"


def unwrap_result(r: Variant) -> Any:
    if r.name == "Ok":
        return r.payload
    raise runtime_error(f"unwrap_result called on {display(r)}", "E202")


def unwrap_err(r: Variant) -> Any:
    if r.name == "Err":
        return r.payload
    raise runtime_error(f"unwrap_err called on {display(r)}", "E202")


def unwrap_or_result(r: Variant, default: Any) -> Any:
    return r.payload if r.name == "Ok" else default


def map_result(r: Variant, f: Callable[[Any], Any]) -> Variant:
    return ok(f(r.payload)) if r.name == "Ok" else r


def map_err(r: Variant, f: Callable[[Any], Any]) -> Variant:
    return err(f(r.payload)) if r.name == "Err" else r


def ok_value(r: Variant) -> Variant:
    return some(r.payload) if r.name == "Ok" else NONE


def err_value(r: Variant) -> Variant:
    return some(r.payload) if r.name == "Err" else NONE


BUILTINS: dict[str, Callable[..., Any]] = {
    "is_some": is_some,
    "is_none": is_none,
    "unwrap": unwrap,
    "unwrap_or": unwrap_or,
    "unwrap_or_else": unwrap_or_else,
    "map_option": map_option,
    "or_option": or_option,
    "is_ok": is_ok,
    "is_err": is_err,
    "unwrap_result": unwrap_result,
    "unwrap_err": unwrap_err,
    "unwrap_or_result": unwrap_or_result,
    "map_result": map_result,
    "map_err": map_err,
    "ok": ok_value,
    "err_value": err_value,
}
