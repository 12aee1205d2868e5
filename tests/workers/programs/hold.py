"""The execution log of the worker tests: `hold_run(name)` takes an exclusive lock on `<log dir>/<name>.lock`
for as long as this execution of the run lasts, and appends `<pid> start` to `<name>.log`, or `<pid> OVERLAP`
when another execution holds the lock: the run is being executed twice at once.

An execution lasts as long as the agent thread that called `hold_run` (the run's entry agent): the lock is
let go when that thread has ended, or when the process dies, however it dies (the kernel releases it). A
thread-mode worker executes many runs in one process, and may execute the same run again later (after a
halt, or a recovery): a lock kept for the life of the process would report those as overlaps. A lock is an
open file description of its own, so two executions in one process exclude each other as well."""
import fcntl
import os
import threading

_held = []             # (the thread of the execution, its open lock file)
_guard = threading.Lock()
_reaper = None
REAP_INTERVAL_S = 0.01


def hold_run(name):
    directory = os.environ["WORKER_EXEC_LOG"]
    with _guard:
        _let_go_of_ended()
        lock = open(os.path.join(directory, name + ".lock"), "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            event = "start"
        except BlockingIOError:
            event = "OVERLAP"
        _held.append((threading.current_thread(), lock))
        _start_reaper()
    with open(os.path.join(directory, name + ".log"), "a") as log:
        log.write(f"{os.getpid()} {event}\n")
    return len(_held)


def _let_go_of_ended():
    for entry in [entry for entry in _held if not entry[0].is_alive()]:
        _held.remove(entry)
        entry[1].close()


def _start_reaper():
    global _reaper
    if _reaper is None:
        _reaper = threading.Thread(target=_reap, name="hold-run-reaper", daemon=True)
        _reaper.start()


def _reap():
    while True:
        threading.Event().wait(REAP_INTERVAL_S)
        with _guard:
            _let_go_of_ended()
