"""The `Http` tool (SPEC §7) on httpx, which is imported on the first request only (it costs start-up time).

Every request carries `User-Agent: sagepy/<version>`; post and put send their body unchanged with
`Content-Type: application/json`. A response of any status is a result (`HttpResponse` with the header names
lower-cased; repeated headers are joined with ", "); only a failure to get a response is a Tool error.
Redirects are followed (SPEC is silent; sagepy's choice: an agent fetching a URL wants what it names).

`SAGE_HTTP_TIMEOUT` (seconds, default 30, read per call) bounds the whole exchange, not just each read.
The request runs on a private asyncio loop in the calling agent's thread so that a cancel flag can abort it
at once: the request task is cancelled, which closes its connection, and `AgentCancelled` is raised.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from .. import __version__
from ..runtime.errors import AgentCancelled
from ..runtime.values import Record
from . import seconds_text, time_limit, tool_error

# How often a running request checks its cancel flag; bounds how long cancellation takes.
_POLL_SECONDS = 0.05

# Building an SSL context loads the CA bundle (tens of milliseconds), so one context serves every request.
_ssl_lock = threading.Lock()
_ssl_context: Any = None


def _shared_ssl_context() -> Any:
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            import httpx
            _ssl_context = httpx.create_ssl_context()
        return _ssl_context


def _reason(exc: BaseException) -> str:
    """The most specific description available: httpx wraps the OS error that says what went wrong
    (for asyncio, under a generic "All connection attempts failed"), so the innermost one is used."""
    innermost = None
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, OSError):
            innermost = link
        link = link.__cause__ or link.__context__
    if innermost is not None:
        if innermost.errno is not None and innermost.errno > 0:
            return os.strerror(innermost.errno)
        if innermost.strerror:
            return innermost.strerror
    return str(exc) or type(exc).__name__


async def _exchange(method: str, url: str, body: str | None, timeout: float,
                    cancel: threading.Event | None) -> tuple[str, Any]:
    """Send the request; return ("ok", response), ("timeout", None) or ("cancelled", None).

    Outcomes are returned rather than raised so that `AgentCancelled` (a BaseException) never travels
    through the event loop's machinery.
    """
    import asyncio

    import httpx

    headers = {"User-Agent": f"sagepy/{__version__}"}
    content = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        content = body.encode("utf-8")
    async with httpx.AsyncClient(verify=_shared_ssl_context(), timeout=timeout, follow_redirects=True) as client:
        task = asyncio.ensure_future(client.request(method, url, headers=headers, content=content))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return "timeout", None
                wait = remaining if cancel is None else min(remaining, _POLL_SECONDS)
                done, _ = await asyncio.wait({task}, timeout=wait)
                if done:
                    return "ok", task.result()
                if cancel is not None and cancel.is_set():
                    return "cancelled", None
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})


def _request(method: str, url: str, body: str | None, cancel: threading.Event | None) -> Record:
    import asyncio

    import httpx

    where = f"Http.{method.lower()}"
    timeout = time_limit(where)
    try:
        outcome, response = asyncio.run(_exchange(method, url, body, timeout, cancel))
    except httpx.TimeoutException:
        outcome, response = "timeout", None
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        raise tool_error(where, f"request failed: {_reason(exc)}") from None
    if outcome == "cancelled":
        raise AgentCancelled()
    if outcome == "timeout":
        raise tool_error(where, f"request timed out after {seconds_text(timeout)} s")
    headers = {name.lower(): value for name, value in response.headers.items()}
    return Record("HttpResponse", {"status": response.status_code, "body": response.text, "headers": headers})


def get(url: str, *, cancel: threading.Event | None = None) -> Record:
    return _request("GET", url, None, cancel)


def delete(url: str, *, cancel: threading.Event | None = None) -> Record:
    return _request("DELETE", url, None, cancel)


def post(url: str, body: str, *, cancel: threading.Event | None = None) -> Record:
    return _request("POST", url, body, cancel)


def put(url: str, body: str, *, cancel: threading.Event | None = None) -> Record:
    return _request("PUT", url, body, cancel)


FUNCTIONS: dict[str, Callable[..., Any]] = {"get": get, "delete": delete, "post": post, "put": put}
