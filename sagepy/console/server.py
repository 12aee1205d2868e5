"""`sage ui [PATH] [--host HOST] [--port PORT] [--no-open]` (SPEC §24): serve the console with uvicorn.

The token is `SAGE_UI_TOKEN` when set, else 32 random bytes, URL-safe, new at each start. A host other than a
loopback address is refused (exit 2) unless `SAGE_UI_TOKEN` is set, before anything listens. The URL with the
token goes to stdout; Ctrl-C or SIGTERM stops the server (uvicorn's graceful shutdown, the live-update
streams ended and open connections given at most 2 s) and the command exits 130 or 143, as `sage worker` does.
"""
from __future__ import annotations

import ipaddress
import secrets
import sys
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8470
TOKEN_VAR = "SAGE_UI_TOKEN"
USAGE_EXIT = 2
GRACE_S = 2


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def serve(session: Any, host: str, port: int, open_browser: bool) -> int:
    token = session.settings.overrides.setting(TOKEN_VAR) or ""
    if not is_loopback(host) and not token:
        sys.stderr.write(f"error: set {TOKEN_VAR} to serve the console on {host}\n")
        return USAGE_EXIT
    settings = session.settings
    if settings.toml_broken:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(settings.diagnostics) + "\n")
        return 1
    from ..session import store_open_failure
    from ..store.base import Busy, NewerFormat, Unavailable
    from ..store.config import StoreConfigError, open_store
    target = None
    try:
        target = settings.state_target()
        if target is None:
            from ..runtime.durable import NEEDS_PERSISTENCE
            sys.stderr.write(NEEDS_PERSISTENCE + "\n")
            return 1
        store = open_store(target)
    except (NewerFormat, Busy, Unavailable, StoreConfigError) as exc:
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return 1
    store.close()
    token = token or secrets.token_urlsafe(32)
    from .app import Console, create_app
    console = Console(session.root, session, token, lambda: open_store(target), cookie=f"sage_ui_{port}")
    return _run(console, create_app(console), host, port, open_browser)


def _run(console: Any, app: Any, host: str, port: int, open_browser: bool) -> int:
    import uvicorn
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", access_log=False,
                            lifespan="off", timeout_graceful_shutdown=GRACE_S)
    server = uvicorn.Server(config)
    url = f"http://{url_host(host)}:{port}/?token={console.token}"

    import asyncio
    import signal
    stopped_by: list[int] = []

    def stop(sig: int, frame: Any) -> None:   # the live-update streams end with the server
        stopped_by.append(sig)
        console.stopping.set()
        server.handle_exit(sig, frame)

    async def main() -> None:
        config.load()
        server.lifespan = config.lifespan_class(config)
        await server.startup()
        if server.should_exit:   # the port could not be bound: uvicorn said why on stderr
            return
        print(f"sage ui: {url}", flush=True)
        if open_browser:
            import webbrowser
            webbrowser.open(url)
        await server.main_loop()
        await server.shutdown()

    handlers = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(main())
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        console.stopping.set()
        console.close()
    if not server.started:
        return 1
    return 128 + stopped_by[0] if stopped_by else 0
