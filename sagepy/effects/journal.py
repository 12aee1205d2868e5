"""The journal of durable runs (SPEC §14): the seam where recording and replaying steps will happen.

Durable runs are not built yet (issue 14), so every step passes through. What goes here: for a step with a
`done`/`failed` record keyed by (run id, `step.path`, `step.number`), return or raise the recorded outcome
instead of calling `next`; otherwise commit `started` first when `step.safety` is `destructive`, call
`next(step)`, and commit the outcome (its JSON, §5, converted back through `step.ret` on replay) before
returning it. A step whose kind, target or argument hash differs from the record is a divergence.
"""
from __future__ import annotations

from typing import Any

from .chain import Perform
from .step import Step


class JournalLayer:
    def perform(self, step: Step, next: Perform) -> Any:
        return next(step)
