"""Waiting for the model API's limits instead of failing on them (SPEC §23 "Limits").

`[llm] max_concurrent_requests` bounds the requests in flight in this process (every run of a worker in
thread mode shares it). `requests_per_minute` and `tokens_per_minute` are token buckets: each refills at
its limit per minute, continuously, and holds at most one second's worth (`max(1, limit / 60)`), so that
requests spread over the minute the way the providers' own limits want them, rather than arriving in a
burst. A request takes one request token and, for the token limit, its estimated input (its body's length
divided by four, at most a bucket's worth before it may go); once the answer reports its real counts the
difference is settled, so a bucket may go below zero and the next requests wait until it has refilled.

With a durable store the buckets live in it (sagepy.store.buckets: one row per bucket, changed by one
atomic read-modify-write, so every process and worker using the store shares them and no token is taken
twice); without one, in this process (the effects of the run choose, sagepy.effects.world). A request that must wait shows `waiting for the rate limit of
<model>` on a terminal (sagepy.progress) and then goes; waiting never fails a call.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..progress import waiting
from .usage import UsageSettings

REQUESTS = "requests"
TOKENS = "tokens"
LONGEST_SLEEP_S = 1.0
"""A waiting request asks the bucket again at least this often: other processes may have left it tokens."""

_registry_lock = threading.Lock()
_semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}


class Limiter:
    """The limits of one project's requests, as one run sees them. `buckets`: where the rate buckets are
    (an object with `take_from_bucket`, sagepy.store.buckets: the durable store's, or this process's)."""

    def __init__(self, project: str, settings: UsageSettings, buckets: Any) -> None:
        self.rpm = settings.requests_per_minute
        self.tpm = settings.tokens_per_minute
        self._buckets = buckets
        self._semaphore: threading.BoundedSemaphore | None = None
        if settings.max_concurrent:
            key = (project, settings.max_concurrent)
            with _registry_lock:
                self._semaphore = _semaphores.setdefault(key, threading.BoundedSemaphore(settings.max_concurrent))

    @contextmanager
    def in_flight(self, model: str) -> Iterator[None]:
        """Hold one of the process's `max_concurrent_requests` while the request (with its retries) runs."""
        semaphore = self._semaphore
        if semaphore is None:
            yield
            return
        if not semaphore.acquire(blocking=False):
            with waiting(f"waiting for the rate limit of {model}"):
                semaphore.acquire()
        try:
            yield
        finally:
            semaphore.release()

    def admit(self, model: str, estimate: int) -> None:
        """Before each HTTP request: wait until the buckets allow it, and take from them."""
        if self.rpm:
            self._take(model, REQUESTS, self.rpm, 1, 1)
        if self.tpm:
            self._take(model, TOKENS, self.tpm, min(estimate, capacity(self.tpm)), estimate)

    def settle(self, estimate: int, used: int | None) -> None:
        """After an answer: the tokens it really used, against what `admit` took for it."""
        if self.tpm and used is not None and used != estimate:
            self._bucket(TOKENS, self.tpm, float("-inf"), used - estimate)

    def _take(self, model: str, name: str, per_minute: float, need: float, take: float) -> None:
        wait = self._bucket(name, per_minute, need, take)
        if wait <= 0:
            return
        with waiting(f"waiting for the rate limit of {model}"):
            while wait > 0:
                time.sleep(min(wait, LONGEST_SLEEP_S))
                wait = self._bucket(name, per_minute, need, take)

    def _bucket(self, name: str, per_minute: float, need: float, take: float) -> float:
        return self._buckets.take_from_bucket(name, per_minute / 60, capacity(per_minute), need, take)


def capacity(per_minute: float) -> float:
    """A bucket holds one second's worth of its limit, at least one token."""
    return max(1.0, per_minute / 60)
