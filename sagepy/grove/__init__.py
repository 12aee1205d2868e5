"""grove.toml (SPEC §11): every section and key checked in one place, once, into plain typed data.

`read_grove` turns the project's parsed grove.toml (sagepy.project) into a `Grove`: one object per section
(`[project]`, `[test]`, `[llm]`, `[persistence]`, `[supervision]`, `[extern]`), the `[tools.<Name>]` server
configurations and `[mcp]` (sagepy.grove.servers, imported only when grove.toml exists), and every problem
as an E090 diagnostic pointing into the file (E093 for a missing extern module); a TOML syntax error
becomes an E090 at the position tomllib reports. Keys are checked with sagepy.grove.keys. The environment plays no part here: sagepy.settings joins
these sections with the `SAGE_*` variables.
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, did_you_mean
from .keys import (Collector, apply_keys, non_negative_int, number, one_of, positive_int, string, string_list,
                   toml_type)
if TYPE_CHECKING:
    from ..approval_policy import ApprovalPolicy
    from ..project import Project
    from .servers import McpSettings, ServerConfig


class ProjectSettings:
    __slots__ = ("name", "version", "entry")

    def __init__(self) -> None:
        self.name: str | None = None
        self.version = "0.1.0"
        self.entry = "src/main.sg"


class TestSettings:
    __slots__ = ("timeout_ms",)

    def __init__(self) -> None:
        self.timeout_ms = 10_000


class SupervisionSettings:
    __slots__ = ("max_restarts", "within_seconds")

    def __init__(self) -> None:
        self.max_restarts = 5
        self.within_seconds = 60


class PersistenceSettings:
    """`[persistence]`. Without the table `@persistent` fields live for one process (the store has always
    been opt-in); with it the backend defaults to SQLite."""

    __slots__ = ("backend", "path", "url", "schema", "present", "max_recoveries")

    def __init__(self) -> None:
        self.backend = "memory"
        self.path = ".sage/state.db"
        self.url: str | None = None     # PostgreSQL, `$` references unresolved (sagepy.store.config resolves)
        self.schema = "sage"
        self.present = False            # whether grove.toml has the table (SAGE_STATE_URL applies then)
        self.max_recoveries = 5         # automatic resumes of one run by workers (SPEC §14.2)


class ObservabilitySettings:
    """`[observability]` (SPEC §18.1): the OTLP/HTTP traces URL; the `OTEL_*` variables win."""

    __slots__ = ("otlp_endpoint",)

    def __init__(self) -> None:
        self.otlp_endpoint: str | None = None


class ExternSettings:
    __slots__ = ("modules",)

    def __init__(self) -> None:
        self.modules: list[str] = []


class LlmSection(dict):
    """`[llm]`: the keys it sets, each with a value of the right type (sagepy.llm.config joins them with the
    environment, SPEC §4.10)."""

    def __setattr__(self, key: str, value: Any) -> None:   # the target of `apply_keys`
        self[key] = value


_SECTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "project": {"name": (string, "a string"), "version": (string, "a string"), "entry": (string, "a string")},
    "test": {"timeout_ms": (positive_int, "a positive integer")},
    "llm": {"provider": (one_of(("openai", "anthropic")), 'one of "openai", "anthropic"'),
            "url": (string, "a string"), "model": (string, "a string"), "api_key_env": (string, "a string"),
            "temperature": (number, "a number"), "max_tokens": (positive_int, "a positive integer"),
            "timeout_ms": (positive_int, "a positive integer"), "retries": (non_negative_int, "an integer ≥ 0"),
            "infer_retries": (positive_int, "a positive integer"),
            "max_tool_steps": (positive_int, "a positive integer"),
            "max_tool_result_chars": (positive_int, "a positive integer")},
    "persistence": {"backend": (one_of(("sqlite", "postgres", "memory")), 'one of "sqlite", "postgres", "memory"'),
                    "path": (string, "a string"), "url": (string, "a string"), "schema": (string, "a string"),
                    "max_recoveries": (non_negative_int, "an integer ≥ 0")},
    "supervision": {"max_restarts": (non_negative_int, "an integer ≥ 0"),
                    "within_seconds": (positive_int, "a positive integer")},
    "extern": {"modules": (string_list, "an array of strings")},
    "observability": {"otlp_endpoint": (string, "a string")},
}
_MCP_SECTIONS = ("tools", "mcp")
_OWN_SECTIONS = ("approvals",)   # parsed by a module of their own


class Grove:
    """grove.toml as typed data: the sections (their defaults without the file or the table), the `[tools]`
    tables as written (what the checker's E086/W084 rules look at) and the valid servers among them, and the
    diagnostics: `diagnostics` holds every one, `tool_diagnostics` those of the MCP tables (for `sage tools`)."""

    def __init__(self) -> None:
        self.project = ProjectSettings()
        self.test = TestSettings()
        self.llm = LlmSection()
        self.persistence = PersistenceSettings()
        self.supervision = SupervisionSettings()
        self.extern = ExternSettings()
        self.observability = ObservabilitySettings()
        self.tool_tables: dict[str, Any] = {}
        self.servers: dict[str, ServerConfig] = {}
        self.mcp: McpSettings | None = None   # None: the defaults (no grove.toml, or no [mcp])
        self.approvals: ApprovalPolicy | None = None   # `[approvals]` (SPEC §17.1), when grove.toml has it
        self.toml_broken = False
        self.diagnostics: list[Diagnostic] = []
        self.tool_diagnostics: list[Diagnostic] = []


def read_grove(project: Project, state_url: str | None = None) -> Grove:
    """The project's grove.toml in one pass: every valid value lands on its typed section, every problem
    becomes a diagnostic (E090; E093 for a missing extern module). Without grove.toml: the defaults.
    `state_url`: SAGE_STATE_URL, which decides whether `[persistence]` is a PostgreSQL one (SPEC §14.1)."""
    grove = Grove()
    if project.config_path is None:
        return grove
    if project.toml_error is not None:
        grove.toml_broken = True
        grove.diagnostics = grove.tool_diagnostics = [toml_error_diagnostic(project.config_path,
                                                                            project.toml_error)]
        return grove
    from .servers import parse_mcp_settings, parse_tools_config
    config, path = project.config, project.config_path
    _remember_masked(path)
    targets: dict[str, Any] = {"project": grove.project, "test": grove.test, "llm": grove.llm,
                               "persistence": grove.persistence, "supervision": grove.supervision,
                               "extern": grove.extern, "observability": grove.observability}
    out = Collector(path)
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
            out.error(f"{out.file}: [{section}] must be a table, found {toml_type(data)}", section)
            continue

        def report(message: str, key: str | None, hint: str | None, section: str = section) -> None:
            out.error(f"{out.file}: {message}", section, key, hint)

        if section == "approvals":
            from ..approval_policy import parse_approvals
            grove.approvals = parse_approvals(data, report, lambda key: out.locator.span("approvals", key))
            continue
        if section == "persistence":
            grove.persistence.backend = "sqlite"
            grove.persistence.present = True
        if section == "llm":
            data = _llm_tables(data, grove, out)
        apply_keys(data, keys, section, report, targets[section])
    if grove.persistence.present:
        _check_postgres(config, grove, state_url, out)
    diagnostics = out.diagnostics
    for module in grove.extern.modules:
        if not os.path.isfile(os.path.join(project.root, module)):
            diagnostics.append(Diagnostic("E093", f"extern module not found: {module}", path,
                                          out.locator.span("extern", "modules")))
    grove.servers, tool_diagnostics = parse_tools_config(config, path)
    tables = config.get("tools")
    grove.tool_tables = tables if isinstance(tables, dict) else {}
    grove.mcp, mcp_diagnostics = parse_mcp_settings(config, path)
    grove.tool_diagnostics = tool_diagnostics + mcp_diagnostics
    grove.diagnostics = diagnostics + grove.tool_diagnostics
    return grove


def _llm_tables(data: dict, grove: Grove, out: Collector) -> dict:
    """The sub-tables of `[llm]` (SPEC §23), checked on their own; the rest of the table is returned."""
    if "providers" not in data:
        return data
    from .llm import check_providers
    grove.llm["providers"] = check_providers(data["providers"], out)
    return {key: value for key, value in data.items() if key != "providers"}


def _remember_masked(path: str) -> None:
    """Diagnostics that quote a line of grove.toml show the password of any URL in it as `***` (a
    `[persistence] url`, SPEC §14.1): they quote the lines kept here, masked, not the file."""
    from ..diagnostics import remember_source
    from ..secrecy import mask_passwords
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            remember_source(path, mask_passwords(file.read()))
    except OSError:   # unreadable now: the diagnostics quote nothing
        pass


def _check_postgres(config: dict, grove: Grove, state_url: str | None, out: Collector) -> None:
    """SPEC §14.1: a postgres backend needs a URL (unless SAGE_STATE_URL gives one) and an explicit project
    name, since runs and fields in a shared database are keyed by it and checkouts' directories differ."""
    if state_url is not None:
        postgres = state_url.startswith(("postgresql://", "postgres://"))
    else:
        postgres = grove.persistence.backend == "postgres"
    if not postgres:
        return
    table = config.get("persistence", {})
    if state_url is None and "url" not in table:
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
