"""Waiting for a person's line on a terminal without blocking a stop request.

A blocking `readline()` cannot be interrupted by another thread, so a prompt (an approval, an `ask`, an MCP
server's elicitation form) first polls its input until a line can be read, checking between polls whether
it was told to stop (Ctrl-C, the end of the run).
"""
from __future__ import annotations

import select
from typing import Callable, TextIO

POLL_S = 0.1


def wait_for_line(stream: TextIO, stopped: Callable[[], bool]) -> bool:
    """Until `stream` can be read: True then, False as soon as `stopped()` is true. A stream without a file
    descriptor (a test's StringIO) can always be read."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return True
    while True:
        if stopped():
            return False
        try:
            readable, _, _ = select.select([fd], [], [], POLL_S)
        except (OSError, ValueError):
            return True
        if readable:
            return True
