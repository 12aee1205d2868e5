"""The `Http` tool (SPEC §7) on httpx, which is imported on the first request only (it costs start-up time).

Every request carries `User-Agent: sagepy/<version>`; post and put send their body unchanged with
`Content-Type: application/json`. A response of any status is a result (`HttpResponse` with the header names
lower-cased; repeated headers are joined with ", "); only a failure to get a response is a Tool error.
Redirects are followed (SPEC is silent; sagepy's choice: an agent fetching a URL wants what it names).

Requests run on the shared event loop (aio.py) through the process's one pooled client (net.py), so the
agents of a program reuse each other's connections. `SAGE_HTTP_TIMEOUT` (seconds, default 30, read per call)
bounds the whole exchange, not just each read. While a request runs, the calling agent's cancel flag is
checked every `_POLL_SECONDS`: once it is set (the agent was stopped, or its test ended), the request's task
is cancelled, which closes its connection, and `AgentCancelled` is raised.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from .. import aio, net
from ..version import __version__
from ..core.errors import AgentCancelled
from . import seconds_text, time_limit, tool_error

# How often a running request checks its cancel flag; bounds how long cancellation takes.
_POLL_SECONDS = 0.05


def _request(method: str, url: str, body: str | None, cancel: threading.Event | None) -> dict:
    import httpx

    where = f"Http.{method.lower()}"
    timeout = time_limit(where)
    headers = {"User-Agent": f"sagepy/{__version__}"}
    content = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        content = body.encode("utf-8")
    exchange = net.shared_client().request(method, url, headers=headers, content=content, timeout=timeout,
                                           follow_redirects=True)
    try:
        response = aio.run(exchange, _cancel_point(cancel), _POLL_SECONDS, timeout_s=timeout)
    except (TimeoutError, httpx.TimeoutException):
        raise tool_error(where, f"request timed out after {seconds_text(timeout)} s") from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        raise tool_error(where, f"request failed: {net.failure_reason(exc)}") from None
    headers = {name.lower(): value for name, value in response.headers.items()}
    return {"status": response.status_code, "body": response.text, "headers": headers}   # an HttpResponse


def _cancel_point(cancel: threading.Event | None) -> Callable[[], None] | None:
    """What the waiting agent runs between polls: it raises `AgentCancelled` once `cancel` is set."""
    if cancel is None:
        return None

    def check() -> None:
        if cancel.is_set():
            raise AgentCancelled()
    return check


def get(url: str, *, cancel: threading.Event | None = None) -> dict:
    return _request("GET", url, None, cancel)


def delete(url: str, *, cancel: threading.Event | None = None) -> dict:
    return _request("DELETE", url, None, cancel)


def post(url: str, body: str, *, cancel: threading.Event | None = None) -> dict:
    return _request("POST", url, body, cancel)


def put(url: str, body: str, *, cancel: threading.Event | None = None) -> dict:
    return _request("PUT", url, body, cancel)


FUNCTIONS: dict[str, Callable[..., Any]] = {"get": get, "delete": delete, "post": post, "put": put}
