"""Where the MCP SDK's log records go: `.sage/logs/sdk.log`, never the terminal (SPEC §8.3).

The SDK logs tracebacks for malformed server messages, and those must never reach the user's terminal.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ..secrecy import mask_urls, open_private_log, private_directory

# Logger names of the SDK and the libraries under it whose records belong in sdk.log; sagepy's own httpx (LLM
# client, Http tool) too: an in-process server's SDK sets up root logging at INFO, which would otherwise print
# a line per model request to the terminal.
_SDK_LOGGERS = ("mcp", "mcp_types", "httpx2", "httpcore2", "httpx", "httpcore")
_log_handler: logging.Handler | None = None
_lock = threading.Lock()


class _PrivateLogFile(logging.FileHandler):
    """sdk.log: created 0600, and with secrets in URLs (`user:pass@`, `?token=`) masked in every record,
    tracebacks included (the SDK and httpx log the URLs they request)."""

    def _open(self) -> Any:
        return open_private_log(self.baseFilename)

    def format(self, record: logging.LogRecord) -> str:
        return mask_urls(super().format(record))


def route_sdk_logs(log_dir: str) -> None:
    """Send the SDK's log records to `<log_dir>/sdk.log` instead of the terminal (§8.3).

    Called whenever a connection starts; a later call with another directory moves the handler there.
    """
    global _log_handler
    path = os.path.join(log_dir, "sdk.log")
    with _lock:
        if _log_handler is not None and getattr(_log_handler, "baseFilename", None) == os.path.abspath(path):
            return
        private_directory(log_dir)
        handler = _PrivateLogFile(path, encoding="utf-8", delay=True)
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
