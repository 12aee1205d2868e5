"""`divine`/`infer` and MCP sampling against the configured model API (SPEC §4.10, §4.13).

A call resolves its model (the `model:` option or the effect handler's override, else the configuration;
`"<provider>:<model>"` names another provider, SPEC §23), then answers offline when the model is `echo` or the
key is `mock`, fails with the no-model message when nothing is configured, and otherwise sends requests
through the `Route` of that provider (its settings, its API — sagepy.llm.provider: OpenAI chat completions or
the Anthropic Messages API — and its `ChatTransport`), from one provider-neutral conversation. Each request
is checked against the run's budgets and counted in its usage (sagepy.llm.usage), waits for the project's
limits (sagepy.llm.limits), and, when it fails after its retries with a transient error, goes to each
`[llm] fallback` in turn. Typed calls ask for
JSON matching the target type's schema, read the reply leniently, check it against the type (§5) and, on a
failure, ask again quoting the error. Checking a typed answer is converting it: it leaves as the Sage
value, which the effects boundary takes as it is (the real layer writes its JSON for the layers that keep
outcomes).

Every call is traced as `llm.request` followed by `llm.response` or `llm.error`. The key appears in no
trace event and no error message: the transport redacts it from everything a server sends back.
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

from ..core import types as T
from ..core.convert import ConversionError, compact_json, from_json, json_schema, to_json
from ..core.errors import SageRaise
from ..core.values import ErrorValue
from ..progress import note
from .config import ECHO_MODEL, PROVIDERS, LlmConfig
from .limits import Limiter
from .offline import OfflineError, echo_answer, mock_answer
from .parse import extract_json
from .providers import provider_for
from .transport import ChatTransport, TransportError
from .usage import Counts, RunUsage

NO_MODEL = ("no model configured; set SAGE_API_KEY (and SAGE_LLM_URL for a non-OpenAI endpoint) or [llm] in "
            "grove.toml; use model \"echo\" to run offline")
NO_PROVIDER_MODEL = "no model configured for provider {}; set SAGE_MODEL or [llm] model"
REPLY_LIMIT = 200
"""How much of the last raw reply the structured-parse failure quotes."""

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")

# Endpoints that rejected `response_format`: SPEC leaves it out for the rest of the process once a server
# has said it does not support it, whichever client (one per run, one per test) made the request.
_WITHOUT_FORMAT: set[str] = set()
_WITHOUT_FORMAT_LOCK = threading.Lock()

Trace = Callable[[str, dict], None]


def schema_name(t: T.Type) -> str:
    """The `json_schema.name` of a type: OpenAI accepts 1-64 characters of `[A-Za-z0-9_-]`."""
    return _SCHEMA_NAME.sub("_", T.type_name(t)).strip("_")[:64] or "value"


def _llm_error(message: str) -> SageRaise:
    return SageRaise(ErrorValue("Llm", message))


def _typed_instructions(schema: dict) -> str:
    return ("Reply with JSON only: a single JSON value that matches the JSON Schema below. Do not add "
            "explanations, comments or code fences.\n\nJSON Schema:\n" + compact_json(schema))


def retry_instructions(error: str) -> str:
    return (f"Your previous reply could not be used: {error}\nReply again with only the JSON value, "
            "matching the JSON Schema.")


class _Tally:
    """What one `divine`/`chat` call cost, for its `llm.response` event."""

    __slots__ = ("started", "attempts", "prompt_tokens", "completion_tokens", "cached_tokens", "cost",
                 "answered")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.attempts = 0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.cost: float | None = None
        self.answered: str | None = None   # "<provider>:<model>" of a fallback that answered

    def add_usage(self, counts: Counts, cost: float | None) -> None:
        if counts.input is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + counts.input
        if counts.output is not None:
            self.completion_tokens = (self.completion_tokens or 0) + counts.output
        if counts.cached is not None:
            self.cached_tokens = (self.cached_tokens or 0) + counts.cached
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def event(self, chars: int, mocked: bool) -> dict:
        data: dict[str, Any] = {"duration_ms": int((time.monotonic() - self.started) * 1000), "chars": chars,
                                "attempts": self.attempts, "mocked": mocked}
        if self.prompt_tokens is not None:
            data["prompt_tokens"] = self.prompt_tokens
        if self.completion_tokens is not None:
            data["completion_tokens"] = self.completion_tokens
        if self.cached_tokens is not None:
            data["cached_tokens"] = self.cached_tokens
        if self.cost is not None:
            data["cost"] = round(self.cost, 9)
        if self.answered is not None:
            data["answered_by"] = self.answered
        return data


class Route:
    """Where the requests for one provider go: its settings, its API and its pooled transport."""

    __slots__ = ("config", "provider", "transport", "external")

    def __init__(self, config: LlmConfig, transport: Any = None) -> None:
        """`transport`: a Host's own model (see LlmClient), which speaks the OpenAI chat form."""
        self.config = config
        self.external = transport is not None
        if transport is not None:
            from .providers import OpenAIChat
            self.provider: Any = OpenAIChat(config)
            self.transport: Any = transport
        else:
            self.provider = provider_for(config)
            self.transport = ChatTransport(config, self.provider)


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """(provider, model) of a model name: `"<provider>:<model>"` names the provider when the part before the
    first colon is one (SPEC §23); any other name (`llama3:8b`) is a model of the configured provider."""
    if model is not None:
        prefix, colon, rest = model.partition(":")
        if colon and prefix in PROVIDERS:
            return prefix, rest or None
    return None, model


class LlmClient:
    """The real LLM layer of `Effects`. Safe to share between agent threads."""

    def __init__(self, config: LlmConfig, trace: Trace | None = None, observe: Callable[..., None] | None = None,
                 usage: RunUsage | None = None, limiter: Limiter | None = None, transport: Any = None) -> None:
        """`observe`: called with every decoded answer of the API, the provider, URL and model that gave it
        and its token counts (the span exporter reads the model, finish reasons and usage from them);
        `usage`: the run's usage, which budgets are checked against; `limiter`: the project's rate limits;
        `transport`: where every request goes instead of the configured providers (a Host's `model`, e.g.
        `sage serve`'s calling client): it takes OpenAI chat bodies and answers in their form, with `post`,
        `endpoint`, `redact` and `close` as ChatTransport has."""
        self.config = config
        self._trace = trace
        self._observe = observe
        self.usage = usage if usage is not None else config.usage.run_usage()
        self._limiter = limiter
        self._fallback = config.usage.fallback
        self._external = Route(config, transport) if transport is not None else None
        self._routes: dict[str, Route] = {config.provider: Route(config)}
        self._routes_lock = threading.Lock()

    def route(self, model: str | None) -> tuple[Route, str | None]:
        """The route and bare model name of a call's model (the configured one when None)."""
        if self._external is not None:
            return self._external, model or self.config.model or "client"
        provider, name = split_model(model or self.config.model)
        if provider is None:
            provider = self.config.provider
        route = self._routes.get(provider)
        if route is None:
            with self._routes_lock:
                route = self._routes.get(provider)
                if route is None:
                    route = self._routes[provider] = Route(self.config.route(provider))
        return route, name

    # ---------------------------------------------------------------- public API
    def divine(self, prompt: str, target: T.Type, *, infer: bool = False, model: str | None = None,
               temperature: float | None = None, max_tokens: int | None = None) -> Any:
        """Answer `divine(prompt)` (a `str`) or `divine(prompt -> target)` (a Sage value of `target`).

        `infer` names the call form only (`infer` is an alias of `divine`); model, temperature and max_tokens
        are an effect handler's overrides.
        """
        route, model = self.route(model)
        typed = target != T.STRING

        def answer(tally: _Tally) -> tuple[Any, int, bool]:
            offline = self._offline(route, model)
            if offline is not None:
                value = offline(prompt, target)
                return value, 0 if typed else len(value), True
            self._check_ready(route, model)
            messages = [{"role": "user", "content": prompt}]
            if typed:
                value, reply = self._typed(route, model, messages, temperature, max_tokens, target, tally)
                return value, len(reply), False
            reply = self._complete(route, model, self._builder(messages, temperature, max_tokens), None, tally)
            return reply, len(reply), False

        return self._traced(route, {"model": model, "prompt_chars": len(prompt), "typed": typed}, answer)

    def turn(self, messages: list[dict], tools: Callable[[Any], list[dict]], target: T.Type, *, step: int,
             model: str | None = None, temperature: float | None = None, max_tokens: int | None = None) -> dict:
        """One model turn of `divine(p, tools: [...])` (SPEC §4.12): one request carrying the conversation,
        the tools (`tools(dialect)`, in the dialect of the provider the request goes to, called only when it
        goes out) with automatic tool choice, and for a typed `divine` its `response_format` where the
        provider has one. Returns the answer as a neutral assistant message (sagepy.llm.provider). The `echo`
        model and the `mock` key never call tools: they answer as a plain `divine` would."""
        route, model = self.route(model)
        typed = target != T.STRING

        def answer(tally: _Tally) -> tuple[dict, int, bool]:
            offline = self._offline(route, model)
            if offline is not None:
                value = offline(_first_user_text(messages), target)
                text = compact_json(to_json(value)) if typed else value
                return {"role": "assistant", "content": text}, len(text), True
            self._check_ready(route, model)
            response_format = _response_format(target)[1] if typed else None
            data, answered = self._request(route, model, self._builder(messages, temperature, max_tokens, tools),
                                           response_format, tally)
            reply = answered.provider.answer(data)
            return reply, len(reply["content"] or ""), False

        # the conversation grows with each turn: measured only for a trace that shows it
        chars = sum(len(m["content"]) for m in messages if isinstance(m.get("content"), str)) if self._trace else 0
        return self._traced(route, {"model": model, "prompt_chars": chars, "typed": typed, "step": step}, answer,
                            lambda reply: {"step": step, "tool_calls": len(reply.get("tool_calls") or ())})

    def chat(self, messages: list[dict], *, system: str | None = None, max_tokens: int | None = None,
             server: str | None = None) -> str:
        """Answer an MCP server's sampling request: its messages (OpenAI chat form) and system prompt, sent
        to the configured model; `server` names the requesting server in the trace."""
        route, model = self.route(None)
        prompt_chars = sum(len(m["content"]) for m in messages if isinstance(m.get("content"), str))
        request: dict[str, Any] = {"model": model, "prompt_chars": prompt_chars, "typed": False,
                                   "source": "sampling"}
        if server is not None:
            request["server"] = server

        def answer(tally: _Tally) -> tuple[str, int, bool]:
            offline = self._offline(route, model)
            if offline is not None:
                reply = offline(_last_user_text(messages), T.STRING)
                return reply, len(reply), True
            self._check_ready(route, model)
            full = ([{"role": "system", "content": system}] if system else []) + list(messages)
            reply = self._complete(route, model, self._builder(full, None, max_tokens), None, tally)
            return reply, len(reply), False

        return self._traced(route, request, answer)

    def close(self) -> None:
        """Close pooled connections; the client stays usable and reconnects on its next request."""
        for route in list(self._routes.values()):
            route.transport.close()

    # ---------------------------------------------------------------- steps
    def _traced(self, route: Route, request: dict, answer: Callable[[_Tally], tuple[Any, int, bool]],
                more: Callable[[Any], dict] | None = None) -> Any:
        """Run `answer` (returning value, reply length, mocked) between `llm.request` and `llm.response`
        (with `more(value)` added), or `llm.error` when it raises."""
        self._emit("llm.request", dict(request, provider=route.provider.name))
        tally = _Tally()
        try:
            value, chars, mocked = answer(tally)
        except SageRaise as exc:
            self._emit("llm.error", {"error": exc.error.display()})
            raise
        event = tally.event(chars, mocked)
        if more is not None:
            event.update(more(value))
        self._emit("llm.response", event)
        return value

    def _offline(self, route: Route, model: str | None) -> Callable[[str, T.Type], Any] | None:
        """The offline answerer for this call, wrapped so its failures are Llm errors; None to go online."""
        if model == ECHO_MODEL:
            answer = echo_answer
        elif route.config.mock:
            answer = mock_answer
        else:
            return None

        def run(prompt: str, target: T.Type) -> Any:
            try:
                return answer(prompt, target)
            except OfflineError as exc:
                raise _llm_error(str(exc)) from None
        return run

    def _check_ready(self, route: Route, model: str | None) -> None:
        if route.external:   # a Host's own model: nothing of [llm] is needed
            return
        config = route.config
        if model is None:   # a provider without a default model
            raise _llm_error(NO_PROVIDER_MODEL.format(config.provider))
        if not (config.configured or model == ECHO_MODEL):
            raise _llm_error(NO_MODEL)
        if config.error is not None:
            raise _llm_error(config.error)

    @staticmethod
    def _builder(messages: list[dict], temperature: float | None, max_tokens: int | None,
                 tools: Callable[[Any], list[dict]] | None = None) -> Callable[[Route, str], dict]:
        """What makes the request body of a neutral conversation for a route and model (the turn's own, or a
        fallback's); the route's configuration fills in what the handler did not set."""
        def build(route: Route, model: str) -> dict:
            config, provider = route.config, route.provider
            return provider.body(model, messages, temperature if temperature is not None else config.temperature,
                                 max_tokens if max_tokens is not None else config.max_tokens,
                                 tools(provider.dialect) if tools is not None else None)
        return build

    def _typed(self, route: Route, model: str, messages: list[dict], temperature: float | None,
               max_tokens: int | None, target: T.Type, tally: _Tally) -> tuple[Any, str]:
        """(the answer's Sage value, last raw reply) for a typed call, asking again after each unusable reply."""
        schema, response_format = _response_format(target)
        messages = [{"role": "system", "content": _typed_instructions(schema)}] + messages
        attempts = max(1, self.config.infer_retries)
        reply = ""
        error = ""
        for _ in range(attempts):
            reply = self._complete(route, model, self._builder(messages, temperature, max_tokens),
                                   response_format, tally)
            try:
                return from_json(extract_json(reply), target), reply
            except (ValueError, ConversionError) as exc:
                error = str(exc)
            messages = messages + [{"role": "assistant", "content": reply},
                                   {"role": "user", "content": retry_instructions(error)}]
        last = route.transport.redact(reply)[:REPLY_LIMIT]
        raise _llm_error(f"failed to parse structured response after {attempts} attempts: {error}; "
                         f"last reply: {last}")

    def _complete(self, route: Route, model: str, build: Callable[[Route, str], dict],
                  response_format: dict | None, tally: _Tally) -> str:
        """Send one request (with the transport's retries and the fallbacks) and return the reply text."""
        data, answered = self._request(route, model, build, response_format, tally)
        return answered.provider.text(data)

    def _request(self, route: Route, model: str, build: Callable[[Route, str], dict],
                 response_format: dict | None, tally: _Tally) -> tuple[Any, Route]:
        """The decoded answer to the request `build` makes, and the route that gave it: the turn's own model,
        else, when it failed after its retries with a transient error, each `[llm] fallback` in turn (SPEC §23)."""
        chain = [(route, model)] + [(self.route(f"{p}:{m}")[0], m) for p, m in self._fallback
                                    if (p, m) != (route.provider.name, model)]
        for i, (current, name) in enumerate(chain):
            try:
                data = self._request_on(current, name, build(current, name), response_format, tally)
            except TransportError as exc:
                if not exc.transient or i == len(chain) - 1:
                    raise _llm_error(exc.message) from None
                following, following_model = chain[i + 1]
                note(f"{current.provider.name}:{name} failed ({exc.message}); trying "
                     f"{following.provider.name}:{following_model}")
                continue
            if i:
                tally.answered = f"{current.provider.name}:{name}"
            return data, current
        raise AssertionError("unreachable: the chain is never empty")

    def _request_on(self, route: Route, model: str, body: dict, response_format: dict | None,
                    tally: _Tally) -> Any:
        """Send one request to `route` (with the transport's retries, and once more without `response_format`
        when the server refuses it) and return the decoded answer; raises TransportError."""
        endpoint = route.transport.endpoint
        with _WITHOUT_FORMAT_LOCK:
            with_format = (response_format is not None and route.provider.response_format
                           and endpoint not in _WITHOUT_FORMAT)
        if with_format:
            body = dict(body, response_format=response_format)
        try:
            return self._post(route, model, body, tally)
        except TransportError as exc:
            if not (with_format and exc.status in (400, 422) and "response_format" in exc.body):
                raise
        with _WITHOUT_FORMAT_LOCK:
            _WITHOUT_FORMAT.add(endpoint)
        return self._post(route, model, {k: v for k, v in body.items() if k != "response_format"}, tally)

    def _post(self, route: Route, model: str, body: dict, tally: _Tally) -> Any:
        """One request with its retries, inside the run's budget and the project's limits; its usage is
        counted."""
        usage, limiter, provider = self.usage, self._limiter, route.provider.name
        usage.check(provider, model)
        try:
            if limiter is None:
                answer = route.transport.post(body, model)
            else:
                estimate = len(compact_json(body)) // 4 if limiter.tpm else 0
                with limiter.in_flight(model):
                    answer = route.transport.post(body, model, lambda: limiter.admit(model, estimate))
        except TransportError as exc:
            tally.attempts += exc.attempts
            raise
        tally.attempts += answer.attempts
        counts = route.provider.usage(answer.data)
        tally.add_usage(counts, usage.add(provider, model, counts))
        if limiter is not None:
            limiter.settle(estimate, (counts.input or 0) + (counts.output or 0) if counts.known else None)
        if self._observe is not None:
            self._observe(answer.data, provider, route.config.url, model, counts)
        return answer.data

    def _emit(self, kind: str, data: dict) -> None:
        if self._trace is not None:
            self._trace(kind, data)


def opening_messages(prompt: str, target: T.Type) -> list[dict]:
    """The first messages of a conversation with tools: the prompt, after the JSON instructions of a typed
    `divine` (§4.10)."""
    user = {"role": "user", "content": prompt}
    if target == T.STRING:
        return [user]
    schema, _ = _response_format(target)
    return [{"role": "system", "content": _typed_instructions(schema)}, user]


def _response_format(target: T.Type) -> tuple[dict, dict]:
    """The JSON Schema of a typed `divine`'s target and the `response_format` that asks for it (§4.10)."""
    try:
        schema = json_schema(target)
    except ConversionError as exc:
        raise _llm_error(f"cannot ask for a value of type {T.type_name(target)}: {exc}") from None
    return schema, {"type": "json_schema",
                    "json_schema": {"name": schema_name(target), "schema": schema, "strict": False}}


def _first_user_text(messages: list[dict]) -> str:
    """The prompt of a conversation: its first user message."""
    return next((m["content"] for m in messages
                 if m.get("role") == "user" and isinstance(m.get("content"), str)), "")


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""
