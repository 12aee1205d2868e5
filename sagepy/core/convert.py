"""The one mapping between Sage values, JSON data and JSON Schema (SPEC §5).

MCP arguments and results, mock values, `json_decode`/`json_stringify`, typed `divine`, extern functions and
the tool generator all convert through this module, so they agree on every corner case.

"JSON data" means the Python objects `json.loads` produces: dict, list, str, int, float, bool and None.
`to_json` is driven by the value alone (a Sage value knows its own shape); `from_json`, `json_schema` and
`default_value` are driven by the target type.

Failures raise `ConversionError`, which names the JSON path (`$.items[2].id`), the expected type and the
offending value. Paths are built lazily as linked `(parent, segment)` pairs and formatted only on failure,
so converting a large, valid document costs no string work for paths.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from .json_text import compact_json
from .values import NONE, UNIT, ErrorValue, Record, Variant, display, some
from .types import (
    INT_MAX,
    INT_MIN,
    EnumT,
    ListT,
    MapT,
    OptionT,
    Prim,
    RecordT,
    ResultT,
    TupleT,
    Type,
    TypeVar,
    type_name,
)

VALUE_LIMIT = 200
"""Longest rendering of an offending value in a ConversionError (SPEC §5)."""

# A path is None (the root `$`) or a pair (parent path, segment); segments are str keys, int indices, or
# _EVERY (`[*]`: any element or map value, used where a schema rather than a document is walked).
Path = Any
_EVERY = object()

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Only the canonical decimal form that `to_json` writes: no sign `+`, no blanks, no leading zeros.
_INT_KEY = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")


class ConversionError(Exception):
    """A value that does not fit the expected type, or a type that has no JSON form.

    `path` is a JSON path (`$.items[2].id`), `expected` the type name (or a short description where no type
    is known), `value` the compact JSON of the offending value truncated to 200 characters (None when there
    is no value: a missing field, or a type that cannot be converted at all), `reason` extra detail (may be
    empty when the mismatch of type and value says it all).
    """

    def __init__(self, path: str, expected: str, value: str | None, reason: str = "") -> None:
        self.path = path
        self.expected = expected
        self.value = value
        self.reason = reason
        if value is None:
            sentence = f"expected {expected} at {path}: {reason}"
        else:
            sentence = f"expected {expected} at {path}, got {value}" + (f": {reason}" if reason else "")
        super().__init__(sentence)


# ---------------------------------------------------------------- paths and failures

def _format_path(path: Path) -> str:
    segments = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    out = ["$"]
    for segment in reversed(segments):
        if segment is _EVERY:
            out.append("[*]")
        elif type(segment) is int:
            out.append(f"[{segment}]")
        elif _IDENT.match(segment):
            out.append("." + segment)
        else:
            out.append("[" + json.dumps(segment, ensure_ascii=False) + "]")
    return "".join(out)


def _render(data: Any) -> str:
    """Compact JSON of an offending value; data from Python externs may not be JSON at all, hence repr."""
    try:
        text = compact_json(data)
    except (TypeError, ValueError):
        text = repr(data)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def _mismatch(path: Path, expected: Type | str, data: Any, reason: str = "") -> ConversionError:
    name = expected if isinstance(expected, str) else type_name(expected)
    return ConversionError(_format_path(path), name, _render(data), reason)


def _unconvertible(t: Type, path: Path, reason: str = "") -> ConversionError:
    if not reason:
        if type(t) is TypeVar:
            reason = f"type parameter {t.name} is not resolved"  # type: ignore[attr-defined]
        else:
            reason = "functions, agents and type variables have no JSON form"
    return ConversionError(_format_path(path), type_name(t), None, reason)


_KEY_TYPES = ("String", "Int", "Bool")
_BAD_KEY = "map keys must be String, Int or Bool"


# ---------------------------------------------------------------- Sage -> JSON

def to_json(value: Any) -> Any:
    """The JSON data of a Sage value (§5, "Sage → JSON")."""
    return _to(value, None)


def _is_none(v: Any) -> bool:
    return type(v) is Variant and v.enum == "Option" and v.payload is None


def _to(v: Any, path: Path) -> Any:
    t = type(v)
    if t is str or t is bool or t is int:
        return v
    if t is float:
        if math.isfinite(v):
            return v
        raise ConversionError(_format_path(path), "a finite Float", display(v),
                              "NaN and infinities have no JSON form")
    if t is list or t is tuple:
        return [_to(x, (path, i)) for i, x in enumerate(v)]
    if t is dict:
        out = {}
        for k, x in v.items():
            key = _key_to_json(k, path)
            out[key] = _to(x, (path, key))
        return out
    if t is Variant:
        if v.enum == "Option":
            return None if v.payload is None else _to(v.payload, path)
        if v.payload is None:
            return v.name
        return {v.name: _to(v.payload, (path, v.name))}
    if t is Record:
        return {k: _to(x, (path, k)) for k, x in v.fields.items() if not _is_none(x)}
    if v is UNIT:
        return None
    if t is ErrorValue:
        return {"kind": v.kind, "message": v.message}
    raise ConversionError(_format_path(path), "a JSON-convertible value", display(v),
                          "functions and agents have no JSON form")


def _key_to_json(k: Any, path: Path) -> str:
    t = type(k)
    if t is str:
        return k
    if t is bool:
        return "true" if k else "false"
    if t is int:
        return str(k)
    raise ConversionError(_format_path(path), "a map key of type String, Int or Bool", display(k), _BAD_KEY)


# ---------------------------------------------------------------- JSON -> Sage

def from_json(data: Any, t: Type) -> Any:
    """Convert JSON data to a Sage value of type t (§5, "JSON → Sage"). Python tuples count as arrays,
    because extern functions written in Python naturally return them."""
    return _from(data, t, None)


def fitted_json(data: Any, t: Type, finite: bool = True) -> Any:
    """JSON data checked against type t and written as the value it reads as would be (`to_json` of
    `from_json`, in one walk that builds no Sage value): an absent Option field left out, an integral Float
    written as a Float, a record's fields in their declared order. Raises ConversionError as `from_json` does,
    and as `to_json` does for a Float that is not finite (which Python's own JSON parser lets through), unless
    `finite` is false: then such a Float is kept, as `from_json` keeps it."""
    return _from(data, t, None, _FIT if finite else _FIT_ANY_FLOAT)


# What the walk makes: the Sage value (`from_json`), or its JSON (`fitted_json`), with or without the check that
# each Float is finite. Every JSON mode is true.
_SAGE, _FIT, _FIT_ANY_FLOAT = 0, 1, 2


def _from(data: Any, t: Type, path: Path, fit: int = _SAGE) -> Any:
    """The walk of both `from_json` and `fitted_json` (`fit`, a mode above)."""
    convert = _FROM.get(type(t))
    if convert is None:
        raise _unconvertible(t, path)
    return convert(data, t, path, fit)


def _is_int(data: Any) -> bool:
    return isinstance(data, int) and not isinstance(data, bool)


def _from_prim(data: Any, t: Prim, path: Path, fit: int) -> Any:
    name = t.name
    if name == "String":
        if isinstance(data, str):
            return str(data)
    elif name == "Int":
        return _from_int(data, t, path)
    elif name == "Float":
        if isinstance(data, float):
            if fit == _FIT and not math.isfinite(data):
                raise ConversionError(_format_path(path), "a finite Float", display(data),
                                      "NaN and infinities have no JSON form")
            return float(data)
        if _is_int(data):
            try:
                return float(data)
            except OverflowError:
                raise _mismatch(path, t, data, "out of the Float range") from None
    elif name == "Bool":
        if isinstance(data, bool):
            return bool(data)
    elif name == "Unit":
        return None if fit else UNIT
    elif name == "Error":
        error = _from_error(data, t, path)
        return {"kind": error.kind, "message": error.message} if fit else error
    else:
        raise _unconvertible(t, path)
    raise _mismatch(path, t, data)


def _from_int(data: Any, t: Prim, path: Path) -> int:
    if _is_int(data):
        if INT_MIN <= data <= INT_MAX:
            return int(data)
        raise _mismatch(path, t, data, "out of the 64-bit Int range")
    if isinstance(data, float):
        if not data.is_integer():
            raise _mismatch(path, t, data, "not an integral number")
        if INT_MIN <= data <= INT_MAX:
            return int(data)
        raise _mismatch(path, t, data, "out of the 64-bit Int range")
    raise _mismatch(path, t, data)


def _from_error(data: Any, t: Prim, path: Path) -> ErrorValue:
    if isinstance(data, dict):
        kind = data.get("kind")
        message = data.get("message")
        if isinstance(kind, str) and isinstance(message, str):
            return ErrorValue(str(kind), str(message))
    raise _mismatch(path, t, data, 'needs string fields "kind" and "message"')


def _from_list(data: Any, t: ListT, path: Path, fit: int) -> list:
    if not isinstance(data, (list, tuple)):
        raise _mismatch(path, t, data)
    elem = t.elem
    return [_from(x, elem, (path, i), fit) for i, x in enumerate(data)]


def _from_tuple(data: Any, t: TupleT, path: Path, fit: int) -> tuple | list:
    n = len(t.items)
    if not isinstance(data, (list, tuple)):
        raise _mismatch(path, t, data)
    if len(data) != n:
        raise _mismatch(path, t, data, f"needs exactly {n} elements")
    items = [_from(x, item, (path, i), fit) for i, (x, item) in enumerate(zip(data, t.items))]
    return items if fit else tuple(items)


def _from_map(data: Any, t: MapT, path: Path, fit: int) -> dict:
    if not isinstance(data, dict):
        raise _mismatch(path, t, data)
    key_type = t.key
    value_type = t.value
    out = {}
    for k, x in data.items():
        key = _key_from_json(k, key_type, path)
        if fit:
            key = _key_to_json(key, path)
        out[key] = _from(x, value_type, (path, str(k)), fit)
    return out


def _key_from_json(k: Any, key_type: Type, path: Path) -> Any:
    """Keys arrive as strings from JSON; a Python extern may hand over native int or bool keys as well."""
    name = key_type.name if type(key_type) is Prim else None  # type: ignore[attr-defined]
    if name == "String":
        if isinstance(k, str):
            return str(k)
    elif name == "Int":
        if isinstance(k, str) and _INT_KEY.match(k):
            n = int(k)
            if INT_MIN <= n <= INT_MAX:
                return n
            raise _mismatch((path, k), "Int", k, "map key out of the 64-bit Int range")
        if _is_int(k) and INT_MIN <= k <= INT_MAX:
            return int(k)
    elif name == "Bool":
        if k == "true" or k == "false":
            return k == "true"
        if isinstance(k, bool):
            return bool(k)
    else:
        raise _unconvertible(key_type, path, "" if type(key_type) is TypeVar else _BAD_KEY)
    segment = k if isinstance(k, str) else str(k)
    raise _mismatch((path, segment), name, k, f"map key does not parse as {name}")


def _from_option(data: Any, t: OptionT, path: Path, fit: int) -> Any:
    if data is None:
        return None if fit else NONE
    value = _from(data, t.inner, path, fit)
    return value if fit else some(value)


def _single_key(data: Any) -> tuple[Any, Any] | None:
    if isinstance(data, dict) and len(data) == 1:
        return next(iter(data.items()))
    return None


def _from_result(data: Any, t: ResultT, path: Path, fit: int) -> Any:
    entry = _single_key(data)
    if entry is not None:
        key, payload = entry
        if key == "Ok" or key == "Err":
            value = _from(payload, t.ok if key == "Ok" else t.err, (path, key), fit)
            return {key: value} if fit else Variant("Result", key, value)
    raise _mismatch(path, t, data, 'needs an object with the single key "Ok" or "Err"')


def _from_record(data: Any, t: RecordT, path: Path, fit: int) -> Any:
    if not isinstance(data, dict):
        raise _mismatch(path, t, data)
    fields = {}
    for name, field_type in t.fields():
        if name in data:
            x = data[name]
            if fit and x is None and type(field_type) is OptionT:
                continue   # None: a field left out (to_json's rule)
            fields[name] = _from(x, field_type, (path, name), fit)
        elif type(field_type) is OptionT:
            if not fit:
                fields[name] = NONE
        else:
            raise ConversionError(_format_path((path, name)), type_name(field_type), None,
                                  f"field missing from {type_name(t)}")
    return fields if fit else Record(t.info.name, fields)


def _variant_forms(variants: list[tuple[str, Type | None]]) -> str:
    return ", ".join(f'"{n}"' if p is None else f'{{"{n}": …}}' for n, p in variants)


def _from_enum(data: Any, t: EnumT, path: Path, fit: int) -> Any:
    variants = t.variants()
    enum = t.info.name
    if isinstance(data, str):
        for name, payload_type in variants:
            if name == data:
                if payload_type is None:
                    return name if fit else Variant(enum, name)
                raise _mismatch(path, t, data, f'variant {name} carries a payload: write {{"{name}": …}}')
        raise _mismatch(path, t, data, f"unknown variant; one of {_variant_forms(variants)}")
    entry = _single_key(data)
    if entry is not None:
        key, payload = entry
        for name, payload_type in variants:
            if name == key:
                if payload_type is None:
                    raise _mismatch(path, t, data, f'variant {name} has no payload: write "{name}"')
                value = _from(payload, payload_type, (path, name), fit)
                return {name: value} if fit else Variant(enum, name, value)
        raise _mismatch(path, t, data, f"unknown variant; one of {_variant_forms(variants)}")
    raise _mismatch(path, t, data, f"one of {_variant_forms(variants)}")


_FROM = {
    Prim: _from_prim,
    ListT: _from_list,
    TupleT: _from_tuple,
    MapT: _from_map,
    OptionT: _from_option,
    ResultT: _from_result,
    RecordT: _from_record,
    EnumT: _from_enum,
}


# ---------------------------------------------------------------- JSON Schema

_PRIM_SCHEMA = {
    "Int": {"type": "integer"},
    "Float": {"type": "number"},
    "Bool": {"type": "boolean"},
    "String": {"type": "string"},
    "Unit": {"type": "null"},
}


def _error_schema() -> dict:
    return {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "message": {"type": "string"}},
        "required": ["kind", "message"],
    }


_DEFS_NAME = re.compile(r"[^A-Za-z0-9_]+")


def json_schema(t: Type) -> dict:
    """S(T), the JSON Schema of type t (§5).

    Records and enums are written inline, except those that contain themselves: such a type is written
    once under `$defs` (named after the type, `Pair<Int, String>` -> `Pair_Int_String`) and every
    occurrence, the outermost one included, becomes `{"$ref": "#/$defs/<name>"}`; when the root type itself
    is recursive, the root schema is a copy of its definition, so the root keeps a concrete `type`.
    """
    builder = _SchemaBuilder()
    schema = builder.build(t, None)
    if not builder.defs:
        return schema
    ref = schema.get("$ref")
    root = dict(builder.defs[ref[len("#/$defs/"):]]) if ref is not None and len(schema) == 1 else dict(schema)
    root["$defs"] = builder.defs
    return root


class _SchemaBuilder:
    # A type argument that grows at each level (`enum W<T> { A(W<List<T>>) }`) never repeats, so the
    # `$defs` guard alone would not end; past this depth of nested records/enums the build gives up.
    MAX_DEPTH = 64

    def __init__(self) -> None:
        self.defs: dict[str, dict] = {}
        self.names: dict[Type, str] = {}
        self.in_progress: list[Type] = []
        self.recursive: set[Type] = set()

    def build(self, t: Type, path: Path) -> dict:
        cls = type(t)
        if cls is Prim:
            if t.name == "Error":  # type: ignore[attr-defined]
                return _error_schema()
            schema = _PRIM_SCHEMA.get(t.name)  # type: ignore[attr-defined]
            if schema is None:
                raise _unconvertible(t, path)
            return dict(schema)
        if cls is ListT:
            return {"type": "array", "items": self.build(t.elem, (path, _EVERY))}  # type: ignore[attr-defined]
        if cls is MapT:
            key = t.key  # type: ignore[attr-defined]
            if type(key) is not Prim or key.name not in _KEY_TYPES:  # type: ignore[attr-defined]
                raise _unconvertible(key, path, "" if type(key) is TypeVar else _BAD_KEY)
            return {"type": "object", "additionalProperties": self.build(t.value, (path, _EVERY))}  # type: ignore[attr-defined]
        if cls is OptionT:
            return {"anyOf": [self.build(t.inner, path), {"type": "null"}]}  # type: ignore[attr-defined]
        if cls is ResultT:
            return {"oneOf": [self._tagged("Ok", t.ok, path), self._tagged("Err", t.err, path)]}  # type: ignore[attr-defined]
        if cls is TupleT:
            items = [self.build(x, (path, i)) for i, x in enumerate(t.items)]  # type: ignore[attr-defined]
            return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
        if cls is RecordT or cls is EnumT:
            return self._named(t, path)
        raise _unconvertible(t, path)

    def _tagged(self, tag: str, payload: Type, path: Path) -> dict:
        return {
            "type": "object",
            "properties": {tag: self.build(payload, (path, tag))},
            "required": [tag],
            "additionalProperties": False,
        }

    def _named(self, t: Type, path: Path) -> dict:
        if t in self.in_progress:
            self.recursive.add(t)
            return {"$ref": "#/$defs/" + self._def_name(t)}
        if len(self.in_progress) >= self.MAX_DEPTH:
            raise ConversionError(_format_path(path), type_name(t), None, "type nests too deeply for a schema")
        self.in_progress.append(t)
        try:
            body = self._record(t, path) if type(t) is RecordT else self._enum(t, path)  # type: ignore[arg-type]
        finally:
            self.in_progress.pop()
        if t not in self.recursive:
            return body
        name = self._def_name(t)
        self.defs[name] = body
        return {"$ref": "#/$defs/" + name}

    def _def_name(self, t: Type) -> str:
        name = self.names.get(t)
        if name is None:
            base = _DEFS_NAME.sub("_", type_name(t)).strip("_")
            name = base
            taken = set(self.names.values())
            n = 2
            while name in taken:
                name = f"{base}_{n}"
                n += 1
            self.names[t] = name
        return name

    def _record(self, t: RecordT, path: Path) -> dict:
        fields = t.fields()
        return {
            "type": "object",
            "properties": {n: self.build(ft, (path, n)) for n, ft in fields},
            "required": [n for n, ft in fields if type(ft) is not OptionT],
        }

    def _enum(self, t: EnumT, path: Path) -> dict:
        variants = t.variants()
        if all(p is None for _, p in variants):
            return {"type": "string", "enum": [n for n, _ in variants]}
        return {"oneOf": [
            {"type": "string", "const": n} if p is None else self._tagged(n, p, path) for n, p in variants
        ]}


# ---------------------------------------------------------------- defaults

def default_value(t: Type) -> Any:
    """The default value of t (§4.8): zeros, `false`, empty strings and collections, `None`, `()`; tuples
    and records field-wise; an enum its first variant, with its payload's default when it has one.

    The `echo` model uses the same function for its schema-valid answers, so it also covers types that
    persistence forbids: `Result` defaults to `Ok` of its default, `Error` to a `User` error with an empty
    message. When the first variant's payload has no default (it contains the enum itself, as in
    `enum Tree { Node((Tree, Tree)), Leaf }`), the next variant that has one is taken.
    """
    return _default(t, [], None)


_PRIM_DEFAULT = {"Int": 0, "Float": 0.0, "Bool": False, "String": ""}


def _default(t: Type, active: list[Type], path: Path) -> Any:
    cls = type(t)
    if cls is Prim:
        name = t.name  # type: ignore[attr-defined]
        if name in _PRIM_DEFAULT:
            return _PRIM_DEFAULT[name]
        if name == "Unit":
            return UNIT
        if name == "Error":
            return ErrorValue("User", "")
        raise _unconvertible(t, path)
    if cls is ListT:
        return []
    if cls is MapT:
        return {}
    if cls is OptionT:
        return NONE
    if cls is ResultT:
        return Variant("Result", "Ok", _default(t.ok, active, (path, "Ok")))  # type: ignore[attr-defined]
    if cls is TupleT:
        return tuple(_default(x, active, (path, i)) for i, x in enumerate(t.items))  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        if t in active:
            raise ConversionError(_format_path(path), type_name(t), None, "a type that contains itself has no default")
        active.append(t)
        try:
            if cls is RecordT:
                fields = {n: _default(ft, active, (path, n)) for n, ft in t.fields()}  # type: ignore[attr-defined]
                return Record(t.info.name, fields)  # type: ignore[attr-defined]
            return _default_variant(t, active, path)  # type: ignore[arg-type]
        finally:
            active.pop()
    raise _unconvertible(t, path)


def _default_variant(t: EnumT, active: list[Type], path: Path) -> Variant:
    failure: ConversionError | None = None
    for name, payload_type in t.variants():
        if payload_type is None:
            return Variant(t.info.name, name)
        try:
            return Variant(t.info.name, name, _default(payload_type, active, (path, name)))
        except ConversionError as exc:
            if failure is None:
                failure = exc
    assert failure is not None, "the grammar gives every enum at least one variant"
    raise failure
