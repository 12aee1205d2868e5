"""sagepy's own HTTP clients (the LLM client's and the `Http` tool's), built from one set of settings.

Both verify servers against the one trust store (tls.py) and honour the proxy environment variables, as
httpx does by default; each request passes its own timeout.

- `shared_client()` is the process's one pooled `httpx.AsyncClient`, for requests that run on the shared
  event loop (aio.py): the `Http` tool's. Its connections are bound to that loop, which lives as long as the
  process, so the client is never closed; the operating system closes its sockets at exit.
- `lanes()` is the process's pool of synchronous connections, for the LLM client, whose requests run in the
  calling agent's thread (llm/transport.py says why); every run of the process shares it.

httpx is imported when the first client is made: most programs make no HTTP request, and start-up matters.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

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


class Lanes:
    """Synchronous HTTP connections for requests made from many threads at once, one *lane* per request.

    A lane is an `httpx.Client` limited to one connection, used by one thread at a time and kept, with its
    connection alive, on a per-origin stack of idle lanes for the next request. One `httpx.Client` shared by
    all threads does not serve hundreds of them: its connection pool does work in proportion to its
    connections times its waiting requests under one lock at every request and every release, and it can
    close a keep-alive connection it has just handed to a waiting request, which then hangs until its read
    timeout (httpcore 1.0.9, encode/httpcore#1110). A lane's pool never has a second request, so neither
    happens, and a request never waits in httpx's pool: its timeout counts from when it is sent.

    At most `limit` requests are in flight at once (the others wait for a lane, for as long as it takes: a
    wait for a lane is not a request timeout); `limit` is derived from the open-file limit, which `lanes()`
    raises to its hard limit first."""

    def __init__(self, limit: int) -> None:
        import httpx
        self.limit = limit
        self._limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self._verify = trust_store()
        self._idle: dict[str, list[Any]] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(limit)

    @contextmanager
    def lane(self, origin: str) -> Iterator[Any]:
        """A client for one request to `origin` (scheme://host:port), returned to the idle stack after it;
        a lane whose request raised is closed (its connection may be in any state)."""
        self._slots.acquire()
        try:
            with self._lock:
                stack = self._idle.get(origin)
                client = stack.pop() if stack else None
            if client is None:
                import httpx
                client = httpx.Client(verify=self._verify, limits=self._limits)
            try:
                yield client
            except BaseException:
                client.close()
                raise
            with self._lock:
                self._idle.setdefault(origin, []).append(client)
        finally:
            self._slots.release()

    def close(self, origin: str) -> None:
        """Close the idle lanes to `origin`; the next request connects again."""
        with self._lock:
            stack = self._idle.pop(origin, [])
        for client in stack:
            client.close()


_lanes: Lanes | None = None


def lanes() -> Lanes:
    """The process's lanes, made on first use (which imports httpx and loads the trust store)."""
    global _lanes
    with _lock:
        if _lanes is None:
            _lanes = Lanes(max(16, _raise_open_file_limit() // 2))
        return _lanes


def _raise_open_file_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit (at most 1,048,576), as servers do:
    every request in flight holds a socket, and the usual soft limit of 1,024 would cap a program at a few
    hundred concurrent model calls. Returns the limit now in force."""
    try:
        import resource
    except ImportError:   # not on Windows: no such limit there
        return 8192
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 20 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        for limit in (wanted, min(wanted, 10240)):   # macOS refuses more than its per-process maximum
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
                soft = limit
                break
            except (ValueError, OSError):
                continue
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


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
