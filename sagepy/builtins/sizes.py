"""The largest String or List a builtin will build, so that an impossible size is a catchable Runtime error
(E206, SPEC §13.5) instead of Python's OverflowError or MemoryError escaping as an internal error.

The limit is on characters or elements, 2^30: far beyond what a program handles in memory, and low enough
that a request past it is refused before anything is allocated. A size below the limit that still does not
fit in memory ends the same way, through `building`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..core.errors import invalid_argument

MAX_SIZE = 1 << 30


def check_size(builtin: str, size: int, unit: str) -> None:
    """Refuse a result of `size` characters or elements (`unit`) beyond the limit."""
    if size > MAX_SIZE:
        raise invalid_argument(builtin, f"result too large ({size} {unit}, limit {MAX_SIZE})")


@contextmanager
def building(builtin: str) -> Iterator[None]:
    """Turn running out of memory while a builtin builds its result into a catchable error."""
    try:
        yield
    except MemoryError:
        raise invalid_argument(builtin, "result does not fit in memory") from None
