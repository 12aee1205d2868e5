"""What a run ends with (SPEC §20): `RunOutcome`, and the words a command says of it."""
from __future__ import annotations

from typing import Any

COMPLETED, FAILED, HALTED, PAUSED, CANCELLED = "completed", "failed", "halted", "paused", "cancelled"


class RunOutcome:
    """How one run ended. `status`: completed, failed, halted, paused or cancelled; `exit_code`: what
    `sage run` exits with; `value`: the entry agent's yielded value as JSON (SPEC §5), None when it yielded
    nothing or failed; `error`: the uncaught error's display, or None; `run_id`: the durable run's id;
    `usage`: the model usage of the run (SPEC §23)."""

    __slots__ = ("status", "exit_code", "_result", "_value", "error", "run_id", "usage")

    def __init__(self, status: str, exit_code: int, result: Any = None, error: str | None = None,
                 run_id: str | None = None, usage: dict | None = None) -> None:
        self.status = status
        self.exit_code = exit_code
        self._result = result   # the Sage value yielded; its JSON is made when first asked for
        self._value: Any = _UNMADE
        self.error = error
        self.run_id = run_id
        self.usage = usage if usage is not None else {}

    @property
    def value(self) -> Any:
        if self._value is _UNMADE:
            self._value = _json_of(self._result)
        return self._value

    def __repr__(self) -> str:
        return (f"RunOutcome(status={self.status!r}, exit_code={self.exit_code}, value={self.value!r}, "
                f"error={self.error!r}, run_id={self.run_id!r})")


_UNMADE = object()


def _json_of(result: Any) -> Any:
    from ..core.convert import ConversionError, to_json
    from ..core.values import UNIT
    if result is None or result is UNIT:
        return None
    try:
        return to_json(result)
    except ConversionError:   # a value with no JSON form (an agent handle, a function)
        return None


def status_of(ending: str, code: int) -> str:
    """The status of a run that ended as the runtime says (`stopped`: told to stop, or a divergence)."""
    if ending in (COMPLETED, FAILED, HALTED, PAUSED, CANCELLED):
        return ending
    return CANCELLED if code in (130, 143) else FAILED
