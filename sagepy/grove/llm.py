"""The sub-tables of grove.toml's `[llm]` (SPEC §11, §23): `[llm.providers.<provider>]`, the URL and key
variable of a provider other than the configured one. Each problem is one E090 pointing at its table or key."""
from __future__ import annotations

from typing import Any

from ..diagnostics import did_you_mean
from .keys import Collector, toml_type

PROVIDERS = ("openai", "anthropic")
_PROVIDER_KEYS = ("url", "api_key_env")


def check_providers(value: Any, out: Collector) -> dict[str, dict[str, str]]:
    """`[llm.providers]`: provider name -> {"url"?, "api_key_env"?}, the valid entries only."""
    def report(message: str, table: str, key: str | None, hint: str | None) -> None:
        out.error(f"{out.file}: {message}", table, key, hint)

    if not isinstance(value, dict):
        report(f"[llm] providers must be a table of providers, found {toml_type(value)}", "llm", "providers",
               None)
        return {}
    providers: dict[str, dict[str, str]] = {}
    for name, table in value.items():
        where = f"llm.providers.{name}"
        if name not in PROVIDERS:
            report(f"unknown provider `{name}` in [llm.providers]: the providers are {', '.join(PROVIDERS)}",
                   where, None, did_you_mean(name, PROVIDERS, cutoff=0.6))
            continue
        if not isinstance(table, dict):
            report(f"[llm.providers.{name}] must be a table, found {toml_type(table)}", "llm.providers", name,
                   None)
            continue
        entry: dict[str, str] = {}
        for key, setting in table.items():
            if key not in _PROVIDER_KEYS:
                report(f"unknown key `{key}` in [llm.providers.{name}]", where, key,
                       did_you_mean(key, _PROVIDER_KEYS, cutoff=0.6))
            elif not isinstance(setting, str) or not setting:
                report(f"[llm.providers.{name}] {key} must be a non-empty string, found {toml_type(setting)}",
                       where, key, None)
            else:
                entry[key] = setting
        providers[name] = entry
    return providers
