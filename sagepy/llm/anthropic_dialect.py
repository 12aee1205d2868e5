"""The Anthropic dialect of parameter schemas (SPEC §4.13): what the Messages API accepts as `input_schema`.

The Messages API takes any JSON Schema (draft 2020-12) whose root is an object, so little changes: `$ref`
and `$defs` stay, nothing is removed or moved into the description, and no optional property becomes
nullable (so the model's arguments need no `undo_nulls`). Objects the program declared (the records of §5,
and the parameter object of a typed function) get `"additionalProperties": false`, which keeps the model to
their fields; a server's `inputSchema` is sent as listed, with a root that is not an object schema replaced
by the empty object schema, and draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` (which 2020-12
refuses) rewritten into their numeric form.
"""
from __future__ import annotations

import copy
from typing import Any

from .dialect import Dialected

EMPTY_PARAMETERS: dict = {"type": "object", "properties": {}}

# Keywords whose value is one schema, or a map or list of schemas (JSON Schema 2020-12 applicators).
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")


def dialectize(schema: dict | None, *, from_server: bool = False) -> Dialected:
    """The `input_schema` of a parameter schema; `from_server` for an MCP `inputSchema`."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return Dialected(copy.deepcopy(EMPTY_PARAMETERS) if from_server
                         else dict(EMPTY_PARAMETERS, additionalProperties=False), False)
    out = _rewrite(schema, closed=not from_server)
    out.setdefault("type", "object")
    return Dialected(out, False)


def tool(name: str, description: str | None, dialected: Dialected) -> dict:
    """A Messages API tool: `{"name", "description"?, "input_schema"}`."""
    definition: dict[str, Any] = {"name": name}
    if description:
        definition["description"] = description
    definition["input_schema"] = dialected.parameters
    return definition


def _rewrite(schema: Any, closed: bool) -> Any:
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE:
            out[key] = _rewrite(value, closed)
        elif key in _MAP and isinstance(value, dict):
            out[key] = {name: _rewrite(sub, closed) for name, sub in value.items()}
        elif key in _LIST and isinstance(value, list):
            out[key] = [_rewrite(sub, closed) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool):
            if out.pop(bound) and limit in out:
                out[bound] = out.pop(limit)
    if closed and "properties" in out and "additionalProperties" not in out and _is_object(out):
        out["additionalProperties"] = False
    return out


def _is_object(schema: dict) -> bool:
    kind = schema.get("type", "object")
    return kind == "object" or isinstance(kind, list) and "object" in kind
