"""grove.toml parsing (SPEC §11): every section and key onto the typed `Settings`, E090 diagnostics pointing
into the file.

The MCP tables (`[tools.X]`, `[mcp]`) are parsed by sagepy.mcp.config; this module covers the rest with the
same key-table machinery, and turns a TOML syntax error into an E090 at the position tomllib reports.
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from .diagnostics import Diagnostic, did_you_mean
from .mcp.config import (_apply_keys, _Collector, _one_of, _positive_int, _string, _string_list,
                         _toml_type, parse_mcp_settings, parse_tools_config)

if TYPE_CHECKING:
    from .project import Project
    from .settings import Settings


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _non_negative_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


class _Sink:
    """Target for `_apply_keys` where the values are read elsewhere: `[llm]` is resolved together with the
    environment by sagepy.llm.config."""

    def __setattr__(self, name: str, value: Any) -> None:
        pass


_SECTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "project": {"name": (_string, "a string"), "version": (_string, "a string"), "entry": (_string, "a string")},
    "test": {"timeout_ms": (_positive_int, "a positive integer")},
    "llm": {"url": (_string, "a string"), "model": (_string, "a string"), "api_key_env": (_string, "a string"),
            "temperature": (_number, "a number"), "max_tokens": (_positive_int, "a positive integer"),
            "timeout_ms": (_positive_int, "a positive integer"), "retries": (_non_negative_int, "an integer ≥ 0"),
            "infer_retries": (_positive_int, "a positive integer"),
            "max_tool_steps": (_positive_int, "a positive integer"),
            "max_tool_result_chars": (_positive_int, "a positive integer")},
    "persistence": {"backend": (_one_of(("sqlite", "postgres", "memory")), 'one of "sqlite", "postgres", "memory"'),
                    "path": (_string, "a string"), "url": (_string, "a string"), "schema": (_string, "a string"),
                    "max_recoveries": (_non_negative_int, "an integer ≥ 0")},
    "supervision": {"max_restarts": (_non_negative_int, "an integer ≥ 0"),
                    "within_seconds": (_positive_int, "a positive integer")},
    "extern": {"modules": (_string_list, "an array of strings")},
}
_MCP_SECTIONS = ("tools", "mcp")
_OWN_SECTIONS = ("approvals",)   # parsed by a module of their own


def read_grove(project: Project, settings: Settings) -> None:
    """Parse the project's grove.toml into `settings` in one pass: every valid value lands on its typed
    section, every problem becomes a diagnostic (E090; E093 for a missing extern module)."""
    if project.toml_error is not None:
        settings.toml_broken = True
        settings.diagnostics = settings.tool_diagnostics = [toml_error_diagnostic(project.config_path,
                                                                                  project.toml_error)]
        return
    config, path = project.config, project.config_path
    targets: dict[str, Any] = {"project": settings.project, "test": settings.test, "llm": _Sink(),
                               "persistence": settings.persistence, "supervision": settings.supervision,
                               "extern": settings.extern}
    out = _Collector(path)
    for section, data in config.items():
        if section in _MCP_SECTIONS:
            continue
        keys = _SECTIONS.get(section)
        if keys is None and section not in _OWN_SECTIONS:
            out.error(f"{out.file}: unknown section [{section}]", section,
                      hint=did_you_mean(section, list(_SECTIONS) + list(_MCP_SECTIONS) + list(_OWN_SECTIONS),
                                        cutoff=0.6))
            continue
        if not isinstance(data, dict):
            out.error(f"{out.file}: [{section}] must be a table, found {_toml_type(data)}", section)
            continue

        def report(message: str, key: str | None, hint: str | None, section: str = section) -> None:
            out.error(f"{out.file}: {message}", section, key, hint)

        if section == "approvals":
            from .approval_policy import parse_approvals
            settings.approvals = parse_approvals(data, report, lambda key: out.locator.span("approvals", key))
            continue
        if section == "persistence":
            settings.persistence.backend = "sqlite"
            settings.persistence.present = True
        elif section == "llm":
            settings.llm_section = data
        _apply_keys(data, keys, section, report, targets[section])
    if settings.persistence.present:
        _check_postgres(config, settings, out)
    diagnostics = out.diagnostics
    if path is not None:
        for module in settings.extern.modules:
            if not os.path.isfile(os.path.join(settings.root, module)):
                diagnostics.append(Diagnostic("E093", f"extern module not found: {module}", path,
                                              out.locator.span("extern", "modules")))
    servers, tool_diagnostics = parse_tools_config(config, path)
    tables = config.get("tools")
    settings.configure_tools(tables if isinstance(tables, dict) else {}, servers)
    settings.mcp, mcp_diagnostics = parse_mcp_settings(config, path)
    settings.tool_diagnostics = tool_diagnostics + mcp_diagnostics
    settings.diagnostics = diagnostics + settings.tool_diagnostics


def _check_postgres(config: dict, settings: Settings, out: _Collector) -> None:
    """SPEC §14.1: a postgres backend needs a URL (unless SAGE_STATE_URL gives one) and an explicit project
    name, since runs and fields in a shared database are keyed by it and checkouts' directories differ."""
    from .store.config import is_postgres_url
    persistence = settings.persistence
    override = settings.overrides.setting("SAGE_STATE_URL")
    postgres = is_postgres_url(override) if override is not None else persistence.backend == "postgres"
    if not postgres:
        return
    table = config.get("persistence", {})
    if override is None and "url" not in table:
        out.error(f'{out.file}: [persistence] backend = "postgres" needs url (a postgresql:// URL or conninfo)',
                  "persistence", "backend" if "backend" in table else None,
                  hint='url = "postgresql://sage:${PGPASSWORD}@db.example/sage"')
    if not isinstance(config.get("project"), dict) or not isinstance(config["project"].get("name"), str):
        out.error(f"{out.file}: a postgres backend needs [project] name: runs and fields are keyed by it",
                  "persistence", None, hint='add `name = "<project>"` under [project]')


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
