"""The large-stack threads `sage serve` runs its calls on (sagepy.deepstack.DeepThreads): a thread is reused
once its task is done, a busy one never gets a second task, and a thread idle for long enough ends."""
from __future__ import annotations

import threading

from sagepy.deepstack import DeepThreads, on_deep_stack

DEADLINE_S = 60.0


def run_one(pool: DeepThreads, task) -> None:
    done = threading.Event()
    pool.submit(task, "task", done.set)
    assert done.wait(DEADLINE_S)


def test_a_task_after_another_reuses_its_thread_and_has_a_large_stack() -> None:
    pool = DeepThreads()
    seen: list[tuple[threading.Thread, bool, str]] = []

    def task() -> None:
        me = threading.current_thread()
        seen.append((me, on_deep_stack(), me.name))

    run_one(pool, task)
    run_one(pool, task)
    assert seen[0][0] is seen[1][0]
    assert seen[0][1] and seen[0][2] == "task"


def test_tasks_at_once_each_get_a_thread_of_their_own() -> None:
    pool = DeepThreads()
    release = threading.Event()
    started = threading.Semaphore(0)
    threads: list[threading.Thread] = []
    done = threading.Semaphore(0)

    def task() -> None:
        threads.append(threading.current_thread())
        started.release()
        assert release.wait(DEADLINE_S)

    for _ in range(5):
        pool.submit(task, "task", done.release)
    for _ in range(5):
        assert started.acquire(timeout=DEADLINE_S)   # all five run at once: none waits for another's end
    release.set()
    for _ in range(5):
        assert done.acquire(timeout=DEADLINE_S)
    assert len(set(threads)) == 5


def test_an_idle_thread_ends() -> None:
    pool = DeepThreads(idle_s=0.05)
    threads: list[threading.Thread] = []
    run_one(pool, lambda: threads.append(threading.current_thread()))
    threads[0].join(DEADLINE_S)
    assert not threads[0].is_alive()
    run_one(pool, lambda: threads.append(threading.current_thread()))   # a new one takes the next task
    assert threads[1] is not threads[0]
