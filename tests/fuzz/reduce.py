"""A delta-debugging reducer (Zeller's ddmin, simplified): the smallest input it can find that still fails in
the same way, first by lines, then by tokens, then by characters, within a budget of attempts."""
from __future__ import annotations

import time
from typing import Callable

from .mutate import tokens


class Budget:
    """Attempts and seconds left: reducing an input whose every attempt kills a worker is slow."""

    def __init__(self, attempts: int, seconds: float) -> None:
        self.attempts = attempts
        self.deadline = time.monotonic() + seconds

    def take(self) -> bool:
        self.attempts -= 1
        return self.attempts >= 0 and time.monotonic() < self.deadline

    def left(self) -> bool:
        return self.attempts > 0 and time.monotonic() < self.deadline


def ddmin(parts: list[bytes], still_fails: Callable[[bytes], bool], budget: Budget) -> list[bytes]:
    """Remove chunks of `parts` (halves, then quarters, ...) while the joined rest still fails."""
    chunks = 2
    while len(parts) >= 2 and budget.left():
        size = max(1, len(parts) // chunks)
        removed = False
        start = 0
        while start < len(parts) and budget.take():
            candidate = parts[:start] + parts[start + size:]
            if candidate and still_fails(b"".join(candidate)):
                parts = candidate
                chunks = max(chunks - 1, 2)
                removed = True
            else:
                start += size
        if not removed:
            if size == 1:
                break
            chunks = min(len(parts), chunks * 2)
    return parts


def reduce_input(source: bytes, still_fails: Callable[[bytes], bool], attempts: int = 400,
                 seconds: float = 120.0) -> bytes:
    budget = Budget(attempts, seconds)
    lines = ddmin(source.splitlines(keepends=True), still_fails, budget)
    parts = ddmin(tokens(b"".join(lines)), still_fails, budget)
    if len(b"".join(parts)) <= 400:
        parts = ddmin([bytes([c]) for c in b"".join(parts)], still_fails, budget)
    return b"".join(parts)
