"""`sage tools generate` (SPEC §10.4): Sage declarations from a server's tool listings.

Pure: it takes the listing objects (MCP wire spelling, as `mcp_list_tools` returns them) and produces source
text. JSON Schema is read backwards through SPEC §5: string/integer/number/boolean, arrays, objects with
properties as records, string enums as payload-free enums, `anyOf [X, null]` and optional properties as
Option, `$ref` into `$defs` resolved first.
"""
from __future__ import annotations

import re
from typing import Any

KEYWORDS = frozenset(
    "agent as await belief break catch checkpoint children const continue delay divine else enum error extern fail "
    "fails false fn follows for handler handles if in infer let loop match message mock mod on pause protocol pub "
    "receive receives record reply restart resting resume retry return run self send span start stop strategy "
    "summon super supervisor test timeout tool trace true try use waking while yield Int Float Bool String Unit "
    "List Map Option Result Oracle Agent Fn Error ErrorKind".split())
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
    if configured:
        return configured
    return pascal_case(server_name or "") or "Server"


class _Generator:
    def __init__(self) -> None:
        self.decls: list[str] = []
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.used or candidate in KEYWORDS:
            candidate = f"{name}{n}"
            n += 1
        self.used.add(candidate)
        return candidate

    def resolve(self, schema: Any, defs: dict) -> Any:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 32:
            ref = schema["$ref"]
            key = ref.rsplit("/", 1)[-1]
            schema = defs.get(key, {})
            seen += 1
        return schema if isinstance(schema, dict) else {}

    def type_of(self, schema: Any, defs: dict, name_hint: str, notes: list[str], where: str) -> str:
        """The Sage type for a schema; `notes` collects comments for shapes that need a person's attention."""
        schema = self.resolve(schema, defs)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                resolved = [self.resolve(o, defs) for o in options]
                non_null = [o for o in resolved if o.get("type") != "null"]
                if len(non_null) == 1 and len(resolved) == 2:
                    return f"Option<{self.type_of(non_null[0], defs, name_hint, notes, where)}>"
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            if len(non_null) == 1:
                inner = dict(schema, type=non_null[0])
                inner_type = self.type_of(inner, defs, name_hint, notes, where)
                return f"Option<{inner_type}>" if "null" in kind else inner_type
            kind = None
        if kind == "string" and isinstance(schema.get("enum"), list):
            values = schema["enum"]
            if values and all(isinstance(v, str) and _NAME.match(v) and v not in KEYWORDS for v in values):
                enum_name = self.unique(name_hint)
                self.decls.append(f"pub enum {enum_name} {{ {', '.join(values)} }}")
                return enum_name
            notes.append(f"{where}: one of {', '.join(repr(v) for v in values)}")
            return "String"
        if kind == "string":
            return "String"
        if kind == "integer":
            return "Int"
        if kind == "number":
            return "Float"
        if kind == "boolean":
            return "Bool"
        if kind == "array":
            return f"List<{self.type_of(schema.get('items', {}), defs, name_hint + 'Item', notes, where)}>"
        if kind == "object" or "properties" in schema:
            props = schema.get("properties")
            if isinstance(props, dict) and props:
                return self.record(props, schema.get("required", []), defs, name_hint, notes, where)
            notes.append(f"TODO {where}: an object without declared properties, typed as Map<String, String>")
            return "Map<String, String>"
        notes.append(f"TODO {where}: schema {_short(schema)} has no Sage equivalent, typed as String")
        return "String"

    def record(self, props: dict, required: list, defs: dict, name_hint: str, notes: list[str], where: str) -> str:
        name = self.unique(name_hint)
        index = len(self.decls)
        self.decls.append("")
        fields = []
        for prop, sub in props.items():
            if not _NAME.match(prop):
                notes.append(f"TODO {where}: field '{prop}' is not a valid Sage name, typed record omits it")
                continue
            t = self.type_of(sub, defs, name_hint + pascal_case(prop), notes, f"{where}.{prop}")
            if prop not in required and not t.startswith("Option<"):
                t = f"Option<{t}>"
            fields.append(f"{prop}: {t}")
        self.decls[index] = f"pub record {name} {{ {', '.join(fields)} }}"
        return name


def _short(schema: Any) -> str:
    import json
    text = json.dumps(schema, separators=(",", ":"))
    return text if len(text) <= 60 else text[:57] + "..."


def generate(tools: list[dict], *, block_name: str, server_name: str, server_version: str, protocol: str,
             today: str) -> str:
    """Sage source for the listed tools (SPEC §10.4)."""
    gen = _Generator()
    gen.used.add(block_name)
    fns: list[str] = []
    for tool in tools:
        remote = tool.get("name", "")
        schema = tool.get("inputSchema") or {}
        defs = dict(schema.get("$defs") or schema.get("definitions") or {})
        props = schema.get("properties") or {}
        required = [p for p in schema.get("required", []) if p in props]
        bad = next((p for p in props if not _NAME.match(p)), None)
        if bad is not None:
            fns.append(f"    // skipped {remote}: parameter '{bad}' is not a valid Sage name")
            continue
        fn_name = sage_fn_name(remote)
        stem = pascal_case(fn_name) or "Tool"
        notes: list[str] = []
        params = []
        for prop in required + [p for p in props if p not in required]:
            t = gen.type_of(props[prop], defs, stem + pascal_case(prop), notes, prop)
            if prop not in required and not t.startswith("Option<"):
                t = f"Option<{t}>"
            params.append(f"{prop}: {t}")
        ret = _return_type(gen, tool.get("outputSchema"), stem, notes)
        description = (tool.get("description") or "").strip().split("\n")[0].strip()
        safety = tool.get("safety", "destructive")
        lines = [f"    // {description} [{safety}]" if description else f"    // [{safety}]"]
        lines.extend(f"    // {note}" for note in notes)
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


def _return_type(gen: _Generator, output: Any, stem: str, notes: list[str]) -> str:
    if not isinstance(output, dict):
        return "String"
    defs = dict(output.get("$defs") or {})
    output = gen.resolve(output, defs)
    props = output.get("properties")
    if isinstance(props, dict) and set(props) == {"result"}:
        return gen.type_of(props["result"], defs, stem + "Result", notes, "result")
    if isinstance(props, dict) and props:
        return gen.record(props, output.get("required", []), defs, stem + "Result", notes, "result")
    return "String"
