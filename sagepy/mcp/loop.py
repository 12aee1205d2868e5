"""The one background event-loop thread that runs all asynchronous I/O (DESIGN: concurrency model).

Agent threads are synchronous; they hand coroutines to this loop and wait for the answer. The loop is
started on first use and lives as long as the process (a daemon thread), so that a program that never
touches MCP never starts it. The MCP SDK's loggers are routed to `.sage/logs/sdk.log` here as well: the
SDK logs tracebacks for malformed server messages, and those must never reach the user's terminal.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from typing import Any, Coroutine

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            _thread = threading.Thread(target=run, name="sage-io", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
        return _loop


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The shared loop if it was ever started, without taking the lock (safe on a signal path)."""
    return _loop


def in_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
    """Schedule a coroutine on the shared loop from any other thread."""
    return asyncio.run_coroutine_threadsafe(coro, event_loop())


# Logger names of the SDK and the libraries under it whose records belong in sdk.log.
_SDK_LOGGERS = ("mcp", "mcp_types", "httpx2", "httpcore2")
_log_handler: logging.Handler | None = None


def route_sdk_logs(log_dir: str) -> None:
    """Send the SDK's log records to `<log_dir>/sdk.log` instead of the terminal (§8.3).

    Called whenever a connection starts; a later call with another directory moves the handler there.
    """
    global _log_handler
    path = os.path.join(log_dir, "sdk.log")
    with _lock:
        if _log_handler is not None and getattr(_log_handler, "baseFilename", None) == os.path.abspath(path):
            return
        os.makedirs(log_dir, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        for name in _SDK_LOGGERS:
            logger = logging.getLogger(name)
            if _log_handler is not None:
                logger.removeHandler(_log_handler)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False
        if _log_handler is not None:
            _log_handler.close()
        _log_handler = handler
