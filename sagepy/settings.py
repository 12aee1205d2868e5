"""Typed settings of one command: grove.toml parsed once (SPEC §11) and the `SAGE_*` variables read once (§12).

A `Session` (sagepy.session) builds one `Settings` from the project and a snapshot of the environment, taken
after `.env` is loaded (`Overrides`, sagepy.variables, which also lists every variable sagepy reads); every
consumer (checker, effects, MCP, LLM, built-in tools, persistence, supervision, the CLI) receives these objects
instead of reading the grove.toml dictionary or `os.environ` itself, so a variable changed while a command runs
does not change that command.

Building settings for a directory without grove.toml imports nothing beyond this module and sagepy.grove's
sections: the MCP tables are parsed (and sagepy.grove.servers imported) only when grove.toml exists.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .binding import AmbiguousBinding, bound_key
from .variables import Overrides

if TYPE_CHECKING:
    from .approval_policy import ApprovalPolicy
    from .diagnostics import Diagnostic
    from .grove import Grove
    from .grove.servers import McpSettings, ServerConfig
    from .llm.config import LlmConfig
    from .project import Project


# ---------------------------------------------------------------- grove.toml (SPEC §11)

class ToolSettings:
    """The `[tools.<Name>]` tables: the keys as written (what the checker's E086/W084 rules look at), the
    valid server configurations, and the binding of a tool block by sagepy.binding's rule, which the checker
    asks for once per block and records on its `ToolRef`s (sagepy.check.symbols.ToolTables)."""

    __slots__ = ("tables", "servers", "grove_path")

    def __init__(self, tables: Mapping[str, Any], servers: dict[str, ServerConfig], grove_path: str | None) -> None:
        self.tables = tables
        self.servers = servers
        self.grove_path = grove_path

    def __contains__(self, name: object) -> bool:
        return name in self.tables

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def bind(self, name: str) -> ServerConfig | None:
        """The server tool block `name` binds to; raises AmbiguousBinding when two keys match (E090)."""
        key = bound_key(name, self.servers)
        return self.servers[key] if key is not None else None

    def binding(self, name: str) -> tuple[str | None, Diagnostic | None]:
        """The `[tools.X]` key tool block `name` binds to (None: none), and the E090 of an ambiguous
        binding (SPEC §8.1, §11), pointing at the first matching key in grove.toml."""
        try:
            return bound_key(name, self.servers), None
        except AmbiguousBinding as exc:
            from .diagnostics import Diagnostic
            from .grove.keys import Locator
            first = next(key for key in self.servers if key.lower() == name.lower())
            grove = self.grove_path
            span = Locator(grove).span(f"tools.{first}")
            return None, Diagnostic("E090", f"{os.path.basename(grove or 'grove.toml')}: {exc}", grove, span)


class Settings:
    """Everything a command reads from grove.toml (sagepy.grove: its sections, as checked there) and the
    environment, parsed once."""

    def __init__(self, root: str, grove_path: str | None, overrides: Overrides, grove: Grove) -> None:
        self.root = root
        self.grove_path = grove_path
        self.overrides = overrides
        self.project = grove.project
        self.test = grove.test
        self.supervision = grove.supervision
        self.persistence = grove.persistence
        self.extern = grove.extern
        self.observability = grove.observability
        self.llm_section = grove.llm
        self.tools = ToolSettings(grove.tool_tables, grove.servers, grove_path)
        self.approvals: ApprovalPolicy | None = grove.approvals   # `[approvals]` (SPEC §17.1), if any
        self.toml_broken = grove.toml_broken
        self.diagnostics: list[Diagnostic] = grove.diagnostics             # every E090/E093 of grove.toml
        self.tool_diagnostics: list[Diagnostic] = grove.tool_diagnostics   # those of the MCP tables
        self._mcp: McpSettings | None = None
        if grove.mcp is not None:
            self.mcp = grove.mcp
        self._llm: LlmConfig | None = None

    @classmethod
    def from_project(cls, project: Project, overrides: Overrides) -> "Settings":
        from .grove import read_grove
        settings = cls(project.root, project.config_path, overrides,
                       read_grove(project, overrides.setting("SAGE_STATE_URL")))
        if project.dotenv_error is not None:
            settings.diagnostics = [project.dotenv_error] + settings.diagnostics
            settings.tool_diagnostics = [project.dotenv_error] + settings.tool_diagnostics
        return settings

    def entry_file(self) -> str:
        return os.path.join(self.root, self.project.entry)

    @property
    def mcp(self) -> McpSettings:
        """The `[mcp]` table (defaults without grove.toml), with SAGE_OAUTH_OPEN."""
        if self._mcp is None:
            from .grove.servers import McpSettings
            self.mcp = McpSettings()
        return self._mcp

    @mcp.setter
    def mcp(self, value: McpSettings) -> None:
        value.oauth_open = self.overrides.setting("SAGE_OAUTH_OPEN")
        self._mcp = value

    @property
    def llm(self) -> LlmConfig:
        """`[llm]` with the environment's overrides (SPEC §4.10), resolved on first use."""
        if self._llm is None:
            from .llm.config import LlmConfig
            self._llm = LlmConfig.resolve(self.llm_section, self.overrides)
        return self._llm

    def state_target(self) -> Any:
        """The project's durable store (a sagepy.store.config.StoreTarget), or None for process memory;
        raises StoreConfigError for an unset `$` variable in its URL or a bad SAGE_STATE_URL."""
        if not self.persistence.present:   # a plain run imports nothing of the store
            return None
        from .store.config import store_target
        return store_target(self)
