"""The one event loop that runs all asynchronous I/O (DESIGN: concurrency model), and who runs it.

Agent threads are synchronous; they hand coroutines to this loop and wait for the answer (`run`): MCP
connections and calls, and the `Http` tool's requests. The loop is created on first use, so a program that
never touches MCP or Http never starts it.

Who runs the loop: a thread that waits for a result runs the loop itself when nobody else is running it
(it *drives* the loop), so a call costs no thread hand-off; this is what brings a sequential tool call down
to what the SDK alone costs. Threads that find the loop driven by someone else submit their coroutine (the
driver starts it before its next wait for I/O) and sleep until it finishes, or until the driver finishes
its own call and promotes the one waiting thread to driver. When no caller has driven the loop for
`_IDLE_S`, a background thread ("sage-io") drives it, so that connections started in the background, server
notifications and exits make progress while every agent is busy elsewhere; a lone caller that finds the
background thread driving asks it to stop and takes over. When several callers wait at once (hundreds of
agents calling one server), the background thread drives throughout: passing the loop from caller to caller
would cost every call a thread switch, and leave the loop undriven while the next driver waits for the GIL.
"""
from __future__ import annotations

import asyncio
import contextvars
import selectors
import threading
import time
from collections import deque
from typing import Any, Callable, Coroutine

_IDLE_S = 0.01   # how long the loop may go undriven before the background thread picks it up
_TICK_S = 0.05   # how often the loop checks whether a caller's drive should pause for its checkpoint
_POLL_SPREAD = 100   # waiting callers beyond this many look at their checkpoint proportionally less often

_lock = threading.Lock()     # guards every field below
_loop: asyncio.AbstractEventLoop | None = None
_background: threading.Thread | None = None
_driver: int | None = None   # ident of the thread running the loop now
_waiting: deque["_Call"] = deque()   # calls of threads that sleep while someone else drives
_released_at = 0.0           # when the loop was last left undriven
_slice_end = 0.0             # when the driving caller wants the loop back, to run its checkpoint
_background_wakeup = threading.Condition(_lock)
_background_parked = False   # the background thread sleeps until the loop is left undriven
# Calls submitted by threads that wait while another drives, started by the driver's next `_Selector.select`.
# Appended and popped without `_lock`: deque operations are atomic, and `_selecting` is re-checked after it
# is set, so a call appended just before the driver blocks is still seen.
_inbox: deque[tuple[Coroutine[Any, Any, Any], "_Call"]] = deque()
_selecting = False           # the driver is (or is about to be) blocked in select
_CROWD = 50      # callers waiting at once from which the loop is crowded ...
_UNCROWD = 10    # ... until no more than this many wait
_crowded = False
_on_crowd: Callable[[bool], None] | None = None   # told when the loop becomes crowded or no longer is


class _Call:
    """One coroutine run for one waiting thread, in that thread's context (so that what the caller's context
    holds, such as the current OpenTelemetry span, is what the coroutine sees whichever thread drives)."""

    __slots__ = ("thread", "context", "task", "done", "promoted", "signal", "outcome", "failed")

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.context = contextvars.copy_context()
        self.task: asyncio.Task | None = None
        self.done = False
        self.outcome: Any = None
        self.failed = False
        self.promoted = False
        # Held while the caller sleeps; released when the call finishes or the caller becomes the driver.
        # Only a caller that has to wait behind another driver needs one.
        self.signal: threading.Lock | None = None

    def sleep(self) -> None:
        self.signal = threading.Lock()
        self.signal.acquire()


class _Selector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector. Before each wait for I/O it starts the calls that threads submitted while
    another thread drove the loop (`_inbox`), and it tells submitters whether the loop needs waking: only
    while it may block here. A busy loop thus takes a submitted call without the self-pipe write, the extra
    callback and the extra loop iteration that `call_soon_threadsafe` costs per call."""

    def select(self, timeout: float | None = None) -> list:
        global _selecting
        if _inbox:
            _start_submitted()
            timeout = 0
        elif timeout is None or timeout > 0:
            _selecting = True
            if _inbox:    # submitted between the check above and the flag
                timeout = 0
        try:
            return super().select(timeout)
        finally:
            _selecting = False


def _start_submitted() -> None:
    loop = _loop
    while _inbox:
        coro, call = _inbox.popleft()
        _start(loop, coro, call)


def event_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, created (with its background driver) on first use."""
    global _loop, _background, _released_at
    if _loop is not None:
        return _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.SelectorEventLoop(_Selector())
            _released_at = time.monotonic()   # the caller that creates the loop is about to drive it
            _background = threading.Thread(target=_drive_in_background, name="sage-io", daemon=True)
            _background.start()
            _loop.call_soon_threadsafe(_tick, _loop)
        return _loop


def watch_crowd(hook: Callable[[bool], None]) -> None:
    """From now on `hook(crowded)` is told whether many callers wait for the loop at once: at once, and at
    each change (under this module's lock, so it must be quick). The first hook stays; later ones are ignored."""
    global _on_crowd
    with _lock:
        if _on_crowd is None:
            _on_crowd = hook
            hook(_crowded)


def _count_waiting() -> None:
    """With `_lock` held, after `_waiting` changed: tell the crowd hook when the loop became crowded or no
    longer is (with some slack between the two, so that a count going up and down by one does not flap)."""
    global _crowded
    crowded = len(_waiting) > _UNCROWD if _crowded else len(_waiting) >= _CROWD
    if crowded != _crowded:
        _crowded = crowded
        if _on_crowd is not None:
            _on_crowd(crowded)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The shared loop if it was ever created, without taking the lock (safe on a signal path)."""
    return _loop


def in_loop_thread() -> bool:
    """Whether this thread is running the loop right now (so it must not wait for the loop)."""
    return _driver == threading.get_ident()


def run(coro: Coroutine[Any, Any, Any], checkpoint: Callable[[], None] | None = None,
        poll_s: float = 0.1, timeout_s: float | None = None) -> Any:
    """Run `coro` on the shared loop and return its result (or raise its exception).

    `checkpoint`, when given, is called about every `poll_s` while waiting; whatever it raises cancels the
    coroutine's task and propagates. With `timeout_s`, TimeoutError is raised (and the task cancelled) when
    the coroutine has not finished by then."""
    global _driver, _slice_end
    loop = event_loop()
    call = _Call()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    with _lock:
        alone = not _waiting
        drive = _driver is None and alone
        if drive:
            _driver = call.thread
        else:
            call.sleep()
            _waiting.append(call)
            _count_waiting()
    try:
        if drive:
            _start(loop, coro, call)
        else:
            _inbox.append((coro, call))
            # A lone caller asks the background driver to stop before the coroutine is started: its first step
            # is then scheduled after the stop and runs on this thread once it takes over (in the other order a
            # preemption between the two requests let the background thread run it). While others wait too,
            # the background thread keeps the loop: handing it from caller to caller costs every call a
            # thread switch, and with hundreds of callers the loop would wait undriven for the next one.
            if alone and _driver == _background_ident():
                loop.call_soon_threadsafe(_yield_background, loop)
            if _selecting:   # the driver may be blocked waiting for I/O: wake it
                loop.call_soon_threadsafe(_start_submitted)
        while True:
            if drive:
                if not call.done:
                    _slice_end = time.monotonic() + _slice(poll_s, deadline)
                    loop.run_forever()   # until the call finishes, or `_tick` sees the slice end
            # hundreds of waiting callers each waking every `poll_s` would keep the loop from the GIL
            elif call.signal.acquire(timeout=_slice(poll_s * max(1.0, len(_waiting) / _POLL_SPREAD),  # type: ignore[union-attr]
                                                    deadline)):
                drive = call.promoted and not call.done
            if call.done:
                if call.failed:
                    raise call.outcome
                return call.outcome
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError
            if checkpoint is not None:
                checkpoint()
    except BaseException:
        _abandon(loop, call)
        raise
    finally:
        _hand_over(call.thread)   # also when promoted just as this caller gave up waiting


def _slice(poll_s: float, deadline: float | None) -> float:
    if deadline is None:
        return poll_s
    return max(min(poll_s, deadline - time.monotonic()), 0.0)


def _start(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], call: _Call) -> None:
    """Create the call's task (on the loop, or by its driver before it runs the loop)."""
    if call.done:   # abandoned before it started
        coro.close()
        return
    call.task = loop.create_task(_outcome(loop, coro, call), context=call.context)


async def _outcome(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], call: _Call) -> None:
    """Run the call's coroutine and hand its result or exception to the caller. Finishing inside the task
    (rather than in a done callback) saves the driver a loop iteration per call."""
    try:
        call.outcome = await coro
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the caller re-raises it in its own thread
        call.outcome = exc
        call.failed = True
    with _lock:
        if call.done:   # abandoned by its caller, who no longer waits
            return
        call.done = True
        if call.thread == _driver:
            loop.stop()
        else:
            try:
                _waiting.remove(call)
            except ValueError:
                pass
            _count_waiting()
            call.signal.release()


def _tick(loop: asyncio.AbstractEventLoop) -> None:
    """Every `_TICK_S` on the loop: end a caller's drive whose slice is over, so it can run its checkpoint."""
    if _driver != _background_ident() and time.monotonic() >= _slice_end:
        loop.stop()
    loop.call_later(_TICK_S, _tick, loop)


def _abandon(loop: asyncio.AbstractEventLoop, call: _Call) -> None:
    """The caller stops waiting (cancelled, timed out or interrupted): cancel its task, wherever it is."""
    with _lock:
        try:
            _waiting.remove(call)
        except ValueError:
            pass
        _count_waiting()
        call.done = True
        task = call.task
    if task is not None and not task.done():
        if _driver == call.thread:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)


def _hand_over(thread: int) -> None:
    """If `thread` drives the loop, leave the driver's seat: to the one thread still waiting for its call, if
    there is exactly one; else to the background thread (at once when several wait, after `_IDLE_S` when
    none does)."""
    global _driver, _released_at
    with _lock:
        if _driver != thread:
            return
        _driver = None
        if len(_waiting) == 1:
            call = _waiting.popleft()
            _count_waiting()
            if not call.done:
                _driver = call.thread
                call.promoted = True
                call.signal.release()
                return
        _released_at = time.monotonic()
        if _background_parked or _waiting:   # a sleeping background thread is woken once, not at every call
            _background_wakeup.notify()


def _background_ident() -> int | None:
    return _background.ident if _background is not None else None


def _yield_background(loop: asyncio.AbstractEventLoop) -> None:
    """Run on the loop: if the background thread is driving, stop so a waiting caller can take over."""
    if _driver == _background_ident():
        loop.stop()


def _drive_in_background() -> None:
    """The background driver: runs the loop whenever callers have left it undriven for `_IDLE_S`."""
    global _driver, _background_parked
    loop = event_loop()
    me = threading.get_ident()
    asyncio.set_event_loop(loop)
    while True:
        with _lock:
            # While callers drive, look again every `_IDLE_S` rather than asking every caller to wake this
            # thread when it lets go (a wake-up per call costs a GIL hand-off per call); sleep until woken
            # only when a look found the loop driven twice in a row.
            recheck = True
            while True:
                idle = time.monotonic() - _released_at
                free = _driver is None and not _waiting
                if free and idle >= _IDLE_S or _driver is None and len(_waiting) > 1:
                    break
                if free or recheck:
                    recheck = free
                    _background_wakeup.wait(_IDLE_S - idle if free else _IDLE_S)
                else:
                    _background_parked = True
                    _background_wakeup.wait()
                    _background_parked = False
                    recheck = True
            _driver = me
        try:
            loop.run_forever()
        finally:
            _hand_over(me)
