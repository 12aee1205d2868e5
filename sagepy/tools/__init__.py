"""The built-in tools Http, Fs, Shell and Database (SPEC §7), implemented natively.

The effects layer routes every built-in tool call here through `call_builtin_tool`. Arguments and results
are wire data (Strings in, JSON out); a failure raises a `Tool` error whose message names the tool
function and the reason (`Fs.read: path '../x' leaves the root`). Each tool lives in its own module, which
is imported on the first call only: a program that never calls Http never imports httpx.
"""
from __future__ import annotations

import importlib
import math
import os
import threading
from contextvars import ContextVar
from typing import Any, Callable, Mapping

from ..core.errors import AgentCancelled, SageRaise
from ..core.values import ErrorValue


# Safety classes from SPEC §7's table (used by trace events, tool listings and durable resume).
SAFETY: dict[tuple[str, str], str] = {
    ("Http", "get"): "read_only",
    ("Http", "delete"): "idempotent",
    ("Http", "post"): "destructive",
    ("Http", "put"): "idempotent",
    ("Fs", "read"): "read_only",
    ("Fs", "write"): "idempotent",
    ("Fs", "exists"): "read_only",
    ("Fs", "list"): "read_only",
    ("Fs", "delete"): "idempotent",
    ("Shell", "run"): "destructive",
    ("Database", "query"): "read_only",
    ("Database", "execute"): "destructive",
}

# Parameter names as declared in stdlib/prelude.sg; every parameter of a built-in tool is a String.
_PARAMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Http", "get"): ("url",),
    ("Http", "delete"): ("url",),
    ("Http", "post"): ("url", "body"),
    ("Http", "put"): ("url", "body"),
    ("Fs", "read"): ("path",),
    ("Fs", "write"): ("path", "content"),
    ("Fs", "exists"): ("path",),
    ("Fs", "list"): ("path",),
    ("Fs", "delete"): ("path",),
    ("Shell", "run"): ("cmd",),
    ("Database", "query"): ("sql",),
    ("Database", "execute"): ("sql",),
}

_MODULES = {"Http": "http", "Fs": "fs", "Shell": "shell", "Database": "database"}

# The variables (SAGE_FS_ROOT, SAGE_HTTP_TIMEOUT, …) of the session whose program makes the current call; the
# tool modules read them with `setting` while the call runs in this thread.
_OVERRIDES: ContextVar[Mapping[str, str]] = ContextVar("sagepy_tool_overrides")


# The resources of the run making the current call (its in-memory database), set like the variables.
_RESOURCES: ContextVar["ToolResources"] = ContextVar("sagepy_tool_resources")


class ToolResources:
    """What the built-in tools keep for one run between its calls (the `sqlite::memory:` database), each made
    by its tool module on first use. A run owns one (its World makes it) and closes it when it ends; runs of
    one process never share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, Any] = {}

    def keep(self, name: str, make: Callable[[], Any]) -> Any:
        """The resource `name` of this run, made by `make` the first time; it must have a `close()`."""
        with self._lock:
            kept = self._kept.get(name)
            if kept is None:
                kept = self._kept[name] = make()
            return kept

    def close(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.values()), {}
        for resource in kept:
            resource.close()


def run_resources() -> ToolResources:
    """The resources of the run making the current call."""
    return _RESOURCES.get()


def setting(name: str) -> str | None:
    """The value of SAGE_* variable `name` for the running call (None when unset or empty)."""
    return _OVERRIDES.get().get(name) or None


def tool_error(where: str, reason: str) -> SageRaise:
    """Build (not raise) the Tool error `<where>: <reason>`, where `where` is `Fs.read` or `Database`."""
    return SageRaise(ErrorValue("Tool", f"{where}: {reason}"))


def env_seconds(name: str, where: str) -> float | None:
    """A positive, finite number of seconds from variable `name` (`setting`); None when unset or empty."""
    text = (setting(name) or "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise tool_error(where, f"invalid {name} '{text}' (expected a positive number of seconds)")
    return seconds


# The built-in tools' time limit: SPEC §7 and §12 name one variable for it, SAGE_HTTP_TIMEOUT. It bounds
# Http requests, Database statements and Fs reads (Shell has its own, SAGE_SHELL_TIMEOUT, off by default).
TIME_LIMIT_VARIABLE = "SAGE_HTTP_TIMEOUT"
DEFAULT_TIME_LIMIT = 30.0


def time_limit(where: str) -> float:
    """The built-in tools' time limit in seconds for the running call (`setting`)."""
    return env_seconds(TIME_LIMIT_VARIABLE, where) or DEFAULT_TIME_LIMIT


def timed_out(where: str, seconds: float) -> SageRaise:
    """Build the Tool error of a call that ran past the time limit; it names the limit and its variable."""
    return tool_error(where, f"timed out after {seconds_text(seconds)} s (limit {TIME_LIMIT_VARIABLE})")


def seconds_text(seconds: float) -> str:
    """`30` for whole seconds, `0.5` otherwise, as in `timed out after 30 s`."""
    return str(int(seconds)) if seconds == int(seconds) else str(seconds)


def call_builtin_tool(tool: str, fn: str, args: list, *, cancel: threading.Event | None = None,
                      overrides: Mapping[str, str] | None = None, resources: ToolResources | None = None) -> Any:
    """Run `tool.fn(*args)` and return its result as wire data: the JSON (§5) of the declared return type's
    value (`null` for Unit, an object for a record); the effects boundary turns it into the Sage value.

    `overrides` are the session's variables; without them (a call from outside a session) the environment
    is read as it is now. `resources` are the calling run's (its in-memory database); without them the call
    has resources of its own, closed when it returns.

    Raises a Tool error on failure, and `AgentCancelled` when `cancel` is already set or becomes set while
    a long call (a Shell command, an HTTP request, a database statement) is running.
    """
    where = f"{tool}.{fn}"
    if tool not in _MODULES:
        raise tool_error(where, f"unknown built-in tool '{tool}'")
    params = _PARAMS.get((tool, fn))
    if params is None:
        known = ", ".join(name for owner, name in _PARAMS if owner == tool)
        raise tool_error(where, f"{tool} has no function '{fn}' (it has {known})")
    if len(args) != len(params):
        plural = "" if len(params) == 1 else "s"
        raise tool_error(where, f"expected {len(params)} argument{plural}, got {len(args)}")
    for name, value in zip(params, args):
        if not isinstance(value, str):
            raise tool_error(where, f"argument '{name}' must be a String")
    if cancel is not None and cancel.is_set():
        raise AgentCancelled()
    module = importlib.import_module(f"{__name__}.{_MODULES[tool]}")
    own = resources is None
    if own:
        resources = ToolResources()
    token = _OVERRIDES.set(overrides if overrides is not None else os.environ)
    held = _RESOURCES.set(resources)
    try:
        return module.FUNCTIONS[fn](*args, cancel=cancel)
    finally:
        _RESOURCES.reset(held)
        _OVERRIDES.reset(token)
        if own:
            resources.close()
