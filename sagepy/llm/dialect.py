"""The schema dialectizer (SPEC §4.12): a tool's parameter schema rewritten into the subset of JSON Schema
that strict function calling accepts, with what had to go said in words.

Hosted APIs that constrain the model's arguments to a schema ("strict" function calling) accept only a
subset of JSON Schema: every object must say `"additionalProperties": false` and list every property in
`required`, unions are `anyOf` (not at the root), and keywords such as `format`, `pattern`, length and range
bounds, `default` or `allOf` are refused by some of them with HTTP 400. `dialectize` turns any parameter
schema (ours, from §5, or an MCP server's `inputSchema`) into that subset where it can, and says whether the
result qualifies for `"strict": true`:

- every object gets `additionalProperties: false` and all its properties `required`; a property that was not
  required (an `Option` field of ours, an optional argument of a server) admits `null`;
- `$ref`/`$defs` (and `definitions`) are inlined; a reference is looked up in the nearest enclosing `$defs`,
  so a §5 schema nested under a parameter keeps working; recursion is cut after 8 levels with `{}`;
- `oneOf` becomes `anyOf`, a one-element `allOf` is merged into its schema;
- value constraints (`format`, `pattern`, bounds, `default`, …) are removed and listed in `hint`, a sentence
  the caller appends to the function's description, so the model still learns them;
- what strict mode cannot express at all leaves the schema usable but not strict: a free-form map
  (`additionalProperties` a schema or true), a property schema without a type (written `{}`), tuples
  (`prefixItems`), a union at the root, or a schema past the size limits.

For a server's schema, `null` on a property that was optional means "leave the argument out":
`undo_nulls(arguments, dialected)` removes those keys, at every level, before the call is made. Our own
schemas need no such step, since §5 reads `null` and a missing `Option` field alike.

Pure functions over plain dicts: the input is never mutated, key order is kept, the output is deterministic.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

# How many times one `$ref` may be inlined within itself before the rest is cut with `{}` (§4.12).
MAX_REF_DEPTH = 8
# Size limits of strict mode (OpenAI structured outputs: 10 levels of object nesting, 5000 object
# properties, 1000 enum values); a schema past them is still sent, not strict.
MAX_OBJECT_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000
# A recursive schema with several self-references per level grows exponentially when inlined; past this
# many inlined references the remaining ones are cut with `{}` as well.
MAX_INLINED_REFS = 2000
# The hint is prose for the model, not a second schema: long constraint lists are cut.
MAX_HINT_CHARS = 1000
MAX_HINT_VALUE_CHARS = 120

EMPTY_PARAMETERS: dict = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}

# Kept as they are (their sub-schemas are rewritten).
_KEPT = ("type", "description", "title", "enum", "const")
# Value constraints strict mode refuses: removed, and listed in the hint.
_HINTED = frozenset((
    "format", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "default", "examples", "contentEncoding", "contentMediaType", "not", "if", "then",
    "else", "dependentRequired", "dependentSchemas", "dependencies", "patternProperties", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
    "additionalItems",
))
# Hinted keywords whose value is an instance (a string of them is quoted in the hint).
_VALUES = frozenset(("default", "examples"))
# Everything else (`$schema`, `$id`, `$comment`, `readOnly`, `deprecated`, `x-…` extensions, …) is dropped
# without a word: it constrains nothing the model could get wrong.

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


@dataclass(frozen=True)
class Omissions:
    """Where, in a server's arguments, the model's `null` means "leave this argument out".

    `names`: properties of this object made nullable because they were optional; `properties`, `items`,
    `values` (a map's values) and `variants` (the object branches of an `anyOf`, keyed by their property
    names) lead to deeper objects that have some.
    """

    names: frozenset[str] = frozenset()
    properties: dict[str, Omissions] = field(default_factory=dict)
    items: Omissions | None = None
    values: Omissions | None = None
    variants: tuple[tuple[frozenset[str] | None, Omissions], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.names or self.properties or self.items or self.values or self.variants)


@dataclass(frozen=True)
class Dialected:
    """A dialectized parameter schema.

    `parameters`: the object schema to send. `strict`: whether `"strict": true` may be sent with it.
    `hint`: "" or a sentence listing the removed constraints, for the end of the function description.
    `omissions`: for a server's schema, where a `null` argument is to be left out (see `undo_nulls`);
    None when there is nothing to undo. `loose`: why the schema is not strict (empty when it is).
    """

    parameters: dict
    strict: bool
    hint: str = ""
    omissions: Omissions | None = None
    loose: tuple[str, ...] = ()

    @property
    def nullable_omitted(self) -> frozenset[str]:
        """The top-level arguments whose `null` means "leave it out"."""
        return self.omissions.names if self.omissions is not None else frozenset()


def dialectize(schema: dict | None, *, from_server: bool = False) -> Dialected:
    """The strict-mode dialect of a parameter schema (§4.12); `from_server` for an MCP `inputSchema`."""
    if not isinstance(schema, dict) or _is_empty_object(schema):
        return Dialected(copy.deepcopy(EMPTY_PARAMETERS), True)
    rewriter = _Rewriter(schema, from_server)
    out, omissions = rewriter.rewrite(schema, (), 0, root=True)
    if "anyOf" in out and "type" not in out:
        rewriter.loose.append("a union at the root")
    if rewriter.properties > MAX_PROPERTIES:
        rewriter.loose.append(f"more than {MAX_PROPERTIES} properties")
    if rewriter.enum_values > MAX_ENUM_VALUES:
        rewriter.loose.append(f"more than {MAX_ENUM_VALUES} enum values")
    loose = tuple(dict.fromkeys(rewriter.loose))
    return Dialected(out, not loose, rewriter.hint(), omissions or None, loose)


def undo_nulls(arguments: dict, dialected: Dialected) -> dict:
    """`arguments` without the keys whose `null` means "leave the argument out" (a new dict)."""
    if dialected.omissions is None or not isinstance(arguments, dict):
        return arguments
    return _undo(arguments, dialected.omissions)


def _undo(value: Any, node: Omissions) -> Any:
    for keys, variant in node.variants:
        # The branch of an `anyOf` that the value took: the object with exactly its keys, or the array.
        if (keys == value.keys() if keys is not None and isinstance(value, dict)
                else keys is None and isinstance(value, list) and variant.items is not None):
            node = variant
            break
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is None and key in node.names:
                continue
            child = node.properties.get(key, node.values)
            out[key] = _undo(item, child) if child is not None else item
        return out
    if isinstance(value, list) and node.items is not None:
        return [_undo(item, node.items) for item in value]
    return value


def _is_empty_object(schema: dict) -> bool:
    """A root that declares no arguments at all: `{}`, or an object without properties of any kind."""
    if schema.get("type", "object") != "object":
        return False
    return not schema.get("properties") and not any(
        k in schema for k in ("additionalProperties", "patternProperties", "anyOf", "oneOf", "allOf", "$ref"))


def _admits_null(schema: dict) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and _admits_null(s) for s in schema.get("anyOf", ()))


def _inferred_type(values: list) -> str | list[str] | None:
    """The `type` that `enum`/`const` values imply, for a schema that left it out."""
    kinds = list(dict.fromkeys(_JSON_TYPES.get(type(v)) for v in values))
    if None in kinds or not kinds:
        return None
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return kinds[0] if len(kinds) == 1 else kinds


def _in_order_of(out: dict, schema: dict) -> dict:
    """`out` with its keys in the order of the same keys in `schema` (`oneOf` standing for `anyOf`), the
    keys the rewrite added after them."""
    where = {("anyOf" if k == "oneOf" else k): i for i, k in reversed(list(enumerate(schema)))}
    ranked = sorted(enumerate(out), key=lambda ik: (where.get(ik[1], -1 if ik[1] == "type" else len(where)), ik[0]))
    return {k: out[k] for _, k in ranked}


def _show(value: Any, quoted: bool) -> str:
    """A keyword's value for the hint: JSON, except a bare string where it is a name (a format, a pattern)."""
    text = value if isinstance(value, str) and not quoted else json.dumps(value, ensure_ascii=False,
                                                                           separators=(",", ":"))
    return text if len(text) <= MAX_HINT_VALUE_CHARS else text[:MAX_HINT_VALUE_CHARS - 1] + "…"


def _path_text(path: tuple[str, ...]) -> str:
    text = ""
    for step in path:
        text += step if step.startswith("[") or not text else "." + step
    return text or "arguments"


class _Rewriter:
    def __init__(self, root: dict, from_server: bool) -> None:
        self.root = root
        self.from_server = from_server
        self.loose: list[str] = []
        self.hints: dict[str, list[str]] = {}
        self.scopes: list[dict] = []  # the `$defs` tables of the enclosing schemas, innermost last
        self.refs: list[str] = []  # the `$ref`s being inlined on the current path
        self.inlined = 0
        self.properties = 0
        self.enum_values = 0

    def hint(self) -> str:
        if not self.hints:
            return ""
        text = "Constraints: " + "; ".join(f"{p}: {', '.join(c)}" for p, c in self.hints.items()) + "."
        return text if len(text) <= MAX_HINT_CHARS else text[:MAX_HINT_CHARS - 1] + "…"

    def _note(self, path: tuple[str, ...], text: str) -> None:
        if len(set(self.refs)) < len(self.refs):
            return  # a recursive copy: its constraints were noted at the first level already
        notes = self.hints.setdefault(_path_text(path), [])
        if text not in notes:
            notes.append(text)

    def rewrite(self, schema: Any, path: tuple[str, ...], depth: int,
                root: bool = False) -> tuple[dict, Omissions | None]:
        """The dialect of `schema` at `path`, `depth` objects deep, and its omissions."""
        if schema is True or schema == {}:
            self.loose.append(f"{_path_text(path)}: a schema without a type")
            return {}, None
        if not isinstance(schema, dict):
            self.loose.append(f"{_path_text(path)}: not a schema")
            return {}, None
        defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
        if defs:
            self.scopes.append(defs)
        try:
            return self._rewrite(schema, path, depth, root)
        finally:
            if defs:
                self.scopes.pop()

    def _rewrite(self, schema: dict, path: tuple[str, ...], depth: int, root: bool) -> tuple[dict, Omissions | None]:
        if "$ref" in schema:
            return self._inline(schema, path, depth)
        schema = self._merged_all_of(schema)
        out: dict = {}
        for key in _KEPT:
            if key in schema:
                out[key] = copy.deepcopy(schema[key])  # the caller may change what it gets; not the input
        for key, value in schema.items():
            # `default: null` only restates that null may be sent, which the schema now says anyway
            if key in _HINTED and not (key == "default" and value is None):
                self._note(path, f"{key} {_show(value, quoted=key in _VALUES)}")
        if "enum" in schema and isinstance(schema["enum"], list):
            self.enum_values += len(schema["enum"])
        if "type" not in out:
            implied = _inferred_type(schema["enum"] if isinstance(schema.get("enum"), list)
                                     else [schema["const"]] if "const" in schema else [])
            if implied is not None:
                out = {"type": implied, **out}
            elif "properties" in schema:
                out = {"type": "object", **out}
        kind = out.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
        omissions: Omissions | None = None
        if is_object:
            omissions = self._object(schema, out, path, depth + 1)
        if "items" in schema or "prefixItems" in schema:
            omissions = self._array(schema, out, path, depth) or omissions
        unions = [*schema.get("anyOf", ()), *schema.get("oneOf", ())]
        if unions:
            variants, branch_omissions = self._union(unions, path, depth)
            out["anyOf"] = variants
            if branch_omissions:
                omissions = Omissions(variants=branch_omissions) if omissions is None else omissions
        if "type" not in out and "anyOf" not in out and "enum" not in out and "const" not in out:
            self.loose.append(f"{_path_text(path)}: a schema without a type")
            return {}, None
        if root and not is_object:
            self.loose.append("a root that is not an object")
        return _in_order_of(out, schema), omissions

    def _inline(self, schema: dict, path: tuple[str, ...], depth: int) -> tuple[dict, Omissions | None]:
        ref = schema["$ref"]
        target = self._resolve(ref)
        if target is None:
            self.loose.append(f"{_path_text(path)}: unresolved $ref {ref}")
            return {}, None
        # Only a reference met again on its own path is recursion; a chain of distinct types is not cut.
        if self.refs.count(ref) >= MAX_REF_DEPTH or self.inlined >= MAX_INLINED_REFS:
            self.loose.append(f"{_path_text(path)}: recursion cut after {MAX_REF_DEPTH} levels")
            return {}, None
        self.inlined += 1
        # Keywords beside the `$ref` (a description, a default) refine the target: they win.
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        self.refs.append(ref)
        try:
            return self.rewrite(merged, path, depth)
        finally:
            self.refs.pop()

    def _resolve(self, ref: Any) -> dict | None:
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        if ref == "#":
            return self.root
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                name = ref[len(prefix):].replace("~1", "/").replace("~0", "~")
                for defs in reversed(self.scopes):
                    if isinstance(defs.get(name), dict):
                        return defs[name]
        return None

    def _merged_all_of(self, schema: dict) -> dict:
        """`schema` with an `allOf` of object schemas folded into it (properties and required united)."""
        parts = schema.get("allOf")
        if not isinstance(parts, list):
            return schema
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in parts:
            if isinstance(part, dict) and "$ref" in part:
                part = self._resolve(part["$ref"]) or {}
            if not isinstance(part, dict):
                continue
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
                else:
                    merged.setdefault(key, value)
        return merged

    def _object(self, schema: dict, out: dict, path: tuple[str, ...], depth: int) -> Omissions | None:
        if depth > MAX_OBJECT_DEPTH:
            self.loose.append(f"{_path_text(path)}: objects nested more than {MAX_OBJECT_DEPTH} deep")
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        # An object that lists its properties (even none) is closed unless it says otherwise; one that
        # lists none is a free-form map.
        extra = schema.get("additionalProperties", False if "properties" in schema else True)
        props: dict = {}
        names: set[str] = set()
        children: dict[str, Omissions] = {}
        for name, sub in properties.items():
            self.properties += 1
            rewritten, child = self.rewrite(sub, (*path, name), depth)
            if name not in required and rewritten and not _admits_null(rewritten):
                rewritten = {"anyOf": [rewritten, {"type": "null"}]}
                if self.from_server:
                    names.add(name)
            props[name] = rewritten
            if child:
                children[name] = child
        if "properties" in schema or extra is False:
            out["properties"] = props
            out["required"] = list(props)
        values: Omissions | None = None
        if extra is False:
            out["additionalProperties"] = False
        else:
            self.loose.append(f"{_path_text(path)}: a free-form map")
            if isinstance(extra, dict):
                out["additionalProperties"], values = self.rewrite(extra, (*path, "*"), depth)
            else:
                out["additionalProperties"] = True
        node = Omissions(frozenset(names), children, values=values)
        return node if node else None

    def _array(self, schema: dict, out: dict, path: tuple[str, ...], depth: int) -> Omissions | None:
        items = schema.get("items")
        element: Omissions | None = None
        if "prefixItems" in schema or isinstance(items, list):
            self.loose.append(f"{_path_text(path)}: a tuple")
            tuple_items = schema.get("prefixItems", items if isinstance(items, list) else [])
            out["prefixItems"] = [self.rewrite(s, (*path, f"[{i}]"), depth)[0] for i, s in enumerate(tuple_items)]
            if isinstance(items, (dict, bool)) and "prefixItems" in schema:
                out["items"] = items if isinstance(items, bool) else self.rewrite(items, (*path, "[]"), depth)[0]
        elif items is not None:
            out["items"], element = self.rewrite(items, (*path, "[]"), depth)
        if "type" not in out:
            out["type"] = "array"
        return Omissions(items=element) if element else None

    def _union(self, branches: list, path: tuple[str, ...],
               depth: int) -> tuple[list[dict], tuple[tuple[frozenset[str] | None, Omissions], ...]]:
        variants: list[dict] = []
        omitted: list[tuple[frozenset[str] | None, Omissions]] = []
        for branch in branches:
            rewritten, child = self.rewrite(branch, path, depth)
            if rewritten in variants:
                continue
            variants.append(rewritten)
            if child is not None:
                keys = frozenset(rewritten["properties"]) if "properties" in rewritten else None
                omitted.append((keys, child))
        return variants, tuple(omitted)


def tool(name: str, description: str | None, dialected: Dialected) -> dict:
    """The chat-completions tool of one offered function (SPEC §4.12 "What the model sees"): the removed
    constraints end its description, and `strict` says whether the schema qualifies."""
    if dialected.hint:
        description = f"{description}\n\n{dialected.hint}" if description else dialected.hint
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = dialected.parameters
    function["strict"] = dialected.strict
    return {"type": "function", "function": function}
