"""Progress on long waits: one status line on stderr while MCP servers connect or a model answers, and a line
for each retry (issue 16). Only `sage run`, `sage test` and `sage check --verify-tools` turn it on, and only
when stderr is a terminal: piped output is byte for byte what it would be without it.

Waits shorter than SHOW_AFTER_S draw nothing, so a quick answer does not flicker a line. Agents waiting at
once share the one line. A drawer thread owns the terminal's last line; anything else written to stdout
(when it is the same terminal) or stderr while the line is shown erases it first, through thin wrappers
installed on sys.stdout and sys.stderr, and the next tick draws it again under the new output, unless that
output left its line unfinished (a prompt, or a line written in pieces), which the line would overwrite.
rich is imported (by sagepy.render) only when a line is first drawn.
"""
from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

SHOW_AFTER_S = 0.5
"""A wait shorter than this draws nothing."""
TICK_S = 0.1

_lock = threading.RLock()
_wake = threading.Condition(_lock)
_waits: dict[int, tuple[str, float, bool]] = {}   # id -> (label, started, show elapsed seconds)
_ids = itertools.count()
_terminal: Any = None         # the real stderr, while progress is on
_line: Any = None             # sagepy.render.StatusLine, made when first drawn
_shown = False
_paused = 0
_mid_line = False             # the last write to the terminal left its line unfinished (a prompt): no drawing
_drawer: threading.Thread | None = None


def enable() -> None:
    """Turn progress on for this process when stderr is a terminal; nothing otherwise."""
    global _terminal
    stderr = sys.stderr
    if _terminal is not None or not _isatty(stderr):
        return
    _terminal = stderr
    atexit.register(_finish)
    sys.stderr = _Erasing(stderr)
    if _isatty(sys.stdout) and _same_terminal(sys.stdout, stderr):
        sys.stdout = _Erasing(sys.stdout)


@contextmanager
def waiting(label: str, elapsed: bool = False) -> Iterator[None]:
    """The status line shows `label` (with the seconds waited when `elapsed`) while the block runs, once it
    has run for SHOW_AFTER_S. Safe in any thread and in coroutines (it holds a lock for a moment only)."""
    if _terminal is None:
        yield
        return
    key = next(_ids)
    with _lock:
        _waits[key] = (label, time.monotonic(), elapsed)
        _start_drawer()
        _wake.notify()
    try:
        yield
    finally:
        with _lock:
            del _waits[key]
            if not _waits:
                _erase()


def report(key: int | None, label: str) -> int | None:
    """Show `label` on the status line at once, as a new entry (`key` None) or in place of entry `key`'s;
    returns the entry's key for the next report and for `done`. Nothing (None) when progress is off."""
    if _terminal is None:
        return None
    with _lock:
        if key is None or key not in _waits:
            key = next(_ids)
            started = time.monotonic() - SHOW_AFTER_S
        else:
            started = _waits[key][1]
        _waits[key] = (label, started, False)
        _start_drawer()
        _wake.notify()
    return key


def done(key: int | None) -> None:
    """Take entry `key` of `report` off the status line."""
    if key is None:
        return
    with _lock:
        if _waits.pop(key, None) is not None and not _waits:
            _erase()


def note(text: str) -> None:
    """A line of its own on stderr (above the status line), only when progress is on."""
    if _terminal is None:
        return
    with _lock:
        _erase()
        _terminal.write(text + "\n")
        _terminal.flush()


@contextmanager
def paused() -> Iterator[None]:
    """No status line while the block runs (a question asked on the terminal, say)."""
    global _paused
    with _lock:
        _paused += 1
        _erase()
    try:
        yield
    finally:
        with _lock:
            _paused -= 1


def status_text(now: float) -> str | None:
    """The line's text for the waits now under way, or None when none has lasted SHOW_AFTER_S. Waits with the
    same label (agents asking the same model) are shown once, with their number."""
    groups: dict[str, tuple[float, bool, int]] = {}
    for label, started, elapsed in _waits.values():
        if now - started < SHOW_AFTER_S:
            continue
        first, _, count = groups.get(label, (started, elapsed, 0))
        groups[label] = (min(first, started), elapsed, count + 1)
    if not groups:
        return None
    parts = []
    for label, (started, elapsed, count) in sorted(groups.items(), key=lambda item: item[1][0]):
        part = f"{label}…"
        if elapsed and now - started >= 1:
            part += f" {int(now - started)} s"
        if count > 1:
            part += f" ({count} agents)"
        parts.append(part)
    return " · ".join(parts)


# ---------------------------------------------------------------- drawing

def _start_drawer() -> None:
    global _drawer
    if _drawer is None:
        _drawer = threading.Thread(target=_draw_loop, name="sage-progress", daemon=True)
        _drawer.start()


def _draw_loop() -> None:
    global _line, _shown, _paused
    with _lock:
        while True:
            if not _waits:
                _wake.wait()
                continue
            text = None if _paused or _mid_line else status_text(time.monotonic())
            if text is None:
                _erase()
            else:
                try:
                    if _line is None:
                        _line = _make_line()
                        continue   # the waits may have changed meanwhile
                    _line.show(text, time.monotonic())
                    _shown = True
                except (OSError, ValueError):  # the terminal went away: stop drawing, quietly
                    _paused += 1
            _wake.wait(TICK_S)


def _make_line() -> Any:
    """Under _lock: the StatusLine, made with the lock released, since importing rich takes a while and
    writers (agents, the event loop's connections) must not wait for it."""
    _lock.release()
    try:
        from .render import StatusLine
        return StatusLine(_terminal)
    finally:
        _lock.acquire()


def _finish() -> None:
    """At exit (Ctrl-C included): the line is erased and stays so, leaving the shell's prompt a clean line."""
    global _paused
    with _lock:
        _paused += 1
        _erase()


def _erase() -> None:
    """Under _lock: remove the line if it is shown."""
    global _shown
    if _shown:
        _shown = False
        try:
            _line.clear()
        except (OSError, ValueError):
            pass


class _Erasing:
    """A text stream that erases the status line before each write, so output lands on a clean line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        global _mid_line
        with _lock:
            _erase()
            if text:
                _mid_line = not text.endswith("\n")
            return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:
        return False


def _same_terminal(a: Any, b: Any) -> bool:
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (OSError, ValueError, AttributeError):
        return False
