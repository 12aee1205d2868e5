"""Exceptions that carry Sage errors through the interpreter.

A raised Sage error travels as `SageRaise(error_value)`; `catch`, `on error` and `await` unwrap it.
Builtins raise through the helpers below so every runtime fault has its kind, message and code.
"""
from __future__ import annotations

from .types import INT_MAX, INT_MIN
from .values import ErrorValue


class SageRaise(Exception):
    """A Sage error in flight. `error.span` is filled in by the interpreter at the raising site."""

    __slots__ = ("error",)

    def __init__(self, error: ErrorValue) -> None:
        super().__init__(error.message)
        self.error = error


class AgentCancelled(BaseException):
    """Raised at a blocking point or loop iteration when an agent has been asked to stop.

    A BaseException so that neither `catch` nor `on error` can intercept it.
    """


class TestAbort(BaseException):
    """An assertion or mock-conversion failure inside a test: aborts the agent, uncatchable (§9.1)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def runtime_error(message: str, code: str | None = None) -> SageRaise:
    """Build (not raise) a Runtime error: `raise runtime_error("integer overflow", "E200")`."""
    return SageRaise(ErrorValue("Runtime", message, code))


def invalid_argument(builtin: str, reason: str) -> SageRaise:
    return SageRaise(ErrorValue("Runtime", f"invalid argument: {builtin}: {reason}", "E206"))


def agent_error(message: str, code: str | None = None) -> SageRaise:
    return SageRaise(ErrorValue("Agent", message, code))


def overflow() -> SageRaise:
    return SageRaise(ErrorValue("Runtime", "integer overflow", "E200"))


def check_int(v: int) -> int:
    """Return v if it fits a signed 64-bit integer, else raise E200."""
    if INT_MIN <= v <= INT_MAX:
        return v
    raise overflow()


def raise_at(kind: str, message: str, code: str | None, file: str, span: tuple) -> SageRaise:
    """Build (not raise) an error already located at `file`/`span`."""
    err = ErrorValue(kind, message, code)
    err.span = (file, span)
    return SageRaise(err)


class SageFail(Exception):
    """Raised by a `fails` extern function to signal a Sage `User` error with this message (users import it
    as `sagepy.SageFail`)."""
