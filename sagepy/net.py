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

import threading
from typing import Any

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
