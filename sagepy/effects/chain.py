"""The chain of effect layers (DESIGN.md "The effects boundary"), composed once per run.

A layer is any object with `perform(step, next)`: it answers the step itself, or passes it on with
`next(step)` and may look at (or replace) what comes back. The last layer performs the step for real.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from .step import Step

Perform = Callable[[Step], Any]


class Layer(Protocol):
    def perform(self, step: Step, next: Perform) -> Any: ...


def compose(layers: Sequence[Layer]) -> Perform:
    """One callable that passes a step through `layers` in order."""
    def unanswered(step: Step) -> Any:
        raise RuntimeError(f"no layer performed {step!r}")

    perform: Perform = unanswered
    for layer in reversed(layers):
        perform = _link(layer, perform)
    return perform


def _link(layer: Layer, next: Perform) -> Perform:
    method = layer.perform
    return lambda step: method(step, next)
