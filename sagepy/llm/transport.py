"""One model API request over HTTP, with retries of transient failures (SPEC §4.10, §4.13).

The provider (sagepy.llm.provider) names the endpoint, the headers and the error messages. HTTP 429 (and
the Messages API's 529, overloaded) after `Retry-After` seconds when the server sends them, HTTP 5xx and
connection errors are
retried with exponential backoff, up to `retries` extra attempts. A request timeout is not retried: the
server may still be working on it, and a second wait of the same length rarely ends differently. Other 4xx
answers are final, and so is a TLS failure (a certificate the trust store refuses stays refused). On a
terminal (sagepy.progress) the wait shows as a status line with the seconds waited, and each retry as a line.

Requests run synchronously in the calling agent's thread, on a lane of net.py's (one connection used by one
request at a time, shared by every run of the process), so they share the `Http` tool's settings and trust
store (the operating system's) but not its event loop: a model's tool loop
is a long run of requests, and bench/llm.py measured 50 turns through the shared loop's `httpx.AsyncClient`
at 1.2-1.7x a plain synchronous httpx client, against 0.9-1.1x for this one. httpx is imported on the first
request, never at import time: most programs never call an LLM, and start-up time matters.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..core.json_text import parse_json
from ..net import Lanes, failure_reason, lanes, url_for_display
from ..progress import note, waiting
from ..tls import failure_reason as tls_failure_reason
from .config import LlmConfig
from .provider import Provider

BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
RETRY_AFTER_MAX_S = 60.0
"""A `Retry-After` longer than this is cut short: a program should fail in minutes, not hang for hours."""


class TransportError(Exception):
    """A request that did not produce a usable answer. `message` is the Llm error's message (already
    redacted), `status` the HTTP status when there was one, `body` the answer's redacted body, `attempts`
    the number of requests sent; `transient`: a failure another model may not have (HTTP 429, 5xx, 529, a
    connection failure, a timeout), which a fallback is tried on (SPEC §23)."""

    def __init__(self, message: str, status: int | None = None, body: str = "", transient: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body
        self.attempts = 1
        self.transient = transient or status == 429 or (status is not None and status >= 500)


class _Retry(Exception):
    """A transient failure worth another attempt, after `delay` seconds (None: the backoff's choice);
    `reason` says what failed, for the retry's progress line."""

    def __init__(self, delay: float | None, reason: str) -> None:
        super().__init__()
        self.delay = delay
        self.reason = reason


def _origin(url: str) -> str:
    """`scheme://host:port` of a URL: the requests that may share a connection."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"
    except ValueError:
        return url


class Answer:
    """A successful answer: its decoded JSON and the number of HTTP requests it took."""

    __slots__ = ("data", "attempts")

    def __init__(self, data: Any, attempts: int) -> None:
        self.data = data
        self.attempts = attempts


class ChatTransport:
    """POSTs request bodies to the provider's endpoint (`{url}/chat/completions`, `{url}/messages`) on the
    process's lanes (thread-safe)."""

    def __init__(self, config: LlmConfig, provider: Provider) -> None:
        self.config = config
        self.provider = provider
        self.endpoint = config.url.rstrip("/") + provider.path
        self.origin = _origin(self.endpoint)

    def redact(self, text: str) -> str:
        """Text with every occurrence of the key replaced: servers do quote a rejected key back."""
        key = self.config.api_key
        return text.replace(key, "[redacted]") if key else text

    def post(self, body: dict, model: str | None = None, before: Callable[[], None] | None = None) -> Answer:
        """The answer to `body`, retrying transient failures; `before` is called before each attempt (the
        rate limits wait there, SPEC §23), once its connection is in hand, so that the request leaves as soon
        as the limits let it (a first request's client setup would otherwise delay it into the next burst)."""
        headers = self.provider.headers()
        pool = lanes()   # the first one imports httpx: before the status line's clock starts
        attempt = 0
        with waiting(f"waiting for model {model or self.config.model}", elapsed=True):
            while True:
                attempt += 1
                try:
                    return Answer(self._once(pool, body, headers, attempt > self.config.retries, before), attempt)
                except _Retry as retry:
                    delay = self._backoff(attempt) if retry.delay is None else retry.delay
                    note(f"{retry.reason}, retrying in {delay:.3g} s")
                    self._sleep(delay)
                except TransportError as exc:
                    exc.attempts = attempt
                    raise

    def close(self) -> None:
        """Close the idle connections to the endpoint's server."""
        lanes().close(self.origin)

    # ---------------------------------------------------------------- helpers
    def _once(self, pool: Lanes, body: dict, headers: dict, final: bool,
              before: Callable[[], None] | None) -> Any:
        """The decoded answer of one request; raises _Retry for a transient failure unless `final`."""
        import httpx

        try:
            with pool.lane(self.origin) as client:
                if before is not None:
                    before()
                response = client.post(self.endpoint, json=body, headers=headers,
                                       timeout=self.config.timeout_ms / 1000)
        except httpx.TimeoutException:
            raise TransportError(f"request failed: timed out after {self.config.timeout_ms} ms",
                                 transient=True) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            tls = tls_failure_reason(exc) is not None
            if tls or final:   # the server's certificate will not be any better next time
                raise TransportError(self._failed(exc), transient=not tls) from None
            raise _Retry(None, "connection failed") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise TransportError(self._failed(exc)) from None
        status = response.status_code
        if 200 <= status < 300:
            return self._decode(response)
        text = self.redact(response.text)
        if final or not (status == 429 or status >= 500):
            raise TransportError(self._api_error(status, text), status, text)
        if self.provider.transient_with_delay(status):
            raise _Retry(self._retry_after(response), "rate-limited" if status == 429 else f"overloaded ({status})")
        raise _Retry(None, f"server error {status}")

    def _failed(self, exc: Exception) -> str:
        """`request failed: <endpoint>: <why>`, naming what was tried (`Connection refused`, a DNS or TLS
        failure)."""
        return f"request failed: {self.redact(url_for_display(self.endpoint))}: {self.redact(failure_reason(exc))}"

    def _api_error(self, status: int, text: str) -> str:
        """The provider's `API error <status>: …` on one line; a refused key (401, 403) names the variable it
        came from, or says that none was sent."""
        message = self.provider.error_text(status, text)
        if status in (401, 403):
            key_env = self.config.key_env
            if self.config.api_key:
                message += f" (the key in {key_env} was refused)"
            else:
                message += f" (no key was sent: {key_env} is not set)"
        return message

    def _decode(self, response: Any) -> Any:
        try:
            return parse_json(response.text)
        except ValueError as exc:
            raise TransportError(f"request failed: the answer is not JSON ({exc})") from None

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S)

    @staticmethod
    def _retry_after(response: Any) -> float | None:
        """The `Retry-After` delay in seconds; None when absent or not a number of seconds."""
        value = response.headers.get("retry-after")
        if value is None:
            return None
        try:
            seconds = float(value.strip())
        except ValueError:
            return None
        if not seconds >= 0:
            return None
        return min(seconds, RETRY_AFTER_MAX_S)

    @staticmethod
    def _sleep(seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
