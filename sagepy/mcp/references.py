"""The `$` references of a server's `args`, `env` and `headers` (SPEC §8.2), resolved when a connection opens,
so that an unset variable fails the connection that needs it, never the whole program. Secret values never
appear in a message.
"""
from __future__ import annotations

import os
import re
from typing import Mapping

from ..grove.servers import ServerConfig
from .failures import McpFailure

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def resolve_env(values: Mapping[str, str], table: str, environ: Mapping[str, str] | None = None,
                sub_kind: str = "config error") -> dict[str, str]:
    """Resolve the `$` references of an `env` or `headers` table (§8.2).

    `table` names the table in messages (`[tools.Calendar.env]`). An unset variable raises McpFailure
    (`MCP config error: [tools.Calendar.env] CAL_TOKEN refers to unset environment variable 'CAL_TOKEN'`);
    it never becomes an empty string.
    """
    env = os.environ if environ is None else environ
    return {key: resolve_value(value, f"{table} {key}", env, sub_kind) for key, value in values.items()}


def resolve_args(config: ServerConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """A stdio server's `args` with their `$` references resolved (§8.2)."""
    env = os.environ if environ is None else environ
    return [resolve_value(arg, _arg_place(config, i), env) for i, arg in enumerate(config.args)]


def _arg_place(config: ServerConfig, index: int) -> str:
    return f"[tools.{config.name}] args[{index}]"


def resolve_value(value: str, where: str, environ: Mapping[str, str], sub_kind: str = "config error") -> str:
    """`value` with every `$NAME` and `${NAME}` replaced by that variable and `$$` by `$`; a `$` followed by
    anything else stays literal (`costs $5`)."""
    def substitute(match: re.Match) -> str:
        name = _reference_name(match)
        if name is None:
            return "$"
        if not _VAR_NAME.match(name):
            raise McpFailure(sub_kind, f"{where} has an invalid variable reference "
                                       "(write $NAME or ${NAME}, or $$ for a literal $)")
        if name not in environ:
            raise McpFailure(sub_kind, f"{where} refers to unset environment variable '{name}'")
        return environ[name]
    return _REFERENCE.sub(substitute, value)


def referenced_names(value: str) -> list[str]:
    """The variables a value refers to (malformed references left out: connecting reports those)."""
    names = (_reference_name(match) for match in _REFERENCE.finditer(value))
    return [name for name in names if name is not None and _VAR_NAME.match(name)]


# `$$`, `${…}` (an unclosed brace runs to the end, to be reported as malformed) or `$NAME`.
_REFERENCE = re.compile(r"\$(?:\$|\{([^}]*)\}?|([A-Za-z_][A-Za-z0-9_]*))")


def _reference_name(match: re.Match) -> str | None:
    """The variable a reference names; None for `$$`; `""` (never a valid name) for an unclosed `${`."""
    if match.group(0) == "$$":
        return None
    if match.group(2) is not None:
        return match.group(2)
    return match.group(1) if match.group(0).endswith("}") else ""


def unset_references(config: ServerConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """Messages for every unset `$` variable of a server (E091 in verification), without connecting."""
    env = os.environ if environ is None else environ
    problems = []
    for _key, where, value in reference_places(config):
        try:
            resolve_value(value, where, env)
        except McpFailure as failure:
            problems.append(failure.message)
    if config.auth == "bearer" and config.token_env and config.token_env not in env:
        problems.append(f"[tools.{config.name}] token_env refers to unset environment variable '{config.token_env}'")
    for key in ("client_id_env", "client_secret_env"):
        name = getattr(config, key)
        if config.auth == "oauth" and name and name not in env:
            problems.append(f"[tools.{config.name}] {key} refers to unset environment variable '{name}'")
    key_file = private_key_reference(config)
    if key_file is not None and key_file not in env:
        problems.append(f"[tools.{config.name}.private_key_file] {key_file} refers to unset environment variable "
                        f"'{key_file}'")
    return problems


_KEY_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))\Z")


def private_key_reference(config: ServerConfig) -> str | None:
    """The variable `private_key_file` names when it is a `$NAME`/`${NAME}` reference to the PEM text."""
    match = _KEY_REFERENCE.match(config.private_key_file or "")
    return (match.group(1) or match.group(2)) if match else None


def reference_places(config: ServerConfig) -> list[tuple[str, str, str]]:
    """(key in the table, place named in messages, value) for every value that may hold `$` references:
    `args`, `env.K`, `headers.K`."""
    places = [("args", _arg_place(config, i), arg) for i, arg in enumerate(config.args)]
    for sub, values in (("env", config.env), ("headers", config.headers)):
        places += [(f"{sub}.{key}", f"[tools.{config.name}.{sub}] {key}", value) for key, value in values.items()]
    return places
