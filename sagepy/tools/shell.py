"""The `Shell` tool (SPEC §7): `Shell.run(cmd)` runs `sh -c cmd` and returns a `ShellResult`.

The command runs in a process group of its own with stdin from /dev/null, and its stdout and stderr are
captured as UTF-8 text (undecodable bytes become U+FFFD; no newline translation). A non-zero exit status is
a result, not an error; a shell killed by a signal gives `exit_code` -1.

No child is ever left behind by a call that does not finish normally: on cancellation, timeout or any
exception while waiting, the whole process group is killed and the shell reaped. Processes that the command
deliberately starts in the background (with their output redirected away) are the command's business.

`SAGE_SHELL_TIMEOUT` (seconds, may be fractional; default: no limit) is sagepy's own addition, since SPEC
is silent on shell timeouts: past it the group is killed and `Shell.run: timed out after N s` raised.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Any, Callable

from ..core.errors import AgentCancelled
from . import env_seconds, seconds_text, tool_error

WHERE = "Shell.run"
# How often a running command checks its cancel flag and deadline; bounds how long cancellation takes.
_POLL_SECONDS = 0.05


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill every process in the command's group, then reap the shell and release its pipes.

    SIGKILL cannot be caught or ignored, so the other members die too; being orphans, they are reaped by
    init (only the shell is our child), which is why only the shell is waited for.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def run(cmd: str, *, cancel: threading.Event | None = None) -> dict:
    timeout = env_seconds("SAGE_SHELL_TIMEOUT", WHERE)
    try:
        proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise tool_error(WHERE, f"cannot start sh: {reason}") from None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            # communicate() keeps what it has read so far when it times out, so polling loses no output.
            try:
                stdout, stderr = proc.communicate(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel is not None and cancel.is_set():
                _kill_group(proc)
                raise AgentCancelled()
            if deadline is not None and time.monotonic() >= deadline:
                _kill_group(proc)
                raise tool_error(WHERE, f"timed out after {seconds_text(timeout)} s")
    except BaseException:
        if proc.returncode is None:
            _kill_group(proc)
        raise
    code = proc.returncode
    return {"exit_code": -1 if code < 0 else code, "stdout": _decode(stdout), "stderr": _decode(stderr)}


FUNCTIONS: dict[str, Callable[..., Any]] = {"run": run}
