"""Crash injection for the crash-sweep tests (base.py's variables, read once per process).

Every committed journal write (a `record_step`, a field write that carries a step) is counted; the sweep
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


def before_commit() -> None:
    """Called right before a journal write's COMMIT, its statements executed."""
    injector = _get()
    if injector.before is None:
        return
    with injector.lock:
        injector.attempted += 1
        if injector.attempted == injector.before:
            os._exit(CRASH_EXIT_CODE)


def after_commit() -> None:
    """Called right after a journal write's COMMIT."""
    injector = _get()
    if injector.after is None and injector.count_file is None:
        return
    with injector.lock:
        injector.committed += 1
        if injector.count_file is not None:
            with open(injector.count_file, "a", encoding="utf-8") as out:
                out.write(f"{injector.committed}\n")
        if injector.committed == injector.after:
            os._exit(CRASH_EXIT_CODE)
