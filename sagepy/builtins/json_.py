"""JSON builtins (SPEC §6.7): validation, typed decoding, stringifying and top-level field access.

Typed decoding and stringifying go through `sagepy.core.convert`, the one §5 mapping. The `json_get*` family is
forgiving by design: invalid JSON, a non-object, a missing key or a value of the wrong kind all give `None`.

Every builtin module is imported at start-up, so `sagepy.core.convert` (and with it `json`) is imported inside
the functions: a program that never touches JSON never loads it.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.errors import runtime_error
from ..core.values import NONE, Variant, some
from ..core.types import FLOAT, INT, Type, type_name

_MISSING = object()


def json_parse(s: str) -> str:
    from ..core.json_text import parse_json

    try:
        parse_json(s)
    except ValueError as exc:
        raise runtime_error(f"invalid JSON: {exc}") from None
    return s


def json_decode(s: str, target: Type) -> Any:
    """`target` is the resolved T of `json_decode<T>`, appended by the interpreter as the last argument."""
    from ..core.convert import ConversionError, from_json
    from ..core.json_text import parse_json

    try:
        data = parse_json(s)
    except ValueError as exc:
        raise runtime_error(f"invalid JSON: {exc}") from None
    try:
        return from_json(data, target)
    except ConversionError as exc:
        raise runtime_error(f"cannot decode JSON as {type_name(target)}: {exc}", "E207") from None


def json_stringify(value: Any) -> str:
    from ..core.convert import ConversionError, compact_json, to_json

    try:
        return compact_json(to_json(value))
    except ConversionError as exc:
        raise runtime_error(f"cannot convert value to JSON: {exc}", "E207") from None


def _member(text: str, key: str) -> Any:
    """The value under `key` of a JSON object text, or _MISSING (JSON `null` is a present value)."""
    from ..core.json_text import parse_json

    try:
        data = parse_json(text)
    except ValueError:
        return _MISSING
    if not isinstance(data, dict):
        return _MISSING
    return data.get(key, _MISSING)


def _as_text(data: Any) -> str:
    from ..core.convert import compact_json

    return data if isinstance(data, str) else compact_json(data)


def json_get(text: str, key: str) -> Variant:
    data = _member(text, key)
    return NONE if data is _MISSING else some(_as_text(data))


def _typed_getter(target: Type) -> Callable[[str, str], Variant]:
    # §5's rules decide what fits: an integral 3.0 is an Int, 3.5 is not; an integer is a Float.
    def get(text: str, key: str) -> Variant:
        data = _member(text, key)
        if data is _MISSING:
            return NONE
        from ..core.convert import ConversionError, from_json

        try:
            return some(from_json(data, target))
        except ConversionError:
            return NONE

    return get


def json_get_bool(text: str, key: str) -> Variant:
    data = _member(text, key)
    return some(data) if isinstance(data, bool) else NONE


def json_get_list(text: str, key: str) -> Variant:
    data = _member(text, key)
    return some([_as_text(x) for x in data]) if isinstance(data, list) else NONE


def json_escape(s: str) -> str:
    from ..core.convert import compact_json

    # A JSON string literal escapes exactly `"`, `\` and the control characters; the slice drops its quotes.
    return compact_json(s)[1:-1]


BUILTINS: dict[str, Callable[..., Any]] = {
    "json_parse": json_parse,
    "json_decode": json_decode,
    "json_stringify": json_stringify,
    "json_get": json_get,
    "json_get_int": _typed_getter(INT),
    "json_get_float": _typed_getter(FLOAT),
    "json_get_bool": json_get_bool,
    "json_get_list": json_get_list,
    "json_escape": json_escape,
}
