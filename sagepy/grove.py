"""grove.toml validation (SPEC §11): every section and key, E090 diagnostics pointing into the file.

The MCP tables (`[tools.X]`, `[mcp]`) are validated by sagepy.mcp.config; this module covers the rest with the
same key-table machinery, and turns a TOML syntax error into an E090 at the position tomllib reports.
"""
from __future__ import annotations

import os
import re
from typing import Any

from .diagnostics import Diagnostic, did_you_mean
from .mcp.config import (_apply_keys, _Collector, _one_of, _positive_int, _string, _string_list,
                         _toml_type, parse_mcp_settings, parse_tools_config)


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _non_negative_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


class _Sink:
    """Target for `_apply_keys`: validation only, values are read from the dict where they are used."""

    def __setattr__(self, name: str, value: Any) -> None:
        pass


_SECTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "project": {"name": (_string, "a string"), "version": (_string, "a string"), "entry": (_string, "a string")},
    "test": {"timeout_ms": (_positive_int, "a positive integer")},
    "llm": {"url": (_string, "a string"), "model": (_string, "a string"), "api_key_env": (_string, "a string"),
            "temperature": (_number, "a number"), "max_tokens": (_positive_int, "a positive integer"),
            "timeout_ms": (_positive_int, "a positive integer"), "retries": (_non_negative_int, "an integer ≥ 0"),
            "infer_retries": (_positive_int, "a positive integer")},
    "persistence": {"backend": (_one_of(("sqlite", "memory")), 'one of "sqlite", "memory"'),
                    "path": (_string, "a string")},
    "supervision": {"max_restarts": (_non_negative_int, "an integer ≥ 0"),
                    "within_seconds": (_positive_int, "a positive integer")},
    "extern": {"modules": (_string_list, "an array of strings")},
}
_MCP_SECTIONS = ("tools", "mcp")


def validate_config(config: dict, path: str | None) -> list[Diagnostic]:
    out = _Collector(path)
    for section, data in config.items():
        if section in _MCP_SECTIONS:
            continue
        keys = _SECTIONS.get(section)
        if keys is None:
            out.error(f"{out.file}: unknown section [{section}]", section,
                      hint=did_you_mean(section, list(_SECTIONS) + list(_MCP_SECTIONS), cutoff=0.6))
            continue
        if not isinstance(data, dict):
            out.error(f"{out.file}: [{section}] must be a table, found {_toml_type(data)}", section)
            continue

        def report(message: str, key: str | None, hint: str | None, section: str = section) -> None:
            out.error(f"{out.file}: {message}", section, key, hint)

        _apply_keys(data, keys, section, report, _Sink())
    diagnostics = out.diagnostics
    modules = config.get("extern", {}).get("modules") if isinstance(config.get("extern"), dict) else None
    if isinstance(modules, list) and path is not None:
        root = os.path.dirname(os.path.abspath(path))
        for module in modules:
            if isinstance(module, str) and not os.path.isfile(os.path.join(root, module)):
                diagnostics.append(Diagnostic("E093", f"extern module not found: {module}", path,
                                              out.locator.span("extern", "modules")))
    diagnostics += parse_tools_config(config, path)[1]
    diagnostics += parse_mcp_settings(config, path)[1]
    return diagnostics


def toml_error_diagnostic(path: str, exc: Exception) -> Diagnostic:
    """tomllib's message ends in `(at line L, column C)`: point the E090 there."""
    message = str(exc)
    match = re.search(r"\(at line (\d+), column (\d+)\)", message)
    span = None
    if match:
        line, col = int(match.group(1)), int(match.group(2))
        span = (line, col, line, col + 1)
        message = message[:match.start()].rstrip()
    return Diagnostic("E090", f"invalid grove.toml: {message}", path, span)
