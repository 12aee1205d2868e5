"""The environment variables sagepy reads (SPEC §12), and the snapshot of the environment a command reads them from.

`VARIABLES` is the one list of the variables sagepy reads (those of the model's tool use, §4.12, join it with
that feature), with their defaults. A `Session` takes one `Overrides` snapshot after `.env` is loaded; every
consumer reads it instead of `os.environ`, so a variable changed while a command runs does not change that
command. Values that can be wrong (`SAGE_HTTP_TIMEOUT=soon`) are kept as written and reported by the call
that uses them: a setting a program never uses never stops it.
"""
from __future__ import annotations

from typing import Iterator, Mapping


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
