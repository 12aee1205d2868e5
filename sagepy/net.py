"""sagepy's own HTTP clients (the LLM client's and the `Http` tool's), built from one set of settings.

Both verify servers against the one trust store (tls.py) and honour the proxy environment variables, as
httpx does by default; each request passes its own timeout.

- `shared_client()` is the process's one pooled `httpx.AsyncClient`, for requests that run on the shared
  event loop (aio.py): the `Http` tool's. Its connections are bound to that loop, which lives as long as the
  process, so the client is never closed; the operating system closes its sockets at exit.
- `sync_client()` makes a synchronous client with the same settings, for the LLM client, whose requests run
  in the calling agent's thread (llm/transport.py says why).

httpx is imported when the first client is made: most programs make no HTTP request, and start-up matters.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from .tls import failure_reason as tls_failure_reason
from .tls import trust_store

_lock = threading.Lock()
_shared: Any = None


def shared_client() -> Any:
    """The process's pooled `httpx.AsyncClient`; use it only from coroutines on the shared event loop."""
    global _shared
    with _lock:
        if _shared is None:
            import httpx
            _shared = httpx.AsyncClient(verify=trust_store())
        return _shared


def sync_client(timeout_s: float) -> Any:
    """A new pooled `httpx.Client` with sagepy's settings, whose requests time out after `timeout_s`."""
    import httpx
    return httpx.Client(verify=trust_store(), timeout=httpx.Timeout(timeout_s))


def failure_reason(exc: BaseException) -> str:
    """Why a request got no answer, as specifically as known: a TLS failure as tls.py describes it; else the
    OS error that the HTTP client wraps (for asyncio, under a generic "All connection attempts failed"), the
    innermost one (`Connection refused`, `Name or service not known`); else the exception's own text."""
    tls_reason = tls_failure_reason(exc)
    if tls_reason is not None:
        return tls_reason
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
    return str(exc).split("\n", 1)[0] or type(exc).__name__


def url_for_display(url: str) -> str:
    """A URL as an error message names it: without user, password and query, which may hold secrets."""
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url.split("?", 1)[0].rsplit("@", 1)[-1]
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
