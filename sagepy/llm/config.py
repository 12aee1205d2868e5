"""Where the LLM client's settings come from (SPEC §4.10, §11, §12).

Precedence, highest first: the per-call overrides of an effect handler (given to `LlmClient.divine`, not
resolved here), the environment, grove.toml's `[llm]` section, the defaults. The key is read from the
variable that `[llm] api_key_env` names; grove.toml never holds the key itself. The variables most users
already have for the provider's own clients serve as fallbacks (SPEC §12, §4.13): for `openai`,
`OPENAI_API_KEY` when that variable is unset and `OPENAI_BASE_URL` when neither `SAGE_LLM_URL` nor `[llm] url`
is set; for `anthropic`, `ANTHROPIC_API_KEY`. The provider (`SAGE_LLM_PROVIDER`, `[llm] provider`) also
chooses the default URL and model: `anthropic` has no default model.

Resolving never fails: a malformed value (`SAGE_TEMPERATURE=hot`) is kept as `error` and raised as an Llm
error by the first call that needs the network, so that a program that never calls `divine`, or that runs
on the offline `echo` model, is not stopped by a setting it does not use.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY_ENV = "SAGE_API_KEY"
FALLBACK_KEY_ENV = "OPENAI_API_KEY"
FALLBACK_URL_ENV = "OPENAI_BASE_URL"
OPENAI = "openai"
ANTHROPIC = "anthropic"
PROVIDERS = (OPENAI, ANTHROPIC)
PROVIDER_ENV = "SAGE_LLM_PROVIDER"
ANTHROPIC_URL = "https://api.anthropic.com/v1"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
ANTHROPIC_MAX_TOKENS = 4096
"""`max_tokens` is required by the Messages API: sent when no handler, variable or `[llm]` key sets it."""
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_RETRIES = 2
DEFAULT_INFER_RETRIES = 3
DEFAULT_MAX_TOOL_STEPS = 10
DEFAULT_MAX_TOOL_RESULT_CHARS = 20_000

ECHO_MODEL = "echo"
MOCK_KEY = "mock"


class _Invalid(Exception):
    """One setting that does not parse; its message names the setting and the expected form."""


def _text(value: Any, name: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise _Invalid(f"invalid {name}: expected a non-empty string")


def _number(value: Any, name: str) -> float:
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _Invalid(f"invalid {name} '{value}': expected a number") from None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise _Invalid(f"invalid {name}: expected a number")


def _integer(minimum: int) -> Callable[[Any, str], int]:
    def parse(value: Any, name: str) -> int:
        if isinstance(value, str):
            try:
                number = int(value.strip())
            except ValueError:
                raise _Invalid(f"invalid {name} '{value}': expected an integer >= {minimum}") from None
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise _Invalid(f"invalid {name}: expected an integer >= {minimum}")
        if number < minimum:
            raise _Invalid(f"invalid {name} '{value}': expected an integer >= {minimum}")
        return number
    return parse


# field -> (environment variable, [llm] key, parser, default)
_SETTINGS: list[tuple[str, str, str, Callable[[Any, str], Any], Any]] = [
    ("url", "SAGE_LLM_URL", "url", _text, DEFAULT_URL),
    ("model", "SAGE_MODEL", "model", _text, DEFAULT_MODEL),
    ("temperature", "SAGE_TEMPERATURE", "temperature", _number, None),
    ("max_tokens", "SAGE_MAX_TOKENS", "max_tokens", _integer(1), None),
    ("timeout_ms", "SAGE_LLM_TIMEOUT_MS", "timeout_ms", _integer(1), DEFAULT_TIMEOUT_MS),
    ("retries", "SAGE_LLM_RETRIES", "retries", _integer(0), DEFAULT_RETRIES),
    ("infer_retries", "SAGE_INFER_RETRIES", "infer_retries", _integer(1), DEFAULT_INFER_RETRIES),
    ("max_tool_steps", "SAGE_MAX_TOOL_STEPS", "max_tool_steps", _integer(1), DEFAULT_MAX_TOOL_STEPS),
    ("max_tool_result_chars", "SAGE_MAX_TOOL_RESULT_CHARS", "max_tool_result_chars", _integer(1),
     DEFAULT_MAX_TOOL_RESULT_CHARS),
]


class LlmConfig:
    """Resolved LLM settings. `configured` is False when nothing points at a model (SPEC's no-model rule);
    `error` holds the first malformed setting, if any; `key_env` names the variable the key was read from
    (or would have been), which a refused key's error message points to."""

    __slots__ = ("url", "model", "api_key", "temperature", "max_tokens", "timeout_ms", "retries",
                 "infer_retries", "max_tool_steps", "max_tool_result_chars", "configured", "error", "key_env",
                 "provider", "others")

    def __init__(self, url: str = DEFAULT_URL, model: str | None = DEFAULT_MODEL, api_key: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 timeout_ms: int = DEFAULT_TIMEOUT_MS, retries: int = DEFAULT_RETRIES,
                 infer_retries: int = DEFAULT_INFER_RETRIES, max_tool_steps: int = DEFAULT_MAX_TOOL_STEPS,
                 max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS, configured: bool = False,
                 error: str | None = None, key_env: str = DEFAULT_KEY_ENV, provider: str = OPENAI) -> None:
        self.provider = provider
        self.url = url
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.infer_retries = infer_retries
        self.max_tool_steps = max_tool_steps
        self.max_tool_result_chars = max_tool_result_chars
        self.configured = configured
        self.error = error
        self.key_env = key_env
        self.others: dict[str, LlmConfig] = {}   # the settings of the other providers (SPEC §23)

    def __repr__(self) -> str:
        # The key stays out of every rendering of the configuration.
        key = "set" if self.api_key else "unset"
        return (f"LlmConfig(provider={self.provider!r}, url={self.url!r}, model={self.model!r}, api_key=<{key}>, "
                f"temperature={self.temperature!r}, max_tokens={self.max_tokens!r}, "
                f"timeout_ms={self.timeout_ms!r}, retries={self.retries!r}, "
                f"infer_retries={self.infer_retries!r}, max_tool_steps={self.max_tool_steps!r}, "
                f"max_tool_result_chars={self.max_tool_result_chars!r}, configured={self.configured!r})")

    @property
    def mock(self) -> bool:
        """The key `mock` selects the offline mock answers (§4.10)."""
        return self.api_key == MOCK_KEY

    @classmethod
    def resolve(cls, section: Mapping[str, Any], environ: Mapping[str, str]) -> "LlmConfig":
        """Settings from grove.toml's `[llm]` table (may be empty) and the environment."""
        values: dict[str, Any] = {}
        errors: list[str] = []
        provider = _provider(section, environ, errors)
        anthropic = provider == ANTHROPIC
        for field, env_name, key, parse, default in _SETTINGS:
            if anthropic and field in ("url", "model"):
                default = ANTHROPIC_URL if field == "url" else None
            raw_env = environ.get(env_name)
            if not raw_env and field == "url" and key not in section and not anthropic:
                env_name, raw_env = FALLBACK_URL_ENV, environ.get(FALLBACK_URL_ENV)
            if raw_env:
                source, raw = env_name, raw_env
            elif key in section:
                source, raw = f"[llm] {key}", section[key]
            else:
                values[field] = default
                continue
            try:
                values[field] = parse(raw, source)
            except _Invalid as exc:
                errors.append(str(exc))
                values[field] = default
        key_env = section.get("api_key_env", DEFAULT_KEY_ENV)
        if not isinstance(key_env, str) or not key_env:
            errors.append("invalid [llm] api_key_env: expected the name of an environment variable")
            key_env = DEFAULT_KEY_ENV
        api_key = environ.get(key_env) or None
        fallback = ANTHROPIC_KEY_ENV if anthropic else FALLBACK_KEY_ENV
        if api_key is None and environ.get(fallback):
            key_env, api_key = fallback, environ[fallback]
        configured = bool(environ.get("SAGE_LLM_URL") or (environ.get(FALLBACK_URL_ENV) and not anthropic)
                          or api_key or section or values["model"] == ECHO_MODEL)
        config = cls(api_key=api_key, configured=configured, error=errors[0] if errors else None, key_env=key_env,
                     provider=provider, **values)
        tables = section.get("providers") or {}
        config.others = {name: config._other(name, tables.get(name) or {}, environ)
                         for name in PROVIDERS if name != provider}
        return config

    def route(self, provider: str) -> "LlmConfig":
        """The settings for requests to `provider`: these for the configured one, else the other's."""
        return self if provider == self.provider else self.others[provider]

    def _other(self, provider: str, table: Mapping[str, Any], environ: Mapping[str, str]) -> "LlmConfig":
        """The settings of a provider other than the configured one (`divine(p, model: "<provider>:<model>")`,
        `[llm] fallback`): its `[llm.providers.<provider>]` `url` and `api_key_env`, else the provider's
        default URL and key variable (§4.13); the other settings are the configured provider's."""
        anthropic = provider == ANTHROPIC
        key_env = table.get("api_key_env") or (ANTHROPIC_KEY_ENV if anthropic else FALLBACK_KEY_ENV)
        return LlmConfig(url=table.get("url") or (ANTHROPIC_URL if anthropic else DEFAULT_URL), model=None,
                         api_key=environ.get(key_env) or None, temperature=self.temperature,
                         max_tokens=self.max_tokens, timeout_ms=self.timeout_ms, retries=self.retries,
                         infer_retries=self.infer_retries, max_tool_steps=self.max_tool_steps,
                         max_tool_result_chars=self.max_tool_result_chars, configured=True, error=self.error,
                         key_env=key_env, provider=provider)


def _provider(section: Mapping[str, Any], environ: Mapping[str, str], errors: list[str]) -> str:
    """`SAGE_LLM_PROVIDER`, else `[llm] provider`, else `openai`; an unknown name is kept as the error."""
    raw = environ.get(PROVIDER_ENV)
    source = PROVIDER_ENV
    if not raw:
        if "provider" not in section:
            return OPENAI
        raw, source = section["provider"], "[llm] provider"
    if raw in PROVIDERS:
        return raw
    errors.append(f"invalid {source} '{raw}': expected one of {', '.join(PROVIDERS)}")
    return OPENAI
