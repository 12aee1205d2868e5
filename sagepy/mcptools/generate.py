"""`sage tools generate` (SPEC §10.4): Sage declarations from a server's tool listings.

Pure: it takes the listing objects (MCP wire spelling, as `mcp_list_tools` returns them) and produces source
text. JSON Schema is read backwards through SPEC §5: string/integer/number/boolean, arrays, objects with
properties as records, `additionalProperties` as maps, string enums as payload-free enums, `anyOf [X, null]`
and optional properties as Option, `$ref` into `$defs` resolved first.

The output must pass `sage check` and agree with `sage check --verify-tools`, which settles two corners:
a nullable parameter the server requires is declared without Option (a `None` argument is left out of the
call, §8.4, so it could never satisfy the requirement), and an `outputSchema` whose single `result` property
is an object becomes a record with a `result` field (§8.4 unwraps `result` only for non-record types).
"""
from __future__ import annotations

import inspect
import json
import re
from typing import Any

KEYWORDS = frozenset(
    "agent as await belief break catch checkpoint children const continue delay divine else enum error extern fail "
    "fails false fn follows for handler handles if in infer let loop match message mock mod on pause protocol pub "
    "receive receives record reply restart resting resume retry return run self send span start stop strategy "
    "summon super supervisor test timeout tool trace true try use waking while yield Int Float Bool String Unit "
    "List Map Option Result Oracle Agent Fn Error ErrorKind".split())
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_DEPTH = 32
_REMOTE = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")  # what `#[mcp_name]` accepts (E085)


def is_sage_name(text: str) -> bool:
    """An identifier usable for items and enum variants (not a keyword)."""
    return bool(_NAME.match(text)) and text not in KEYWORDS


def pascal_case(text: str) -> str:
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", text) if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts)
    if not name or not name[0].isalpha():
        return ""
    return name


def sage_fn_name(remote: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", remote) or "_"
    if name[0].isdigit():
        name = "_" + name
    if name in KEYWORDS:
        name = name + "_"
    return name


def tool_block_name(configured: str | None, server_name: str | None) -> str:
    """The configured name, or the server's name in PascalCase (`mcp-tracker` → `McpTracker`, else
    `Server`); a name that cannot be an identifier is made into one the same way."""
    if configured and is_sage_name(configured):
        return configured
    name = pascal_case(configured or server_name or "") or "Server"
    return name if name not in KEYWORDS else name + "Server"


class _Generator:
    def __init__(self) -> None:
        self.decls: list[str] = []
        self.used: set[str] = set()
        self.by_ref: dict[tuple, str] = {}
        self.depth = 0

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.used or candidate in KEYWORDS:
            candidate = f"{name}{n}"
            n += 1
        self.used.add(candidate)
        return candidate

    def resolve(self, schema: Any, defs: dict) -> dict:
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            seen += 1
        return schema if isinstance(schema, dict) else {}

    def type_of(self, schema: Any, defs: dict, name_hint: str, notes: list[str], where: str, output: bool) -> str:
        """The Sage type for a schema; `notes` collects comments for shapes that need a person's attention.

        `output` is true for results: there a nullable schema is `Option<X>`; for arguments it is X, since
        Sage never sends null (Option means "may be left out", which the caller decides by requiredness).
        A `$ref` is mapped once per direction, so a recursive schema names its record instead of unfolding."""
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        key = (ref, output)
        if isinstance(ref, str) and key in self.by_ref:
            return self.by_ref[key]
        if self.depth > _MAX_DEPTH:
            notes.append(f"TODO {where}: schema nested too deeply, typed as String")
            return "String"
        self.depth += 1
        try:
            found = self._type_of(self.resolve(schema, defs), defs, name_hint, notes, where, output,
                                  key if isinstance(ref, str) else None)
        finally:
            self.depth -= 1
        if isinstance(ref, str):
            self.by_ref[key] = found
        return found

    def _type_of(self, schema: dict, defs: dict, name_hint: str, notes: list[str], where: str, output: bool,
                 ref_key: tuple | None) -> str:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                resolved = [self.resolve(o, defs) for o in options]
                non_null = [o for o in resolved if o.get("type") != "null"]
                if len(non_null) == 1 and len(resolved) == 2:
                    inner = self.type_of(non_null[0], defs, name_hint, notes, where, output)
                    return f"Option<{inner}>" if output else inner
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            if len(non_null) == 1:
                inner = self.type_of(dict(schema, type=non_null[0]), defs, name_hint, notes, where, output)
                return f"Option<{inner}>" if "null" in kind and output else inner
            kind = None
        if kind == "string" and isinstance(schema.get("enum"), list):
            values = schema["enum"]
            if values and all(isinstance(v, str) and is_sage_name(v) for v in values) and \
                    len(set(values)) == len(values):
                enum_name = self.unique(name_hint)
                self.decls.append(f"pub enum {enum_name} {{ {', '.join(values)} }}")
                return enum_name
            notes.append(f"{where}: one of {', '.join(json.dumps(v) for v in values)}")
            return "String"
        simple = {"string": "String", "integer": "Int", "number": "Float", "boolean": "Bool"}.get(kind or "")
        if simple is not None:
            return simple
        if kind == "array":
            item = self.type_of(schema.get("items", {}), defs, name_hint + "Item", notes, where + "[]", output)
            return f"List<{item}>"
        if kind == "object" or "properties" in schema:
            props = schema.get("properties")
            if isinstance(props, dict) and props:
                return self.record(props, schema.get("required", []), defs, name_hint, notes, where, output,
                                   ref_key)
            values = schema.get("additionalProperties")
            if isinstance(values, dict) and values:
                value = self.type_of(values, defs, name_hint + "Value", notes, where + ".*", output)
                return f"Map<String, {value}>"
            notes.append(f"TODO {where}: an object without declared properties, typed as Map<String, String>")
            return "Map<String, String>"
        notes.append(f"TODO {where}: schema {_short(schema)} has no Sage equivalent, typed as String")
        return "String"

    def record(self, props: dict, required: Any, defs: dict, name_hint: str, notes: list[str], where: str,
               output: bool, ref_key: tuple | None = None) -> str:
        name = self.unique(name_hint)
        if ref_key is not None:  # registered before the fields, so that a field referring back finds it
            self.by_ref[ref_key] = name
        index = len(self.decls)
        self.decls.append("")
        required = required if isinstance(required, list) else []
        fields = []
        for prop, sub in props.items():
            if not _NAME.match(prop):
                notes.append(f"TODO {where}: field '{prop}' is not a valid Sage name, the record leaves it out")
                continue
            t = self.type_of(sub, defs, name_hint + pascal_case(prop), notes, f"{where}.{prop}", output)
            if prop not in required and not t.startswith("Option<"):
                t = f"Option<{t}>"
            fields.append(f"{prop}: {t}")
        self.decls[index] = f"pub record {name} {{ {', '.join(fields)} }}"
        return name

    def is_object(self, schema: Any, defs: dict) -> bool:
        """Whether a schema maps to a record or a Map (not to an Option of one)."""
        schema = self.resolve(schema, defs)
        if "anyOf" in schema or "oneOf" in schema:
            return False
        kind = schema.get("type")
        if isinstance(kind, list):
            return kind == ["object"]
        return kind == "object" or (kind is None and "properties" in schema)


def _short(schema: Any) -> str:
    text = json.dumps(schema, separators=(",", ":"))
    return text if len(text) <= 60 else text[:57] + "..."


def generate(tools: list[dict], *, block_name: str, server_name: str, server_version: str, protocol: str,
             today: str) -> str:
    """Sage source for the listed tools (SPEC §10.4)."""
    gen = _Generator()
    gen.used.add(block_name)
    fn_names: set[str] = set()
    fns: list[str] = []
    for tool in tools:
        remote = tool.get("name", "")
        schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
        defs = dict(schema.get("$defs") or schema.get("definitions") or {})
        schema = gen.resolve(schema, defs)
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or []) & set(props)
        if not _REMOTE.match(remote):
            fns.append(f"    // skipped {json.dumps(remote)}: not a valid MCP tool name for #[mcp_name]")
            continue
        bad = next((p for p in props if not _NAME.match(p)), None)
        if bad is not None:
            fns.append(f"    // skipped {remote}: parameter '{bad}' is not a valid Sage name")
            continue
        fn_name = sage_fn_name(remote)
        base, n = fn_name, 2
        while fn_name in fn_names:  # `get-sum` and `get_sum` would both be get_sum
            fn_name, n = f"{base}_{n}", n + 1
        fn_names.add(fn_name)
        stem = pascal_case(fn_name) or "Tool"
        notes: list[str] = []
        params = []
        for prop in [p for p in props if p in required] + [p for p in props if p not in required]:
            t = gen.type_of(props[prop], defs, stem + pascal_case(prop), notes, prop, output=False)
            params.append(f"{prop}: {t}" if prop in required else f"{prop}: Option<{t}>")
        ret = _return_type(gen, tool.get("outputSchema"), stem, notes)
        safety = tool.get("safety", "destructive")
        summary = (tool.get("description") or "").strip().split("\n")[0].strip()
        lines = [f"    // {summary} [{safety}]" if summary else f"    // [{safety}]"]
        lines.extend(f"    // {note}" for note in notes)
        lines.extend(doc_comment(tool.get("description"), "    "))
        if fn_name != remote:
            lines.append(f'    #[mcp_name = "{remote}"]')
        lines.append(f"    fn {fn_name}({', '.join(params)}) -> {ret}")
        fns.append("\n".join(lines))
    header = [f"// Generated by `sage tools generate` on {today} from MCP server {server_name or 'unknown'} "
              f"{server_version or 'unknown'} (protocol {protocol or 'unknown'}).",
              "// Edit freely: `sage check --verify-tools` compares these declarations with the server.", ""]
    body = [d for d in gen.decls if d]
    out = header + body + ([""] if body else []) + [f"pub tool {block_name} {{", "\n\n".join(fns), "}", ""]
    return "\n".join(out)


def doc_comment(description: Any, indent: str) -> list[str]:
    """The server's description as `///` lines: the doc comment a tool function shows the model (SPEC §1.1,
    §4.12), so the model sees what the server says, and the reader too."""
    if not isinstance(description, str) or not description.strip():
        return []
    lines = [line.rstrip() for line in inspect.cleandoc(description).splitlines()]
    return [f"{indent}/// {line}" if line else f"{indent}///" for line in lines]


def _return_type(gen: _Generator, output: Any, stem: str, notes: list[str]) -> str:
    if not isinstance(output, dict):
        return "String"
    defs = dict(output.get("$defs") or output.get("definitions") or {})
    output = gen.resolve(output, defs)
    props = output.get("properties")
    if not isinstance(props, dict) or not props:
        if isinstance(output.get("additionalProperties"), dict) and output["additionalProperties"]:
            return gen.type_of(output, defs, stem + "Result", notes, "result", output=True)
        return "String"
    if set(props) == {"result"} and not gen.is_object(props["result"], defs):
        return gen.type_of(props["result"], defs, stem + "Result", notes, "result", output=True)
    return gen.record(props, output.get("required", []), defs, stem + "Result", notes, "result", output=True)
