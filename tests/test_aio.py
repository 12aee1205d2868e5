"""Who runs the shared event loop (sagepy/aio.py): a waiting caller drives it itself, concurrent callers
share it, abandoned calls are cancelled, and the background thread keeps it going when nobody waits."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from sagepy import aio as loop


class Stop(Exception):
    pass


async def _thread_of_loop(delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return threading.get_ident()


async def _hang(cancelled: threading.Event) -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled.set()
        raise


def _in_thread(target):
    box: list = []
    thread = threading.Thread(target=lambda: box.append(target()))
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    return box[0]


def test_a_lone_caller_runs_the_loop_in_its_own_thread():
    def call() -> tuple[int, int]:
        return threading.get_ident(), loop.run(_thread_of_loop(0.01))

    caller, ran_in = _in_thread(call)
    assert ran_in == caller
    assert not loop.in_loop_thread()


def test_exceptions_come_back_to_the_caller():
    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("from the loop")

    with pytest.raises(ValueError, match="from the loop"):
        loop.run(fail())


def test_concurrent_callers_all_get_their_own_results():
    results: dict[int, list[int]] = {}

    async def echo(n: int) -> int:
        await asyncio.sleep(0.001 * (n % 3))
        return n

    def caller(k: int) -> None:
        results[k] = [loop.run(echo(k * 100 + i)) for i in range(20)]

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert results == {k: [k * 100 + i for i in range(20)] for k in range(12)}


@pytest.mark.parametrize("waiters", [0, 3])
def test_a_checkpoint_that_raises_cancels_the_call(waiters):
    """The caller may be driving (no other waiter) or asleep behind another driver."""
    cancelled = threading.Event()
    release = threading.Event()


    async def wait_for_release() -> None:
        while not release.is_set():
            await asyncio.sleep(0.005)

    others = [threading.Thread(target=loop.run, args=(wait_for_release(),)) for _ in range(waiters)]
    for t in others:
        t.start()
    started = time.monotonic()

    def checkpoint() -> None:
        if time.monotonic() - started > 0.3:
            raise Stop

    with pytest.raises(Stop):
        loop.run(_hang(cancelled), checkpoint, poll_s=0.05)
    release.set()
    for t in others:
        t.join(30)
    assert not any(t.is_alive() for t in others)
    assert cancelled.wait(5)


def test_timeout_cancels_the_call():
    cancelled = threading.Event()


    with pytest.raises(TimeoutError):
        loop.run(_hang(cancelled), timeout_s=0.2)
    assert cancelled.wait(5)


def test_the_background_thread_runs_the_loop_when_no_caller_waits():
    ran = threading.Event()
    where: list[int] = []

    def callback() -> None:
        where.append(threading.get_ident())
        ran.set()

    loop.event_loop().call_soon_threadsafe(callback)
    assert ran.wait(5)
    assert where[0] != threading.get_ident()


def test_a_caller_takes_the_loop_over_from_the_background_thread():
    loop.run(asyncio.sleep(0))
    time.sleep(0.1)   # long enough for the background thread to pick the loop up
    assert loop.run(_thread_of_loop()) == threading.get_ident()


def test_a_coroutine_running_on_the_loop_sees_that_it_must_not_wait_for_the_loop():
    async def inside() -> bool:
        return loop.in_loop_thread()

    assert loop.run(inside()) is True


def test_many_callers_waiting_at_once_make_the_loop_crowded_until_few_are_left(monkeypatch) -> None:
    """The engine switches threads less often while the loop is crowded (thousands of agents calling one
    server collapse otherwise): the crowd hook is told when 50 callers wait at once, and again once they
    are done."""
    told: list[bool] = []
    monkeypatch.setattr(loop, "_on_crowd", None)
    monkeypatch.setattr(loop, "_crowded", False)
    loop.watch_crowd(told.append)
    loop.watch_crowd(lambda crowded: told.append(not crowded))   # a later hook is ignored
    assert told == [False]
    release = threading.Event()

    async def until_released() -> None:
        while not release.is_set():
            await asyncio.sleep(0.01)

    callers = [threading.Thread(target=loop.run, args=(until_released(),)) for _ in range(60)]
    for caller in callers:
        caller.start()
    deadline = time.monotonic() + 60
    while told == [False] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert told == [False, True]
    release.set()
    for caller in callers:
        caller.join(60)
    assert not any(caller.is_alive() for caller in callers)
    assert told == [False, True, False]
