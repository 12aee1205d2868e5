"""`sage check --verify-tools` and the findings of `sage tools verify` (SPEC §10.2, §10.3).

Each typed tool block bound to a configured server is compared, function by function and by remote name,
with the tool the live server lists: E080 (no such tool, with a did-you-mean), E082 (parameters: names,
JSON types by §5, required-ness), W083 (return type against `outputSchema`). A server that cannot be
reached is one E081 at the tool block; an unset `$` variable is E091 instead (no connection is tried), and
a `[tools.X.safety]` entry naming a tool the server does not list is E092; both point into grove.toml.

Types are compared in the direction data flows: an argument must fit the tool's input schema (a declared
`Int` fits `number`, a `Float` does not fit `integer`), while a result must be representable by the declared
return type (an `Int` cannot hold every `number`). A schema without type information fits anything.
"""
from __future__ import annotations

import copy
import json
import os
import re
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, did_you_mean
from ..syntax import ast as A
from ..core.types import (BOOL, FLOAT, INT, STRING, UNIT, EnumT, ListT, MapT, OptionT, Prim, RecordT, ResultT,
                     TupleT, Type, type_name)
from ..grove.keys import Locator
from ..binding import AmbiguousBinding
from ..grove.servers import ServerConfig
from ..mcp.references import private_key_reference, reference_places, referenced_names
from ..mcp.failures import McpFailure
from .inspect import describe_servers, json_type_text, resolve_ref, schema_defs

if TYPE_CHECKING:
    from ..settings import Settings

_MAX_DEPTH = 24  # nesting bound for recursive types and schemas


# ---------------------------------------------------------------- configuration findings (E091, E092)

def unset_variable_diagnostics(config: ServerConfig, grove_path: str | None) -> list[Diagnostic]:
    """E091 for every `$` reference of `args`/`env`/`headers` (and a `token_env` / `client_id_env`) naming an
    unset variable. The message is the connection error it would cause (§8.2)."""
    env = os.environ
    locator = Locator(grove_path)
    table = f"tools.{config.name}"
    found = []
    for key, where, value in reference_places(config):
        for name in referenced_names(value):
            if name not in env:
                found.append(Diagnostic(
                    "E091", f"MCP config error: {where} refers to unset environment variable '{name}'",
                    grove_path, locator.span(table, key),
                    hint=f"set {name} in the environment or in .env"))
    key_file = private_key_reference(config)
    if key_file is not None and key_file not in env:
        found.append(Diagnostic(
            "E091", f"MCP config error: [{table}.private_key_file] {key_file} refers to unset environment "
                    f"variable '{key_file}'", grove_path, locator.span(table, "private_key_file"),
            hint=f"set {key_file} in the environment or in .env"))
    for auth, key in (("bearer", "token_env"), ("oauth", "client_id_env"), ("oauth", "client_secret_env")):
        name = getattr(config, key)
        if config.auth == auth and name and name not in env:
            found.append(Diagnostic(
                "E091", f"MCP auth error: [{table}] {key} refers to unset environment variable '{name}'",
                grove_path, locator.span(table, key), hint=f"set {name} in the environment or in .env"))
    return found


def safety_diagnostics(config: ServerConfig, offered: list[str], grove_path: str | None) -> list[Diagnostic]:
    """E092 for every `[tools.X.safety]` entry naming a tool the server does not list."""
    locator = Locator(grove_path)
    table = f"tools.{config.name}"
    found = []
    for remote in config.safety:
        if remote not in offered:
            found.append(Diagnostic(
                "E092", f"[{table}.safety] names tool '{remote}', which server '{config.name}' does not offer",
                grove_path, locator.span(table, f"safety.{remote}"), hint=did_you_mean(remote, offered, cutoff=0.6)))
    return found


def quiet_safety(config: ServerConfig) -> ServerConfig:
    """A copy without safety overrides: verification reports unknown entries as E092, so the run-time
    warning the connection would print about them is left out."""
    quiet = copy.copy(config)
    quiet.safety = {}
    return quiet


# ---------------------------------------------------------------- tool blocks (E080-W083)

def verify_tool_blocks(program: Any, settings: Settings, described: dict[str, dict | McpFailure]) -> list[Diagnostic]:
    """Compare every tool block of the program that binds to a configured server with that live server.

    `sage check` verifies one program per entry and test file, and they share tool blocks: `described`
    keeps each server's description (or failure) for the whole command, so each server is contacted once."""
    if settings.grove_path is None or settings.toml_broken:
        return []
    blocks: list[tuple[Any, Any, ServerConfig]] = []
    for module in program.modules:
        for item in module.items:
            if not isinstance(item, A.ToolDecl):
                continue
            try:
                config = settings.tools.bind(item.name)
            except AmbiguousBinding:
                continue  # E090, reported with the configuration
            if config is not None:
                blocks.append((module, item, config))
    if not blocks:
        return []
    diags: list[Diagnostic] = []
    unset: dict[str, list[Diagnostic]] = {}
    for _module, _decl, config in blocks:
        if config.name not in unset:
            unset[config.name] = unset_variable_diagnostics(config, settings.grove_path)
            diags += unset[config.name]
    wanted = {config.name: config for _m, _d, config in blocks if not unset[config.name]}
    descriptions = _describe(settings, wanted, described)
    for name, result in descriptions.items():
        if not isinstance(result, McpFailure):
            diags += safety_diagnostics(wanted[name], [t.get("name") for t in result["tools"]], settings.grove_path)
    resolver = _TypeResolver(program)
    for module, decl, config in blocks:
        result = descriptions.get(config.name)
        if result is None:
            continue
        if isinstance(result, McpFailure):
            diags.append(Diagnostic("E081", f"server '{config.name}' cannot be reached: {result.display()}",
                                    module.path, _block_span(decl), hint="`sage tools verify` checks every server"))
            continue
        tools = {tool.get("name"): tool for tool in result["tools"]}
        for fn in decl.fns:
            diags += _compare_fn(module, decl, fn, config.name, tools, resolver)
    return diags


def _describe(settings: Settings, wanted: dict[str, ServerConfig],
              described: dict[str, dict | McpFailure]) -> dict[str, dict | McpFailure]:
    missing = {name: quiet_safety(config) for name, config in wanted.items() if name not in described}
    if missing:
        described.update(describe_servers(settings.root, missing, settings.mcp))
    return {name: described[name] for name in wanted}


class _TypeResolver:
    """Sage types of tool declarations. A program that checked clean carries the checker's resolution of each
    tool block (in its module's namespace), names resolved exactly as the run resolves them; otherwise (the
    program has errors) only the built-in shapes are known and named types count as unknown, which fits every
    schema."""

    def __init__(self, program: Any) -> None:
        self.resolved = getattr(program, "resolved", False)

    def types(self, module: Any, decl: Any, fn: Any) -> tuple[list[Type | None], Type | None]:
        """The types of `fn`'s parameters and of its result."""
        if self.resolved:
            sig = module.namespace.lookup(decl.name).info.fns[fn.name]
            return [t for _, t in sig.params], sig.ret
        return [self._shape(p.type) for p in fn.params], UNIT if fn.ret is None else self._shape(fn.ret)

    def _shape(self, texpr: Any) -> Type | None:
        args = [self._shape(a) if isinstance(a, A.TypeExpr) else None for a in texpr.args or []]
        if texpr.kind == "prim":
            return {"Int": INT, "Float": FLOAT, "Bool": BOOL, "String": STRING, "Unit": UNIT}.get(texpr.name)
        if texpr.kind == "option" and args and args[0] is not None:
            return OptionT(args[0])
        if texpr.kind == "list" and args and args[0] is not None:
            return ListT(args[0])
        return None


def _compare_fn(module: Any, decl: Any, fn: Any, server: str, tools: dict[str, dict],
                resolver: _TypeResolver) -> list[Diagnostic]:
    remote = next((a.value for a in fn.attrs if a.name == "mcp_name"), fn.name)
    label = f"{decl.name}.{fn.name}"
    file = module.path
    fn_span = _fn_span(fn, module)
    tool = tools.get(remote)
    if tool is None:
        return [Diagnostic("E080", f"tool '{remote}' ({label}) is not offered by server '{server}'", file, fn_span,
                           hint=did_you_mean(remote, [str(name) for name in tools], cutoff=0.6))]
    diags: list[Diagnostic] = []
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
    defs = schema_defs(schema)
    schema = resolve_ref(schema, defs)
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [p for p in schema.get("required") or [] if isinstance(p, str)]
    # Without declared properties a schema that does not forbid extra keys accepts any argument names.
    open_schema = "properties" not in schema and schema.get("additionalProperties") is not False
    declared = {p.name for p in fn.params}
    param_types, ret = resolver.types(module, decl, fn)
    for param, t in zip(fn.params, param_types):
        is_option = isinstance(t, OptionT) or (t is None and param.type.kind == "option")
        if param.name not in props:
            if not open_schema:
                unused = [p for p in props if p not in declared]
                line, col = param.span[0], param.span[1]
                diags.append(Diagnostic("E082", f"parameter '{param.name}' of {label} is not a parameter of tool "
                                        f"'{remote}'", file, (line, col, line, col + len(param.name)),
                                        hint=did_you_mean(param.name, unused, cutoff=0.6)))
            continue
        if param.name in required and is_option:
            shown = type_name(t) if t is not None else "Option<…>"
            diags.append(Diagnostic("E082", f"parameter '{param.name}' of {label} is declared {shown}, "
                                    f"but tool '{remote}' requires it", file, param.span,
                                    hint="declare it without Option"))
            continue
        reason = _send(t.inner if isinstance(t, OptionT) else t, props[param.name], defs, "", 0)
        if reason is not None:
            diags.append(Diagnostic("E082", f"parameter '{param.name}' of {label} does not fit tool '{remote}': "
                                    f"{reason}", file, param.span))
    for prop in required:
        if prop not in declared:
            json_type = json_type_text(props.get(prop), defs)
            diags.append(Diagnostic("E082", f"tool '{remote}' requires parameter '{prop}', which {label} does not "
                                    "declare", file, fn_span, hint=f"add a parameter `{prop}` (JSON type {json_type})"))
    reason = _return_fit(ret, tool.get("outputSchema"))
    if reason is not None:
        diags.append(Diagnostic("W083", f"return type {type_name(ret)} of {label} cannot represent the outputSchema "
                                f"of tool '{remote}': {reason}", file, fn.ret.span if fn.ret is not None else fn_span,
                                severity="warning"))
    return diags


# ---------------------------------------------------------------- spans

def _block_span(decl: Any) -> tuple:
    """`tool Name` on the block's first line (the block's span starts at `tool`, after any `pub`)."""
    line, col = decl.span[0], decl.span[1]
    return (line, col, line, col + len("tool ") + len(decl.name))


def _fn_span(fn: Any, module: Any) -> tuple:
    """The function's name on its `fn` line: a function's span starts at its `#[mcp_name]` attribute."""
    lines = (getattr(module, "source", "") or "").split("\n")
    pattern = re.compile(r"\bfn\s+(" + re.escape(fn.name) + r")\b")
    for number in range(fn.span[0], min(fn.span[2], len(lines)) + 1):
        match = pattern.search(lines[number - 1])
        if match:
            return (number, match.start(1) + 1, number, match.end(1) + 1)
    return fn.span


# ---------------------------------------------------------------- JSON Schema fit (§5)

def _alternatives(schema: dict) -> list | None:
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return options
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _kinds(schema: dict) -> set[str] | None:
    """The JSON types a schema allows; None when it says nothing about types (anything fits)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and kind:
        return {k for k in kind if isinstance(k, str)}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return {_json_kind(v) for v in schema["enum"]}
    if "const" in schema:
        return {_json_kind(schema["const"])}
    if "properties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    return None


def _payload_free(t: EnumT) -> bool:
    return all(payload is None for _name, payload in t.variants())


def _produces(t: Type) -> str | None:
    """The JSON type a Sage value of type t is sent as (§5); None when it cannot be told."""
    if isinstance(t, Prim):
        return {"Int": "integer", "Float": "number", "Bool": "boolean", "String": "string", "Unit": "null",
                "Error": "object"}.get(t.name)
    if isinstance(t, (ListT, TupleT)):
        return "array"
    if isinstance(t, (MapT, RecordT, ResultT)):
        return "object"
    if isinstance(t, EnumT):
        if _payload_free(t):
            return "string"
        return "object" if all(payload is not None for _n, payload in t.variants()) else None
    return None


def _accepts(t: Type) -> set[str] | None:
    """The JSON types a value converts from into type t (§5); None for any."""
    if isinstance(t, Prim):
        return {"Int": {"integer"}, "Float": {"integer", "number"}, "Bool": {"boolean"}, "String": {"string"},
                "Error": {"object"}}.get(t.name)
    if isinstance(t, (ListT, TupleT)):
        return {"array"}
    if isinstance(t, (MapT, RecordT, ResultT)):
        return {"object"}
    if isinstance(t, EnumT):
        return {"string"} if _payload_free(t) else {"string", "object"}
    return None


def _at(where: str, text: str) -> str:
    return f"{where}: {text}" if where else text


def _send(t: Type | None, schema: Any, defs: dict, where: str, depth: int) -> str | None:
    """Why a value of type t (an argument) would not fit the schema, or None when it fits."""
    if t is None or depth > _MAX_DEPTH:
        return None
    if isinstance(t, OptionT):  # None is left out at the top and sent as null inside values
        return _send(t.inner, schema, defs, where, depth + 1)
    schema = resolve_ref(schema, defs)
    produced = _produces(t)
    options = _alternatives(schema)
    if options is not None:
        reasons = [_send(t, option, defs, where, depth + 1) for option in options]
        if any(reason is None for reason in reasons):
            return None
        # The alternative of the right JSON type explains best why the value still does not fit.
        for option, reason in zip(options, reasons):
            kinds = _kinds(resolve_ref(option, defs))
            if kinds is not None and produced in kinds:
                return reason
        return _at(where, f"declared {type_name(t)}, the server expects {json_type_text(schema, defs)}")
    kinds = _kinds(schema)
    if kinds is None or produced is None:
        return None
    if produced not in kinds and not (produced == "integer" and "number" in kinds):
        return _at(where, f"declared {type_name(t)}, the server expects {json_type_text(schema, defs)}")
    if isinstance(t, ListT):
        return _send(t.elem, schema.get("items"), defs, f"{where}[]", depth + 1)
    if isinstance(t, MapT) and isinstance(schema.get("additionalProperties"), dict):
        return _send(t.value, schema["additionalProperties"], defs, f"{where}.*", depth + 1)
    if isinstance(t, RecordT):
        return _send_record(t, schema, defs, where, depth)
    if isinstance(t, EnumT) and _payload_free(t) and isinstance(schema.get("enum"), list):
        extra = [name for name, _payload in t.variants() if name not in schema["enum"]]
        if extra:
            return _at(where, f"variant {extra[0]} of {t.name} is not one of the server's values "
                              f"({', '.join(map(str, schema['enum']))})")
    return None


def _send_record(t: RecordT, schema: dict, defs: dict, where: str, depth: int) -> str | None:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else None
    fields = dict(t.fields())
    if props is not None:
        for name, field_type in fields.items():
            inner = f"{where}.{name}" if where else name
            if name not in props:
                return _at(inner, f"field of {t.name} that the server's schema does not have")
            reason = _send(field_type, props[name], defs, inner, depth + 1)
            if reason is not None:
                return reason
    for name in schema.get("required") or []:
        inner = f"{where}.{name}" if where else str(name)
        if name not in fields:
            return _at(inner, f"required by the server, missing from {t.name}")
        if isinstance(fields[name], OptionT):
            return _at(inner, f"required by the server, Option in {t.name}")
    return None


def _return_fit(ret: Type | None, output: Any) -> str | None:
    """Why the declared return type cannot represent the tool's outputSchema (§8.4 rules), or None."""
    if not isinstance(output, dict) or ret is None or ret == STRING or ret == UNIT:
        return None
    defs = schema_defs(output)
    output = resolve_ref(output, defs)
    props = output.get("properties")
    if not isinstance(ret, (RecordT, MapT)) and isinstance(props, dict) and set(props) == {"result"}:
        return _receive(ret, props["result"], defs, "result", 0)
    return _receive(ret, output, defs, "", 0)


def _receive(t: Type | None, schema: Any, defs: dict, where: str, depth: int) -> str | None:
    """Why some value the schema allows would not convert to type t (a result), or None."""
    if t is None or t == UNIT or depth > _MAX_DEPTH:
        return None
    schema = resolve_ref(schema, defs)
    options = _alternatives(schema)
    if options is not None:
        for option in options:
            reason = _receive(t, option, defs, where, depth + 1)
            if reason is not None:
                return reason
        return None
    kinds = _kinds(schema)
    if kinds is None:
        return None
    if isinstance(t, OptionT):
        rest = kinds - {"null"}
        return _receive(t.inner, dict(schema, type=sorted(rest)), defs, where, depth + 1) if rest else None
    accepted = _accepts(t)
    if accepted is not None and not kinds <= accepted:
        shown = " | ".join(sorted(kinds - accepted))
        return _at(where, f"the server may send {shown}, which {type_name(t)} cannot hold")
    if isinstance(t, ListT):
        return _receive(t.elem, schema.get("items"), defs, f"{where}[]", depth + 1)
    if isinstance(t, MapT):
        values = list((schema.get("properties") or {}).values())
        if isinstance(schema.get("additionalProperties"), dict):
            values.append(schema["additionalProperties"])
        for value in values:
            reason = _receive(t.value, value, defs, f"{where}.*", depth + 1)
            if reason is not None:
                return reason
        return None
    if isinstance(t, RecordT):
        return _receive_record(t, schema, defs, where, depth)
    if isinstance(t, EnumT) and _payload_free(t):
        names = {name for name, _payload in t.variants()}
        values = schema.get("enum")
        if not isinstance(values, list):
            return _at(where, f"the server may send any string, {t.name} holds only its variant names")
        unknown = [v for v in values if v not in names]
        if unknown:
            return _at(where, f"the server may send {json.dumps(unknown[0])}, which is no variant of {t.name}")
    return None


def _receive_record(t: RecordT, schema: dict, defs: dict, where: str, depth: int) -> str | None:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    for name, field_type in t.fields():
        inner = f"{where}.{name}" if where else name
        if isinstance(field_type, OptionT):
            if name in props:
                reason = _receive(field_type, props[name], defs, inner, depth + 1)
                if reason is not None:
                    return reason
            continue
        if name not in props:
            return _at(inner, f"field of {t.name} that the server's outputSchema does not have")
        if name not in required:
            return _at(inner, f"the server may leave it out; declare it Option in {t.name}")
        reason = _receive(field_type, props[name], defs, inner, depth + 1)
        if reason is not None:
            return reason
    return None
