"""The execution log of the worker tests: `hold_run(name)` takes an exclusive lock on `<log dir>/<name>.lock`
for the rest of this process's life (the kernel releases it when the process dies, however it dies) and
appends `<pid> start` to `<name>.log`, or `<pid> OVERLAP` when another live process holds the lock: the run is
being executed by two processes at once."""
import fcntl
import os

_held = []


def hold_run(name):
    directory = os.environ["WORKER_EXEC_LOG"]
    lock = open(os.path.join(directory, name + ".lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        event = "start"
    except BlockingIOError:
        event = "OVERLAP"
    _held.append(lock)
    with open(os.path.join(directory, name + ".log"), "a") as log:
        log.write(f"{os.getpid()} {event}\n")
    return len(_held)
