"""What servers tell the client besides answers (SPEC §8.11): progress of a tool call, and log messages.

Every tool call carries a progress token (the SDK attaches one when the call has a progress callback). Each
`notifications/progress` for it becomes an `mcp.progress` trace event and, only when stderr is a terminal,
the status line's text (`Ledger.import_rows: 40/100 rows parsed`); it changes no timeout and no result.
Log messages (`notifications/message`) are appended to the server's log file with their level, never
printed.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

from .. import progress as status_line
from ..secrecy import open_private_log


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class CallProgress:
    """The progress callback of one tool call; `close()` when the call ends takes its status line down."""

    __slots__ = ("server", "tool", "trace", "key")

    def __init__(self, server: str, tool: str, trace: Callable[[str, dict], None]) -> None:
        self.server = server
        self.tool = tool
        self.trace = trace
        self.key: int | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        data: dict[str, Any] = {"server": self.server, "tool": self.tool, "progress": progress}
        shown = _number(progress)
        if total is not None:
            data["total"] = total
            shown += f"/{_number(total)}"
        if message:
            data["message"] = message
            shown += f" {message}"
        self.trace("mcp.progress", data)
        self.key = status_line.report(self.key, f"{self.tool}: {shown}")

    def close(self) -> None:
        status_line.done(self.key)


def log_writer(log_path: str) -> Callable[[Any], Any]:
    """The SDK's logging callback for a server: each message appended to its log file as one line,
    `<time> [<level>] <logger>: <data>` (data that is not a string as compact JSON)."""
    async def on_log(params: Any) -> None:
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False,
                                                                              separators=(",", ":"))
        origin = f"{params.logger}: " if params.logger else ""
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{params.level}] {origin}{data}"
        try:
            with open_private_log(log_path) as log:
                log.write(line.replace("\n", "\n    ") + "\n")
        except OSError:
            pass   # a log that cannot be written loses the message, never the call
    return on_log


def sampling_text(content: Any) -> str:
    items = content if isinstance(content, list) else [content]
    return "\n".join(getattr(item, "text", "") for item in items if getattr(item, "type", "") == "text")


def log_tail(path: str, start: int, count: int) -> list[str]:
    """The last `count` lines written to the log since offset `start` (this start of the server)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            fh.seek(start)
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[-count:]
