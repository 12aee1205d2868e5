"""Room for deep recursion. A program may nest 1,000 levels (SPEC §13.3) and call 5,000 Sage functions deep
(§4.3); the checker and the compiler walk the AST recursively and every Sage call is several Python frames,
so both run on threads with a large C stack and a recursion limit raised to match it. The main thread keeps
its small stack and does no deep recursion."""
from __future__ import annotations

import contextlib
import queue
import sys
import threading
import time
from typing import Callable, Iterator, TypeVar

THREAD_STACK_BYTES = 512 * 1024 * 1024
# ~1.3 KiB of C stack per Python frame on a THREAD_STACK_BYTES thread: room for CALL_DEPTH_LIMIT Sage calls
RECURSION_LIMIT = 400_000

R = TypeVar("R")


_holders_lock = threading.Lock()
_holders = 0
_previous_limit = 0


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Python's recursion limit is process-wide: it is raised while anything holds this (every large-stack
    thread while it runs, `sage run` while the program runs) and restored when the last holder lets go, so a
    thread with a small C stack (pytest's, after an in-process run) is not left with a limit it cannot bear
    (C code such as json, recursing under it, would overflow that stack)."""
    global _holders, _previous_limit
    with _holders_lock:
        if _holders == 0:
            _previous_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_previous_limit, RECURSION_LIMIT))
        _holders += 1
    try:
        yield
    finally:
        with _holders_lock:
            _holders -= 1
            if _holders == 0:
                sys.setrecursionlimit(_previous_limit)


_deep = threading.local()


def on_deep_stack() -> bool:
    """Whether this thread was started by `start_thread`, so that Sage code may run on it directly."""
    return getattr(_deep, "on", False)


def _call_in_large_chunk(target: Callable[[], None]) -> None:
    _deep.on = True
    with deep_recursion():
        target()


# CPython 3.11 keeps Python frames in 16 KiB "data stack" chunks and unmaps a chunk as soon as the recursion
# returns below it, so a recursive Sage function that oscillates around a chunk boundary pays an mmap and a
# munmap per call (measured: fib(25) 3x slower, mostly system time). Calling the agent's code from a frame
# that declares a huge value stack makes CPython allocate one large chunk for it; the frames the agent pushes
# afterwards live in the unused rest of that chunk. The declared stack is never touched, so it costs address
# space only.
_call_in_large_chunk.__code__ = _call_in_large_chunk.__code__.replace(co_stacksize=300_000)


def start_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """Start a daemon thread with a stack large enough for deep Sage recursion.

    Python threads are detached: a thread that `join` saw finish may still hold its stack for a moment, so
    under an address-space limit (`ulimit -v`) the next large stack can fail to map although the memory is
    about to be free. Such a start is retried for up to a second before the failure is passed on."""
    for _ in range(_START_RETRIES):
        try:
            return _start(target, name)
        except RuntimeError:
            time.sleep(0.01)
    return _start(target, name)


_START_RETRIES = 100


def _start(target: Callable[[], None], name: str) -> threading.Thread:
    previous = threading.stack_size()
    try:
        threading.stack_size(THREAD_STACK_BYTES)
    except (ValueError, RuntimeError):
        pass
    try:
        t = threading.Thread(target=_call_in_large_chunk, args=(target,), name=name, daemon=True)
        t.start()
    finally:
        try:
            threading.stack_size(previous)
        except (ValueError, RuntimeError):
            pass
    return t


def call_on_deep_stack(fn: Callable[[], R], name: str) -> R:
    """`fn()` run on a large-stack thread; its result, or the exception it raised."""
    outcome: list = []

    def body() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller, which sees it as if fn ran in its own thread
            outcome.append((False, exc))

    start_thread(body, name).join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class DeepThreads:
    """Large-stack threads kept for the next task: a server that runs each call on one of its own (`sage
    serve`) starts a thread only when all of its threads are busy, and a thread idle for `idle_s` ends."""

    def __init__(self, idle_s: float = 30.0) -> None:
        self.idle_s = idle_s
        self._tasks: queue.SimpleQueue[tuple[Callable[[], None], str, Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0   # threads waiting for a task that no submitted task has counted on yet

    def submit(self, task: Callable[[], None], name: str, then: Callable[[], None]) -> None:
        """Run `task()` on one of the threads, named `name` while it runs, then `then()` once the thread is
        free for the next task (so a caller told by `then` that the task is done reuses the thread). Neither
        may raise."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._tasks.put((task, name, then))
        if start:
            start_thread(self._serve, name)

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                task, name, then = self._tasks.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:   # no task counts on this thread: it ends
                        self._idle -= 1
                        return
                task, name, then = self._tasks.get()   # a task was submitted for it just now
            me.name = name
            task()
            with self._lock:
                self._idle += 1
            then()
