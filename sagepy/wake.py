"""An event that also wakes whoever waits for something else besides it.

A run's engine waits for its entry agent to finish, for the run to be told to stop (its Host's cancel
event) and for its journal to stop (a halt, a lost lease): three events. Polling them costs nothing for one
run, and a thread-mode worker of a thousand runs ten thousand wake-ups a second; instead, the cancel event
and the journal's are WakingEvents, and setting one also sets the event the engine waits on."""
from __future__ import annotations

import threading
from typing import Protocol


class Settable(Protocol):
    """What a WakingEvent sets besides itself: another event, or anything else that acts when set."""

    def set(self) -> None: ...


class WakingEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self._also: list[Settable] = []
        self._also_lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._also_lock:
            also = list(self._also)
        for event in also:
            event.set()

    def also_wake(self, event: Settable) -> None:
        """From now on, setting this event sets `event` too (at once, when this one is set already)."""
        with self._also_lock:
            self._also.append(event)
        if self.is_set():
            event.set()

    def forget(self, event: Settable) -> None:
        with self._also_lock:
            if event in self._also:
                self._also.remove(event)
