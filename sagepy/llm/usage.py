"""What a run's model turns cost, and the budgets that bound it (SPEC §23).

One `RunUsage` per run (the run's effects hold it, the LLM client adds to it): every request that got an
answer is one model turn, with the token counts its provider reported — input (cached input included),
output, and cached input where the provider says (OpenAI-compatible `usage.prompt_tokens_details
.cached_tokens`; the Messages API's `cache_read_input_tokens`, with `cache_creation_input_tokens` counted as
input). A turn whose answer reports no counts is *unknown*: it is shown as such, and a run with a budget
cannot go on past it, since its tokens could be anything. `[llm.prices."<model>"]` turns tokens into dollars
(cached input at its own price when given, else at the input price); the cost is known when every turn was
priced and counted.

A budget is checked before each request: a turn that would start once the run's usage has reached
`max_tokens_per_run` (input plus output) or `max_cost_per_run` is not sent and fails with the catchable Llm
error `budget exceeded: …`. A durable run journals its usage (sagepy.effects.journal), so that a resumed run
counts on from where it was.
"""
from __future__ import annotations

import threading
from typing import Any

from ..core.errors import SageRaise
from ..core.values import ErrorValue


class Counts:
    """The token counts of one answer as its provider reported them; None where it reported nothing."""

    __slots__ = ("input", "output", "cached")

    def __init__(self, input: int | None, output: int | None, cached: int | None = None) -> None:
        self.input = input
        self.output = output
        self.cached = cached

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None


class Price:
    """US dollars per million tokens."""

    __slots__ = ("input", "output", "cached_input")

    def __init__(self, input: float, output: float, cached_input: float | None = None) -> None:
        self.input = input
        self.output = output
        self.cached_input = cached_input

    def cost(self, counts: Counts) -> float:
        cached = min(counts.cached or 0, counts.input or 0)
        cached_price = self.cached_input if self.cached_input is not None else self.input
        return ((counts.input or 0) - cached) * self.input / 1e6 + cached * cached_price / 1e6 \
            + (counts.output or 0) * self.output / 1e6


class UsageSettings:
    """`[llm]`'s keys of SPEC §23, as grove.toml checked them: prices, budgets, limits and the fallback chain
    (`(provider, model)` pairs)."""

    __slots__ = ("prices", "max_tokens", "max_cost", "max_concurrent", "requests_per_minute",
                 "tokens_per_minute", "fallback")

    def __init__(self, section: Any = None) -> None:
        section = section or {}
        self.prices = {model: Price(p["input_per_mtok"], p["output_per_mtok"], p.get("cached_input_per_mtok"))
                       for model, p in (section.get("prices") or {}).items()}
        self.max_tokens: int | None = section.get("max_tokens_per_run")
        self.max_cost: float | None = section.get("max_cost_per_run")
        self.max_concurrent: int | None = section.get("max_concurrent_requests")
        self.requests_per_minute: float | None = section.get("requests_per_minute")
        self.tokens_per_minute: float | None = section.get("tokens_per_minute")
        self.fallback = [tuple(entry.split(":", 1)) for entry in section.get("fallback") or ()]

    @property
    def limited(self) -> bool:
        """Whether requests wait for a limit (SPEC §23 "Limits")."""
        return bool(self.max_concurrent or self.requests_per_minute or self.tokens_per_minute)

    def run_usage(self) -> "RunUsage":
        return RunUsage(self.prices, self.max_tokens, self.max_cost)


def price_of(prices: dict[str, Price], provider: str, model: str) -> Price | None:
    """The price of `model` of `provider`: keyed `"<provider>:<model>"` or by the model's name alone."""
    return prices.get(f"{provider}:{model}") or prices.get(model)


def dollars(amount: float) -> str:
    """An amount of dollars as messages show it: up to six decimals, no trailing zeros."""
    text = f"{amount:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def llm_error(message: str) -> SageRaise:
    return SageRaise(ErrorValue("Llm", message))


class RunUsage:
    """The usage of one run; safe to share between the run's agent threads."""

    def __init__(self, prices: dict[str, Price] | None = None, max_tokens: int | None = None,
                 max_cost: float | None = None) -> None:
        self.prices = prices or {}
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self._lock = threading.Lock()
        self._last = threading.local()   # per thread: the request it last added (`take_last_turn`)
        self.turns = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_input_tokens = 0
        self.unknown_turns = 0
        self.cost = 0.0
        self.unpriced = 0             # counted turns of a model without a price: the cost is unknown
        self.models: dict[str, int] = {}     # "<provider>:<model>" -> turns it answered
        self._version = 0             # changes with every addition: whether the journal's copy is behind
        self._journaled = 0

    # ---------------------------------------------------------------- budgets
    def check(self, provider: str, model: str) -> None:
        """Before a request to `model` of `provider`: raise the Llm error of a budget it would go past."""
        if self.max_cost is not None and price_of(self.prices, provider, model) is None:
            raise llm_error(f"no price for model {model}: [llm] max_cost_per_run needs "
                            f'[llm.prices."{model}"]')
        with self._lock:
            unknown, tokens, cost = self.unknown_turns, self.input_tokens + self.output_tokens, self.cost
        if self.max_tokens is not None:
            if unknown:
                raise llm_error(f"budget exceeded: unknown of {self.max_tokens} tokens used by this run "
                                f"({_turns(unknown)} reported no usage)")
            if tokens >= self.max_tokens:
                raise llm_error(f"budget exceeded: {tokens} of {self.max_tokens} tokens used by this run")
        if self.max_cost is not None:
            if unknown:
                raise llm_error(f"budget exceeded: unknown of {dollars(self.max_cost)} dollars used by this run "
                                f"({_turns(unknown)} reported no usage)")
            if cost >= self.max_cost:
                raise llm_error(f"budget exceeded: {dollars(cost)} of {dollars(self.max_cost)} dollars used by "
                                "this run")

    # ---------------------------------------------------------------- counting
    def add(self, provider: str, model: str, counts: Counts) -> float | None:
        """One answered request; returns its cost when known. The thread's last request is kept
        (`last_turn`), so that a recorded run's cassette can carry each turn's counts."""
        self._last.turn = (provider, model, counts)
        price = price_of(self.prices, provider, model)
        cost = price.cost(counts) if price is not None and counts.known else None
        with self._lock:
            self.turns += 1
            name = f"{provider}:{model}"
            self.models[name] = self.models.get(name, 0) + 1
            if not counts.known:
                self.unknown_turns += 1
            else:
                self.input_tokens += counts.input or 0
                self.output_tokens += counts.output or 0
                self.cached_input_tokens += counts.cached or 0
                if cost is None:
                    self.unpriced += 1
                else:
                    self.cost += cost
            self._version += 1
        return cost

    # ---------------------------------------------------------------- reading
    def take_last_turn(self) -> dict | None:
        """The counts of the request this thread last added (and forgets them): what a cassette records."""
        turn = getattr(self._last, "turn", None)
        self._last.turn = None
        if turn is None:
            return None
        provider, model, counts = turn
        return {"provider": provider, "model": model, "input": counts.input, "output": counts.output,
                "cached": counts.cached}

    def replayed(self, turn: dict) -> None:
        """Count a turn a cassette answered as the recorded request was counted."""
        self.add(turn.get("provider") or "", turn.get("model") or "",
                 Counts(turn.get("input"), turn.get("output"), turn.get("cached")))

    def summary(self) -> dict:
        """`RunOutcome.usage`: turns, token counts, the cost in dollars (None when not every turn was priced
        and counted) and the turns whose usage is unknown."""
        with self._lock:
            return {"turns": self.turns, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                    "cached_input_tokens": self.cached_input_tokens, "cost": self._known_cost(),
                    "unknown_turns": self.unknown_turns}

    def _known_cost(self) -> float | None:
        if self.unpriced or self.unknown_turns or (not self.prices and not self.turns):
            return None
        return round(self.cost, 9)

    # ---------------------------------------------------------------- the journal
    def record(self) -> dict | None:
        """The usage as the journal keeps it, when it changed since the journal last took it; else None."""
        with self._lock:
            if self._version == self._journaled:
                return None
            self._journaled = self._version
            return {**self._counts(), "cost": round(self.cost, 9), "unpriced": self.unpriced,
                    "models": dict(self.models)}

    def _counts(self) -> dict:
        return {"turns": self.turns, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_input_tokens": self.cached_input_tokens, "unknown_turns": self.unknown_turns}

    def restore(self, record: Any) -> None:
        """Count on from a journaled record (a resumed run)."""
        if not isinstance(record, dict):
            return
        with self._lock:
            for name in ("turns", "input_tokens", "output_tokens", "cached_input_tokens", "unknown_turns",
                         "unpriced"):
                value = record.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    setattr(self, name, value)
            if isinstance(record.get("cost"), (int, float)) and not isinstance(record.get("cost"), bool):
                self.cost = float(record["cost"])
            if isinstance(record.get("models"), dict):
                self.models = {k: v for k, v in record["models"].items() if isinstance(v, int)}
            self._journaled = self._version


def usage_line(summary: dict) -> str:
    """`usage: <n> model turns, <in> tokens in, <out> tokens out[, $<cost>]` (SPEC §23), and the turns whose
    usage is unknown when there are any."""
    line = (f"usage: {_turns(summary.get('turns') or 0, 'model turn')}, {summary.get('input_tokens') or 0} tokens in, "
            f"{summary.get('output_tokens') or 0} tokens out")
    if summary.get("cost") is not None:
        line += f", ${dollars(summary['cost'])}"
    if summary.get("unknown_turns"):
        line += f", {_turns(summary['unknown_turns'])} with unknown usage"
    return line


def summary_of(record: Any) -> dict:
    """`RunOutcome.usage`'s form of a journaled usage record (`sage runs show`, `runs list --format json`;
    `{}`: a run that made no request)."""
    usage = RunUsage()
    usage.restore(record)
    return usage.summary()


def models_line(record: Any) -> str:
    """`models: <provider>:<model> (<n> turns), …`: which models answered the run's turns, a fallback's
    included (SPEC §23)."""
    models = record.get("models") if isinstance(record, dict) else None
    shown = [f"{name} ({_turns(n)})" for name, n in (models or {}).items() if isinstance(n, int)]
    return "models: " + (", ".join(shown) if shown else "none")


def _turns(n: int, word: str = "turn") -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
