"""The sub-tables of grove.toml's `[llm]` (SPEC §11, §23): `[llm.providers.<provider>]`, the URL and key
variable of a provider other than the configured one. Each problem is one E090 pointing at its table or key."""
from __future__ import annotations

from typing import Any

from ..diagnostics import did_you_mean
from .keys import Collector, toml_type

PROVIDERS = ("openai", "anthropic")
PROVIDER_KEYS = ("url", "api_key_env")


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
            if key not in PROVIDER_KEYS:
                report(f"unknown key `{key}` in [llm.providers.{name}]", where, key,
                       did_you_mean(key, PROVIDER_KEYS, cutoff=0.6))
            elif not isinstance(setting, str) or not setting:
                report(f"[llm.providers.{name}] {key} must be a non-empty string, found {toml_type(setting)}",
                       where, key, None)
            else:
                entry[key] = setting
        providers[name] = entry
    return providers


PRICE_KEYS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")


def check_prices(value: Any, out: Collector) -> dict[str, dict[str, float]]:
    """`[llm.prices."<model>"]`: model -> {"input_per_mtok", "output_per_mtok", "cached_input_per_mtok"?}
    (US dollars per million tokens, numbers ≥ 0), the valid entries only."""
    def report(message: str, table: str, key: str | None, hint: str | None = None) -> None:
        out.error(f"{out.file}: {message}", table, key, hint)

    if not isinstance(value, dict):
        report(f"[llm] prices must be a table of models, found {toml_type(value)}", "llm", "prices")
        return {}
    prices: dict[str, dict[str, float]] = {}
    for model, table in value.items():
        where = f'llm.prices."{model}"' if "." in model else f"llm.prices.{model}"
        if not isinstance(table, dict):
            report(f'[llm.prices."{model}"] must be a table, found {toml_type(table)}', "llm.prices", model,
                   'e.g. [llm.prices."gpt-4o"] with input_per_mtok = 2.5 and output_per_mtok = 10')
            continue
        entry: dict[str, float] = {}
        for key, setting in table.items():
            if key not in PRICE_KEYS:
                report(f'unknown key `{key}` in [llm.prices."{model}"]', where, key,
                       did_you_mean(key, PRICE_KEYS, cutoff=0.6))
            elif not _amount(setting):
                report(f'[llm.prices."{model}"] {key} must be a number ≥ 0 (dollars per million tokens), '
                       f"found {_shown(setting)}", where, key)
            else:
                entry[key] = float(setting)
        missing = [key for key in PRICE_KEYS[:2] if key not in table]
        if missing:
            report(f'[llm.prices."{model}"] needs {" and ".join(missing)}', where, None)
            continue
        if len(entry) == len(table):
            prices[model] = entry
    return prices


def check_fallback(value: Any, out: Collector) -> list[str] | None:
    """`[llm] fallback`: an array of `"<provider>:<model>"` strings naming a known provider."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        out.error(f'{out.file}: [llm] fallback must be an array of "<provider>:<model>" strings, found '
                  f"{toml_type(value)}", "llm", "fallback")
        return None
    good = True
    for entry in value:
        provider, colon, model = entry.partition(":")
        if not colon or not model:
            out.error(f'{out.file}: [llm] fallback entry "{entry}" must be "<provider>:<model>"', "llm", "fallback",
                      hint=f'e.g. "anthropic:{entry or "claude-sonnet-4-5"}"')
            good = False
        elif provider not in PROVIDERS:
            out.error(f'{out.file}: [llm] fallback entry "{entry}" names an unknown provider `{provider}`: the '
                      f"providers are {', '.join(PROVIDERS)}", "llm", "fallback",
                      hint=did_you_mean(provider, PROVIDERS, cutoff=0.6))
            good = False
    return list(value) if good else None


def check_prices_cover(llm: dict, out: Collector) -> None:
    """A dollar budget needs a price for every model grove.toml names (`[llm] model` and each fallback): a
    model without one is E090, not a silent zero cost. (A model named elsewhere — `SAGE_MODEL`, the
    provider's default, a `divine(p, model: …)` — fails its first turn with an Llm error instead.)"""
    if "max_cost_per_run" not in llm:
        return
    prices = llm.get("prices") or {}
    provider = llm.get("provider", "openai")
    models = []
    model = llm.get("model")
    if model is not None and model != "echo":
        models.append((provider, model))
    for entry in llm.get("fallback") or ():
        fallback_provider, _, fallback_model = entry.partition(":")
        models.append((fallback_provider, fallback_model))
    for provider, model in models:
        if f"{provider}:{model}" not in prices and model not in prices:
            out.error(f'{out.file}: [llm] max_cost_per_run needs a price for model {model}: add '
                      f'[llm.prices."{model}"] with input_per_mtok and output_per_mtok', "llm", "max_cost_per_run")


def _amount(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value == value \
        and value != float("inf")


def _shown(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return toml_type(value)


def positive_number(value: Any) -> float | None:
    return float(value) if _amount(value) and value > 0 else None


def non_negative_number(value: Any) -> float | None:
    return float(value) if _amount(value) else None
