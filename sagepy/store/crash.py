"""Crash injection for the crash-sweep tests (base.py's variables, read once per process).

Every journal record committed (a `record_step`, a field write that carries a step, each record of a grouped
commit) is counted, so that a program makes the same number of writes however its outcomes were grouped;
a crash "at" a record of a group happens before or after the commit of the whole group. The sweep
first counts a program's writes with SAGE_COUNT_WRITES, then kills the process at each of them in turn
(`os._exit`, so nothing is flushed or cleaned up, as after a power cut) and resumes.
"""
from __future__ import annotations

import os
import threading

from .base import COUNT_WRITES_VAR, CRASH_AFTER_VAR, CRASH_BEFORE_VAR, CRASH_EXIT_CODE


def _number(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


class _Injector:
    def __init__(self) -> None:
        self.after = _number(CRASH_AFTER_VAR)
        self.before = _number(CRASH_BEFORE_VAR)
        self.count_file = os.environ.get(COUNT_WRITES_VAR) or None
        self.lock = threading.Lock()
        self.attempted = 0
        self.committed = 0


_injector: _Injector | None = None
_made = threading.Lock()


def _get() -> _Injector:
    global _injector
    if _injector is None:
        with _made:
            if _injector is None:
                _injector = _Injector()
    return _injector


def active() -> bool:
    """Whether a hook is set: only then must each journal write be its own explicit transaction."""
    injector = _get()
    return injector.before is not None or injector.after is not None or injector.count_file is not None


def before_commit(records: int = 1) -> None:
    """Called right before the COMMIT of a transaction carrying `records` journal records."""
    injector = _get()
    if injector.before is None:
        return
    with injector.lock:
        first = injector.attempted + 1
        injector.attempted += records
        if first <= injector.before <= injector.attempted:
            os._exit(CRASH_EXIT_CODE)


def after_commit(records: int = 1) -> None:
    """Called right after the COMMIT of a transaction carrying `records` journal records."""
    injector = _get()
    if injector.after is None and injector.count_file is None:
        return
    with injector.lock:
        first = injector.committed + 1
        injector.committed += records
        if injector.count_file is not None:
            with open(injector.count_file, "a", encoding="utf-8") as out:
                out.write("".join(f"{n}\n" for n in range(first, injector.committed + 1)))
        if injector.after is not None and first <= injector.after <= injector.committed:
            os._exit(CRASH_EXIT_CODE)
