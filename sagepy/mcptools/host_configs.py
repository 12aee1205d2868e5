"""MCP server configurations of other hosts, turned into `[tools.<Name>]` tables (SPEC §10.2 `sage tools
import` and `add`).

Two JSON shapes are read: `{"mcpServers": {name: {…}}}` (Claude Desktop, Claude Code, Cursor, Windsurf) and
`{"servers": {name: {…}}}` (VS Code, whose file may also hold `inputs`). An entry has `command`/`args`/`env`/
`cwd` for stdio, or `url` (Windsurf: `serverUrl`) and `headers` for HTTP, with an optional `type`. Their
variable forms `${VAR}`, `${env:VAR}` and `$VAR` become sagepy's `$VAR`; VS Code's `${input:id}` prompts
have no equivalent and become a variable named after the id (`$API_KEY`), which the report names.

New tables are rendered as TOML text to append to grove.toml, so the file's existing text is kept byte for
byte.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Mapping

from ..binding import BUILTIN_TOOLS
from .generate import tool_block_name

# `${env:VAR}`, `${VAR}`, `${input:id}`, `${userHome}`, `${workspaceFolder}`, … and `$VAR`.
_VARIABLE = re.compile(r"\$\{(?:(env|input):)?([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


class HostConfigError(Exception):
    """A host config file that cannot be read or has neither `mcpServers` nor `servers`."""


def usual_locations(project_root: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Where the hosts keep their MCP configs on Linux and macOS, the project's own files first."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    config_home = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    if sys.platform == "darwin":
        support = os.path.join(home, "Library", "Application Support")
        claude = os.path.join(support, "Claude", "claude_desktop_config.json")
        vscode = os.path.join(support, "Code", "User", "mcp.json")
    else:
        claude = os.path.join(config_home, "Claude", "claude_desktop_config.json")
        vscode = os.path.join(config_home, "Code", "User", "mcp.json")
    return [os.path.join(project_root, ".vscode", "mcp.json"),
            os.path.join(project_root, ".cursor", "mcp.json"),
            os.path.join(project_root, ".mcp.json"),
            claude,
            os.path.join(home, ".cursor", "mcp.json"),
            os.path.join(home, ".codeium", "windsurf", "mcp_config.json"),
            vscode]


def read_servers(path: str) -> dict[str, Any]:
    """The server entries of a host config file, in file order."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(_strip_comments(fh.read()))
    except OSError as exc:
        raise HostConfigError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise HostConfigError(f"{path} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise HostConfigError(f"{path} has neither an \"mcpServers\" nor a \"servers\" object")
    return servers


def _strip_comments(text: str) -> str:
    """VS Code's mcp.json is JSON with comments and trailing commas: drop both outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(ch)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


class Converted:
    """One host entry as a `[tools.<Name>]` table (`table` is None when it cannot be imported: `reason`)."""

    def __init__(self, source_name: str, name: str, table: dict | None, reason: str = "",
                 inputs: list[str] | None = None) -> None:
        self.source_name = source_name
        self.name = name
        self.table = table
        self.reason = reason
        self.inputs = inputs or []


def convert(source_name: str, entry: Any, workspace: str) -> Converted:
    """A host's server entry as the keys of a `[tools.<Name>]` table (Name: the server name in PascalCase,
    with `Server` added to a built-in tool's name). `workspace` replaces VS Code's `${workspaceFolder}`."""
    name = tool_block_name(None, source_name)
    if name in BUILTIN_TOOLS:   # `[tools.Shell]` would replace the built-in Shell tool for every program
        name += "Server"
    if not isinstance(entry, dict):
        return Converted(source_name, name, None, "its entry is not an object")
    if entry.get("disabled") is True:
        return Converted(source_name, name, None, "it is disabled")
    inputs: list[str] = []

    def text(value: Any) -> str:
        return _references(str(value), workspace, inputs)

    kind = entry.get("type") or entry.get("transport")
    url = entry.get("url") or entry.get("serverUrl")
    table: dict[str, Any] = {}
    if kind == "sse" or (kind is None and isinstance(url, str) and url.rstrip("/").endswith("/sse")):
        return Converted(source_name, name, None, "it uses the SSE transport, which sagepy does not support")
    if isinstance(entry.get("command"), str) and kind in (None, "stdio"):
        table["command"] = text(entry["command"])
        if isinstance(entry.get("args"), list) and entry["args"]:
            table["args"] = [text(arg) for arg in entry["args"]]
        if isinstance(entry.get("cwd"), str):
            table["cwd"] = text(entry["cwd"])
        if isinstance(entry.get("env"), dict) and entry["env"]:
            table["env"] = {str(k): text(v) for k, v in entry["env"].items()}
    elif isinstance(url, str) and kind in (None, *_HTTP_TYPES):
        table["url"] = text(url)
        if isinstance(entry.get("headers"), dict) and entry["headers"]:
            table["headers"] = {str(k): text(v) for k, v in entry["headers"].items()}
    else:
        return Converted(source_name, name, None, "it has neither a command nor a URL sagepy can use")
    return Converted(source_name, name, table, inputs=inputs)


def _references(value: str, workspace: str, inputs: list[str]) -> str:
    """A host's variable references as sagepy's `$VAR` (SPEC §8.2)."""
    def substitute(match: re.Match) -> str:
        prefix, inner, plain = match.group(1), match.group(2), match.group(3)
        if plain is not None:
            return "$" + plain
        if prefix == "input":
            var = re.sub(r"[^A-Za-z0-9_]", "_", inner).upper()
            if var not in inputs:
                inputs.append(var)
            return "$" + var
        if prefix is None and inner == "workspaceFolder":
            return workspace
        if prefix is None and inner == "userHome":
            return "$HOME"
        return "$" + inner if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner) else match.group(0)
    return _VARIABLE.sub(substitute, value)


# ---------------------------------------------------------------- TOML text

def toml_table(name: str, table: Mapping[str, Any]) -> str:
    """`[tools.<Name>]` with its plain keys, then `[tools.<Name>.env]` / `.headers` sub-tables."""
    head = f"tools.{_key(name)}"
    lines = [f"[{head}]"]
    subs = []
    for key, value in table.items():
        if isinstance(value, dict):
            subs.append((key, value))
        elif isinstance(value, list):
            lines.append(f"{key} = [{', '.join(_string(v) for v in value)}]")
        else:
            lines.append(f"{key} = {_string(value)}")
    for key, values in subs:
        lines += ["", f"[{head}.{key}]", *(f"{_key(k)} = {_string(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(value: Any) -> str:
    # A JSON string is a valid TOML basic string (the same escapes; non-ASCII kept as it is).
    return json.dumps(str(value), ensure_ascii=False)


def appended(text: str, tables: list[str]) -> str:
    """grove.toml's text with the tables added at its end, the existing text unchanged."""
    if not tables:
        return text
    separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    return text + separator + "\n".join(tables)
