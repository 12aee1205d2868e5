"""Typed settings of one command: grove.toml parsed once (SPEC §11) and the `SAGE_*` variables read once (§12).

A `Session` (sagepy.session) builds one `Settings` from the project and a snapshot of the environment, taken
after `.env` is loaded; every consumer (checker, effects, MCP, LLM, built-in tools, persistence, supervision,
the CLI) receives these objects instead of reading the grove.toml dictionary or `os.environ` itself, so a
variable changed while a command runs does not change that command.

`VARIABLES` is the one list of the variables sagepy reads (SPEC §12; those of the model's tool use, §4.12,
join it with that feature), with their defaults. Values that can be wrong
(`SAGE_HTTP_TIMEOUT=soon`) are kept as written and reported by the call that uses them, as before: a setting a
program never uses never stops it.

Building settings for a directory without grove.toml imports nothing beyond this module and sagepy.grove's
sections: the MCP tables are parsed (and sagepy.grove.servers imported) only when grove.toml exists.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator, Mapping

if TYPE_CHECKING:
    from .approval_policy import ApprovalPolicy
    from .diagnostics import Diagnostic
    from .grove import Grove
    from .grove.servers import McpSettings, ServerConfig
    from .llm.config import LlmConfig
    from .project import Project


class Variable:
    """One environment variable sagepy reads: its name, its default (None: unset or computed) and meaning."""

    __slots__ = ("name", "default", "meaning")

    def __init__(self, name: str, default: str | None, meaning: str) -> None:
        self.name = name
        self.default = default
        self.meaning = meaning


VARIABLES: tuple[Variable, ...] = (
    Variable("SAGE_API_KEY", None, "LLM bearer token; `mock` selects the offline mock answers (§4.10)"),
    Variable("SAGE_LLM_URL", "https://api.openai.com/v1", "base URL of an OpenAI-compatible API"),
    Variable("SAGE_MODEL", "gpt-4o-mini", "default model (none for the anthropic provider)"),
    Variable("SAGE_LLM_PROVIDER", "openai", "the model API: openai or anthropic (overrides [llm] provider)"),
    Variable("SAGE_INFER_RETRIES", "3", "attempts for typed `divine` (overrides [llm] infer_retries)"),
    Variable("SAGE_MAX_TOOL_STEPS", "10",
             "model answers with tool calls allowed in one `divine` (overrides [llm] max_tool_steps)"),
    Variable("SAGE_MAX_TOOL_RESULT_CHARS", "20000",
             "longest tool message sent back to the model (overrides [llm] max_tool_result_chars)"),
    Variable("SAGE_LLM_RETRIES", "2", "extra attempts on transient LLM failures (overrides [llm] retries)"),
    Variable("SAGE_TEMPERATURE", None, "optional request field"),
    Variable("SAGE_MAX_TOKENS", None, "optional request field"),
    Variable("SAGE_LLM_TIMEOUT_MS", "120000", "LLM request timeout"),
    Variable("SAGE_TRACE", None, "any value: trace events to stderr"),
    Variable("SAGE_TRACE_FILE", None, "append trace events to this file (wins over SAGE_TRACE)"),
    Variable("SAGE_FS_ROOT", None, "root of the Fs tool (default: the current directory)"),
    Variable("SAGE_HTTP_TIMEOUT", "30", "time limit of Http, Database and Fs.read in seconds"),
    Variable("SAGE_SHELL_TIMEOUT", None, "Shell tool timeout in seconds (sagepy's addition; default: none)"),
    Variable("SAGE_DATABASE_URL", None, "Database tool (`sqlite:<path>`, `sqlite::memory:`)"),
    Variable("SAGE_CACHE_DIR", None, "AST cache directory (default: $XDG_CACHE_HOME/sagepy or ~/.cache/sagepy)"),
    Variable("SAGE_NO_CACHE", None, "any value: never read or write the AST cache"),
    Variable("SAGE_OAUTH_OPEN", None, "command that opens OAuth authorisation URLs instead of the browser"),
    Variable("SAGE_WORKER_PARENT", None, "set by `sage worker` for the runs it starts (its claim); not for users"),
    Variable("SAGE_STATE_URL", None, "replaces the [persistence] backend of a project that has one: "
             "postgresql://… or sqlite:<path>"),
    # OpenTelemetry export (SPEC §18.1): the standard variables, read from the same snapshot
    Variable("OTEL_EXPORTER_OTLP_ENDPOINT", None, "OTLP/HTTP base URL; traces go to <url>/v1/traces"),
    Variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None, "OTLP/HTTP traces URL, used as it is"),
    Variable("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "the only protocol sagepy exports with"),
    Variable("OTEL_EXPORTER_OTLP_HEADERS", None, "headers of every export request (`k=v,k2=v2`)"),
    Variable("OTEL_EXPORTER_OTLP_TRACES_HEADERS", None, "headers of trace export requests (win over the above)"),
    Variable("OTEL_SERVICE_NAME", None, "the service.name of exported spans (default: the project name)"),
    Variable("OTEL_SDK_DISABLED", None, "`true`: no export"),
    Variable("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None,
             "`true`: prompts, answers, tool arguments and results are recorded on spans"),
    Variable("SAGE_DEBUG", None, "any value: an internal error shows its Python traceback (sagepy's addition, "
             "for its developers)"),
    # Test hooks of the durable-run crash sweep (sagepy.store.crash reads them once per process)
    Variable("SAGE_COUNT_WRITES", None, "append one line per committed journal write to this file"),
    Variable("SAGE_CRASH_AFTER_WRITE", None, "k: exit with code 77 right after the k-th committed journal write"),
    Variable("SAGE_CRASH_BEFORE_WRITE", None, "k: exit with code 77 right before the k-th journal write commits"),
)
_NAMES = frozenset(v.name for v in VARIABLES)
_DEFAULTS = {v.name: v.default for v in VARIABLES}


class Overrides(Mapping[str, str]):
    """The environment as it was when the session was built. As a mapping it is the whole snapshot (the LLM
    key may live in any variable `[llm] api_key_env` names); `setting` reads one variable of `VARIABLES`."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = dict(environ)

    def __getitem__(self, name: str) -> str:
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)

    def setting(self, name: str) -> str | None:
        """The value of a listed variable when it is set and not empty, else None (its default applies)."""
        if name not in _NAMES:
            raise KeyError(f"{name} is not one of sagepy's variables")
        return self._environ.get(name) or None

    def value(self, name: str) -> str | None:
        """The value of a listed variable, or its default."""
        return self.setting(name) or _DEFAULTS[name]

    @property
    def trace_file(self) -> str | None:
        return self.setting("SAGE_TRACE_FILE")

    @property
    def trace(self) -> bool:
        return self.setting("SAGE_TRACE") is not None

    @property
    def cache_dir(self) -> str | None:
        """Where parsed ASTs are cached (SPEC §0.1); None when SAGE_NO_CACHE says never."""
        from .syntax.cache_dir import cache_root
        return cache_root(self)


# ---------------------------------------------------------------- grove.toml (SPEC §11)

class ToolSettings:
    """The `[tools.<Name>]` tables: the keys as written (what the checker's E086/W084 rules look at), the
    valid server configurations, and the binding of a tool block by SPEC §8.1's rule (the exact key, else
    the one key equal ignoring case; the built-in tool names by exact key only), which the checker asks
    for once per block and records on its `ToolRef`s (sagepy.check.symbols.ToolTables)."""

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
        if not self.servers:
            return None
        from .grove.servers import bind_tool_block
        return bind_tool_block(name, self.servers)

    def binding(self, name: str) -> tuple[str | None, Diagnostic | None]:
        """The `[tools.X]` key tool block `name` binds to (None: none), and the E090 of an ambiguous
        binding (SPEC §8.1, §11), pointing at the first matching key in grove.toml."""
        from .check.symbols import AmbiguousBinding, bound_key
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
        self.serve = grove.serve
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
