"""What `sage tools inspect|generate|verify` and `sage check --verify-tools` learn from live servers
(SPEC §10.2-§10.4): who the server is, the negotiated protocol, its capabilities and its full tool list.

Servers are described through one `ConnectionPool`, so connections get the same transports, timeouts, logs and
shutdown as in a program run; all of them are started together, so that slow servers start in parallel.
This module also builds the configuration of an ad-hoc server (`--stdio "CMD ARGS"`, `--http URL`) and
renders the inspect report.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..grove.servers import McpSettings, ServerConfig, parse_server
from ..mcp.failures import McpFailure

_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")
# Launchers whose first plain argument names the server better than they do (`python srv.py`, `npx -y pkg`).
_LAUNCHERS = re.compile(r"(python[0-9.]*|node|npx|uvx|uv|bun|bunx|deno|sh|bash|pipx)\Z")


class AdhocError(Exception):
    """A malformed ad-hoc server description (`--env` without `=`, an empty command): a usage error."""


def _literal(value: str) -> str:
    """A value typed on the command line is literal: escape a leading `$` so that it is no `$` reference."""
    return "$" + value if value.startswith("$") else value


def parse_pairs(pairs: list[str] | None, option: str) -> dict[str, str]:
    """`K=V` arguments of `--env`/`--header` as a table of literal values."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise AdhocError(f"{option} expects K=V, got '{pair}'")
        out[key] = _literal(value)
    return out


def adhoc_config(stdio: str | None, http: str | None, env: dict[str, str], headers: dict[str, str]) -> ServerConfig:
    """The configuration of a server given on the command line. The command is split with POSIX shell rules;
    it gets the minimal environment plus `env` (§8.2) and runs in the current directory, where its relative
    paths were written."""
    if stdio is not None:
        try:
            argv = shlex.split(stdio)
        except ValueError as exc:
            raise AdhocError(f"--stdio: {exc}") from None
        if not argv:
            raise AdhocError("--stdio needs a command")
        label = _adhoc_label(argv)
        data: dict[str, Any] = {"command": argv[0], "args": argv[1:], "env": env, "cwd": os.getcwd()}
    else:
        label = _LABEL.sub("_", urlsplit(http or "").hostname or "") or "server"
        data = {"url": http, "headers": headers}
    problems: list[str] = []
    config = parse_server(label, data, label, lambda message, key, hint: problems.append(message))
    if config is None:
        raise AdhocError(problems[0] if problems else "invalid server")
    return config


def _adhoc_label(argv: list[str]) -> str:
    """The name an ad-hoc stdio server goes by in messages and its log file."""
    name = os.path.basename(argv[0])
    if _LAUNCHERS.match(name):
        name = next((os.path.basename(a.rstrip("/")) for a in argv[1:] if not a.startswith("-")), name)
    return _LABEL.sub("_", name) or "server"


def with_extras(config: ServerConfig, env: dict[str, str], headers: dict[str, str]) -> ServerConfig:
    """A configured server with `--env`/`--header` values added on top of its own tables."""
    if env or headers:
        config.env = {**config.env, **env}
        config.headers = {**config.headers, **headers}
    return config


def describe_servers(root: str, servers: Mapping[str, ServerConfig], settings: McpSettings | None, *,
                     catalogue: bool = False, log_dir: str | None = None) -> dict[str, dict | McpFailure]:
    """Connect to every server (all started at once), describe it (`ConnectionPool.describe`, with prompts and
    resources when `catalogue`) and disconnect. Each entry is the description or the McpFailure that
    prevented it. Server logs go to `log_dir` (default: the project's `.sage/logs`)."""
    from ..mcp.pool import ConnectionPool
    manager = ConnectionPool(root, dict(servers), settings, log_dir=log_dir)
    results: dict[str, dict | McpFailure] = {}
    try:
        manager.prestart(list(servers))
        for name in servers:
            try:
                results[name] = manager.describe(name, catalogue)
            except McpFailure as failure:
                results[name] = failure
    finally:
        manager.close_all()
    return results


# ---------------------------------------------------------------- the inspect report

_CATALOGUE = ("prompts", "resources", "resourceTemplates")


def json_report(description: dict) -> dict:
    """`--json`: `{"server": {"name", "version"}, "protocol", "transport", "capabilities", "tools"}`, plus
    `instructions`, `prompts`, `resources` and `resourceTemplates` when the server has them."""
    report = {"server": {"name": description["name"], "version": description["version"]},
              "protocol": description["protocol"], "transport": description["transport"],
              "capabilities": description["capabilities"], "tools": description["tools"]}
    if description.get("instructions"):
        report["instructions"] = description["instructions"]
    report.update((key, description[key]) for key in _CATALOGUE if description.get(key))
    return report


def text_report(description: dict) -> str:
    """The report of §10.2: server line, capabilities, instructions, then every tool with its safety,
    description, parameters and output, then the prompts, resources and resource templates."""
    name = description["name"] or "unknown"
    version = description["version"] or "unknown"
    tools = description["tools"]
    lines = [f"server: {name} {version} (protocol {description['protocol'] or 'unknown'}, "
             f"{description['transport']})",
             f"capabilities: {capabilities_text(description['capabilities'])}"]
    instructions = (description.get("instructions") or "").strip()
    if instructions:
        lines.append("instructions:")
        lines += [f"  {line}".rstrip() for line in instructions.splitlines()]
    lines.append(f"tools ({len(tools)}):")
    for tool in tools:
        lines.append(f"  {tool.get('name', '')} [{tool.get('safety', 'destructive')}]")
        summary = first_line(tool.get("description"))
        if summary:
            lines.append(f"    {summary}")
        lines.append(f"    params: {properties_text(tool.get('inputSchema'), details=True)}")
        if isinstance(tool.get("outputSchema"), dict):
            lines.append(f"    output: {properties_text(tool['outputSchema'])}")
    lines += _catalogue_lines(description)
    return "\n".join(lines)


def _catalogue_lines(description: dict) -> list[str]:
    lines: list[str] = []
    prompts = description.get("prompts") or []
    if prompts:
        lines.append(f"prompts ({len(prompts)}):")
        for prompt in prompts:
            lines.append(_entry(prompt.get("name", ""), prompt))
            arguments = prompt.get("arguments") or []
            if arguments:
                lines.append("    arguments: " + ", ".join(
                    arg.get("name", "") + (" (required)" if arg.get("required") else "") for arg in arguments))
    for key, heading, locator in (("resources", "resources", "uri"),
                                  ("resourceTemplates", "resource templates", "uriTemplate")):
        items = description.get(key) or []
        if items:
            lines.append(f"{heading} ({len(items)}):")
            for item in items:
                head = item.get(locator, "")
                if item.get("name") and item.get("name") != head:
                    head += f" ({item['name']})"
                if item.get("mimeType"):
                    head += f" [{item['mimeType']}]"
                lines.append(_entry(head, item))
    return lines


def _entry(head: str, item: dict) -> str:
    """One listed item: its head and the first line of its description."""
    summary = first_line(item.get("description"))
    return f"  {head} — {summary}" if summary else f"  {head}"


def first_line(text: Any) -> str:
    return text.strip().split("\n", 1)[0].strip() if isinstance(text, str) else ""


def capabilities_text(capabilities: Mapping[str, Any]) -> str:
    """`tools (listChanged), resources (subscribe, listChanged), logging`: each capability with the flags
    it sets to true."""
    parts = []
    for key, value in capabilities.items():
        flags = [k for k, v in value.items() if v is True] if isinstance(value, dict) else []
        parts.append(f"{key} ({', '.join(flags)})" if flags else key)
    return ", ".join(parts) if parts else "none"


def properties_text(schema: Any, details: bool = False) -> str:
    """`name: json-type (required), …` for an object schema, in schema order; `none` without properties.
    With `details`, each property also shows its enum, default, range, length, format and pattern, and
    nested objects are expanded in braces."""
    if not isinstance(schema, dict):
        return "none"
    defs = schema_defs(schema)
    text = _object_text(resolve_ref(schema, defs), defs, details, 0)
    return text or "none"


_MAX_NESTING = 6  # expanded object levels; deeper (or recursive) objects show as `object`


def _object_text(schema: dict, defs: Mapping[str, Any], details: bool, depth: int) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return ""
    required = set(schema.get("required") or [])
    return ", ".join(_property_text(prop, sub, prop in required, defs, details, depth)
                     for prop, sub in props.items())


def _property_text(name: str, schema: Any, required: bool, defs: Mapping[str, Any], details: bool,
                   depth: int) -> str:
    notes = ["required"] if required else []
    if not details:
        return f"{name}: {json_type_text(schema, defs)}" + (" (required)" if required else "")
    kind = _detailed_type(schema, defs, depth)
    notes += constraint_notes(_main_option(resolve_ref(schema, defs), defs))
    return f"{name}: {kind}" + (f" ({', '.join(notes)})" if notes else "")


def _main_option(schema: dict, defs: Mapping[str, Any]) -> dict:
    """The schema that carries the constraints: for `anyOf [X, null]`, X (merged under the outer keys)."""
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            real = [resolve_ref(o, defs) for o in options if resolve_ref(o, defs).get("type") != "null"]
            if len(real) == 1:
                return {**real[0], **{k: v for k, v in schema.items() if k != key}}
    return schema


def _detailed_type(schema: Any, defs: Mapping[str, Any], depth: int) -> str:
    """`json_type_text`, with object properties expanded in braces (`object {x: integer (required)}`)."""
    schema = resolve_ref(schema, defs)
    main = _main_option(schema, defs)
    if main is not schema:
        nullable = " | null" if any(resolve_ref(o, defs).get("type") == "null"
                                    for o in schema.get("anyOf") or schema.get("oneOf") or []) else ""
        return _detailed_type(main, defs, depth) + nullable
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
        return f"array<{_detailed_type(schema['items'], defs, depth)}>"
    inner = _object_text(schema, defs, True, depth + 1) if depth < _MAX_NESTING else ""
    if inner:
        return f"object {{{inner}}}"
    return json_type_text(schema, defs)


def constraint_notes(schema: dict) -> list[str]:
    """The constraints of a property schema as short notes: `one of "c", "f"`, `default 3`, `1..10`,
    `length >= 3`, `format email`, …"""
    notes = []
    if isinstance(schema.get("enum"), list):
        notes.append("one of " + ", ".join(_json(v) for v in schema["enum"]))
    if "const" in schema:
        notes.append(f"always {_json(schema['const'])}")
    if "default" in schema:
        notes.append(f"default {_json(schema['default'])}")
    for low, high, label in (("minimum", "maximum", ""), ("minLength", "maxLength", "length "),
                             ("minItems", "maxItems", "items ")):
        note = _range(schema.get(low), schema.get(high))
        if note:
            notes.append(label + note)
    for key, sign in (("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
            notes.append(f"{sign} {_json(schema[key])}")
    for key in ("format", "pattern"):
        if isinstance(schema.get(key), str):
            notes.append(f"{key} {schema[key]}")
    return notes


def _range(low: Any, high: Any) -> str:
    low = low if isinstance(low, (int, float)) and not isinstance(low, bool) else None
    high = high if isinstance(high, (int, float)) and not isinstance(high, bool) else None
    if low is not None and high is not None:
        return f"{_json(low)}..{_json(high)}"
    if low is not None:
        return f">= {_json(low)}"
    if high is not None:
        return f"<= {_json(high)}"
    return ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def schema_defs(schema: Mapping[str, Any]) -> dict:
    """The `$defs` (or draft-7 `definitions`) a schema's `$ref`s point into."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return dict(defs) if isinstance(defs, dict) else {}


def resolve_ref(schema: Any, defs: Mapping[str, Any]) -> dict:
    """Follow `$ref` into `$defs` (a bounded number of times, so a cycle of bare references ends)."""
    for _ in range(32):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            break
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema if isinstance(schema, dict) else {}


def json_type_text(schema: Any, defs: Mapping[str, Any]) -> str:
    """The JSON type of a property schema: `string`, `integer | null`, `array<string>`, `any`."""
    schema = resolve_ref(schema, defs)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(json_type_text(o, defs) for o in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind) if kind else "any"
    if kind == "array":
        items = schema.get("items")
        return f"array<{json_type_text(items, defs)}>" if isinstance(items, dict) and items else "array"
    if isinstance(kind, str):
        return kind
    if "enum" in schema:
        return "enum"
    if "properties" in schema:
        return "object"
    return "any"
