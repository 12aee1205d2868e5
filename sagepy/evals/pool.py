"""The workers that run an eval's cases, up to `--concurrency` at once (SPEC §22.1).

A worker is a large-stack thread (sagepy.deepstack: a case's block may recurse as deep as a program) that
takes the next case of the dataset (the row read and converted there, under the dataset's lock) and runs it
in its own thread, then takes another: nothing passes between threads for a case. The command's thread
starts the workers and waits for them (Ctrl-C reaches it there). It starts one worker, and more while every
worker is busy with a case and the process leaves the processor mostly idle (its cases wait for a model, a
tool or a timer): their number doubles then, every `RAMP_S`, up to `--concurrency`. Cases that wait reach
the full concurrency within tens of milliseconds; cases that only compute (replayed ones) run on a worker or
a few (more on a busy machine, where the process waits for the processor and looks idle), which serve them
faster than dozens of threads taking turns at the interpreter lock would.

`RAMP_S` spans a few of the kernel's scheduler ticks: the process's CPU time counts a thread running on
another processor only at a tick (Linux adds a running thread's time at each tick, 4 ms at 250 Hz), so over a
millisecond a worker computing flat out can look idle, and a replay would be shared among threads for nothing.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

from ..deepstack import start_thread
from .cases import CaseResult, CaseRunner, EvalSpec

RAMP_S = 0.01
IDLE_SHARE = 0.5
STOP_GRACE_S = 2.0
"""After Ctrl-C, how long the running cases have to stop; one still running then is reported as stopped."""


class CasePool:
    """Runs the cases `source` yields ((row, repeat) pairs) with `runner`, each result given to `done` (in the
    worker's thread, under the pool's lock) until the pool is closed."""

    def __init__(self, spec: EvalSpec, runner: CaseRunner, source: Iterator[tuple[Any, int]], concurrency: int,
                 done: Callable[[CaseResult], None]) -> None:
        self.spec = spec
        self.runner = runner
        self.concurrency = concurrency
        self.done = done
        self._source = source
        self._reading = threading.Lock()            # held while a worker reads the next case
        self._state = threading.Condition()         # guards what follows
        self._running: dict[tuple[int, int], float] = {}   # (row, repeat) -> when it was taken
        self._alive = 0          # workers started and not finished
        self._busy = 0           # workers running a case
        self._exhausted = False  # no case is left to take (the dataset is read, or Ctrl-C came)
        self._closed = False     # the report is final: a late case is not added to it
        self.failure: BaseException | None = None   # what reading the dataset raised

    # ---------------------------------------------------------------- the command's thread
    def run(self) -> bool:
        """Run every case; True when Ctrl-C stopped them (the cases still running after STOP_GRACE_S are
        reported as stopped). Raises what reading the dataset raised."""
        interrupted = False
        try:
            self._spawn(1)
            self._supervise()
        except KeyboardInterrupt:
            interrupted = True
            with self._reading:
                self._exhausted = True
            self.runner.stop()
            deadline = time.monotonic() + STOP_GRACE_S
            while True:
                try:
                    self._wait(lambda: bool(self._running), deadline)
                    break
                except KeyboardInterrupt:   # a second Ctrl-C while the running cases stop
                    continue
        finally:
            with self._reading, self._state:
                self._exhausted = True
                for number, repeat in sorted(self._running):
                    result = CaseResult(number, repeat)
                    result.error = "stopped"
                    self.done(result)
                self._closed = True
        if self.failure is not None:
            raise self.failure
        return interrupted

    def _supervise(self) -> None:
        """Wait for the workers to finish, starting more while all of them are busy and the process's CPU
        time grew by less than IDLE_SHARE of the time that passed."""
        state = self._state
        wall, cpu = time.monotonic(), time.process_time()
        while True:
            with state:
                if self._alive == 0:
                    return
                more = 0
                if self._alive < self.concurrency and not self._exhausted:
                    state.wait(RAMP_S)
                    now, used = time.monotonic(), time.process_time()
                    if self._busy == self._alive and used - cpu < IDLE_SHARE * (now - wall):
                        more = min(self._alive, self.concurrency - self._alive)
                    wall, cpu = now, used
                else:
                    state.wait(0.1)
            if more:
                self._spawn(more)

    def _spawn(self, count: int) -> None:
        with self._state:
            self._alive += count
        for _ in range(count):
            try:
                start_thread(self._worker, f"eval {self.spec.name}")
            except RuntimeError:   # no thread to be had: the workers there are run the cases
                with self._state:
                    self._alive -= 1
                    self._state.notify_all()
                    none = self._alive == 0
                if none:
                    raise

    def _wait(self, busy: Callable[[], bool], deadline: float) -> None:
        with self._state:
            while busy():
                remaining = min(0.1, deadline - time.monotonic())
                if remaining <= 0:
                    return
                self._state.wait(remaining)

    # ---------------------------------------------------------------- a worker
    def _take(self) -> tuple[Any, int] | None:
        """The next case, counted as running; None when none is left."""
        with self._reading:
            if self._exhausted:
                return None
            try:
                case = next(self._source, None)
            except BaseException as exc:   # a dataset that fails midway (not UTF-8): the command's error
                case = None
                self.failure = exc
            if case is None:
                self._exhausted = True
                return None
        with self._state:
            self._running[(case[0].number, case[1])] = time.monotonic()
            self._busy += 1
        return case

    def _worker(self) -> None:
        try:
            while (case := self._take()) is not None:
                row, repeat = case
                try:
                    result = self.runner.run(self.spec, row, repeat)
                except BaseException as exc:   # a bug in sagepy fails the case, not the command
                    result = CaseResult(row.number, repeat)
                    result.error = f"internal error: {type(exc).__name__}: {exc}"
                with self._state:
                    if not self._closed:
                        self.done(result)
                    del self._running[(row.number, repeat)]
                    self._busy -= 1
        finally:
            with self._state:
                self._alive -= 1
                self._state.notify_all()
