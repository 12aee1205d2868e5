"""`divine`/`infer` and MCP sampling against the configured model API (SPEC §4.10, §4.13).

A call resolves its model (the effect handler's override, else the configuration), then answers offline when
the model is `echo` or the key is `mock`, fails with the no-model message when nothing is configured, and
otherwise sends requests through `ChatTransport`, in the API of the provider (sagepy.llm.provider: OpenAI
chat completions or the Anthropic Messages API), from one provider-neutral conversation. Typed calls ask for
JSON matching the target type's schema, read the reply leniently, check it against the type (§5) and, on a
failure, ask again quoting the error. A typed answer leaves as wire data (its JSON, written as the value's
would be); the effects boundary makes the Sage value of it.

Every call is traced as `llm.request` followed by `llm.response` or `llm.error`. The key appears in no
trace event and no error message: the transport redacts it from everything a server sends back.
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

from ..core import types as T
from ..core.convert import ConversionError, compact_json, fitted_json, json_schema
from ..core.errors import SageRaise
from ..core.values import ErrorValue
from .config import ECHO_MODEL, PROVIDERS, LlmConfig
from .offline import OfflineError, echo_answer, mock_answer
from .parse import extract_json
from .providers import provider_for
from .transport import ChatTransport, TransportError

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

    __slots__ = ("started", "attempts", "prompt_tokens", "completion_tokens")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.attempts = 0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None

    def add_usage(self, prompt: int | None, completion: int | None) -> None:
        if prompt is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt
        if completion is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion

    def event(self, chars: int, mocked: bool) -> dict:
        data: dict[str, Any] = {"duration_ms": int((time.monotonic() - self.started) * 1000), "chars": chars,
                                "attempts": self.attempts, "mocked": mocked}
        if self.prompt_tokens is not None:
            data["prompt_tokens"] = self.prompt_tokens
        if self.completion_tokens is not None:
            data["completion_tokens"] = self.completion_tokens
        return data


class Route:
    """Where the requests for one provider go: its settings, its API and its pooled transport."""

    __slots__ = ("config", "provider", "transport")

    def __init__(self, config: LlmConfig) -> None:
        self.config = config
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

    def __init__(self, config: LlmConfig, trace: Trace | None = None,
                 observe: Callable[..., None] | None = None) -> None:
        """`observe`: called with every decoded answer of the API and the route and model that gave it (the
        span exporter reads the model, finish reasons and usage from it)."""
        self.config = config
        self._trace = trace
        self._observe = observe
        self._routes: dict[str, Route] = {config.provider: Route(config)}
        self._routes_lock = threading.Lock()

    def route(self, model: str | None) -> tuple[Route, str | None]:
        """The route and bare model name of a call's model (the configured one when None)."""
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
        """Answer `divine(prompt)` (a `str`) or `divine(prompt -> target)` (the JSON of a value of `target`).

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
            reply = self._complete(route, model, self._body(route, model, messages, temperature, max_tokens),
                                   None, tally)
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
                text = compact_json(value) if typed else value
                return {"role": "assistant", "content": text}, len(text), True
            self._check_ready(route, model)
            provider = route.provider
            body = self._body(route, model, messages, temperature, max_tokens, tools(provider.dialect))
            response_format = _response_format(target)[1] if typed and provider.response_format else None
            reply = provider.answer(self._request(route, model, body, response_format, tally))
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
            reply = self._complete(route, model, self._body(route, model, full, None, max_tokens), None, tally)
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
        config = route.config
        if model is None:   # a provider without a default model
            raise _llm_error(NO_PROVIDER_MODEL.format(config.provider))
        if not (config.configured or model == ECHO_MODEL):
            raise _llm_error(NO_MODEL)
        if config.error is not None:
            raise _llm_error(config.error)

    def _body(self, route: Route, model: str, messages: list[dict], temperature: float | None,
              max_tokens: int | None, tools: list[dict] | None = None) -> dict:
        """The provider's request body for a neutral conversation; the configuration fills in what the
        handler did not set."""
        config = route.config
        return route.provider.body(model, messages, temperature if temperature is not None else config.temperature,
                                   max_tokens if max_tokens is not None else config.max_tokens, tools)

    def _typed(self, route: Route, model: str, messages: list[dict], temperature: float | None,
               max_tokens: int | None, target: T.Type, tally: _Tally) -> tuple[Any, str]:
        """(the answer's JSON, last raw reply) for a typed call, asking again after each unusable reply."""
        schema, response_format = _response_format(target)
        if not route.provider.response_format:
            response_format = None
        messages = [{"role": "system", "content": _typed_instructions(schema)}] + messages
        attempts = max(1, self.config.infer_retries)
        reply = ""
        error = ""
        for _ in range(attempts):
            reply = self._complete(route, model, self._body(route, model, messages, temperature, max_tokens),
                                   response_format, tally)
            try:
                return fitted_json(extract_json(reply), target), reply
            except (ValueError, ConversionError) as exc:
                error = str(exc)
            messages = messages + [{"role": "assistant", "content": reply},
                                   {"role": "user", "content": retry_instructions(error)}]
        last = route.transport.redact(reply)[:REPLY_LIMIT]
        raise _llm_error(f"failed to parse structured response after {attempts} attempts: {error}; "
                         f"last reply: {last}")

    def _complete(self, route: Route, model: str, body: dict, response_format: dict | None, tally: _Tally) -> str:
        """Send one request (with the transport's retries) and return the reply text."""
        return route.provider.text(self._request(route, model, body, response_format, tally))

    def _request(self, route: Route, model: str, body: dict, response_format: dict | None, tally: _Tally) -> Any:
        """Send one request (with the transport's retries, and once more without `response_format` when the
        server refuses it) and return the decoded answer."""
        endpoint = route.transport.endpoint
        with _WITHOUT_FORMAT_LOCK:
            with_format = response_format is not None and endpoint not in _WITHOUT_FORMAT
        if with_format:
            body = dict(body, response_format=response_format)
        try:
            answer = self._post(route, model, body, tally)
        except TransportError as exc:
            if not (with_format and exc.status in (400, 422) and "response_format" in exc.body):
                raise _llm_error(exc.message) from None
            with _WITHOUT_FORMAT_LOCK:
                _WITHOUT_FORMAT.add(endpoint)
            body = {k: v for k, v in body.items() if k != "response_format"}
            try:
                answer = self._post(route, model, body, tally)
            except TransportError as retry_exc:
                raise _llm_error(retry_exc.message) from None
        return answer.data

    def _post(self, route: Route, model: str, body: dict, tally: _Tally) -> Any:
        try:
            answer = route.transport.post(body, model)
        except TransportError as exc:
            tally.attempts += exc.attempts
            raise
        tally.attempts += answer.attempts
        tally.add_usage(*route.provider.usage(answer.data))
        if self._observe is not None:
            self._observe(answer.data, route.provider.name, route.config.url, model)
        return answer

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
