"""What a run's process does when a worker started it (SPEC §14.2).

The worker claims a run under its own lease and starts `sage run --resume RUN_ID` with SAGE_WORKER_PARENT set
to `<worker pid>:<worker's program version>:<queued|interrupted>`. That process then
- dies with the worker (the parent-death signal on Linux, else a watcher thread), so that a killed worker is
  like a crashed machine;
- may take the run's lease from its worker (any other fresh lease still refuses it);
- leaves the run for another worker when the program's files changed since the worker started (exit 75);
- stores what the program prints with the run (`sage runs logs`), each line before the run's next step.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

from ..store.base import RunRecord

if TYPE_CHECKING:
    from ..store.queue import Claim

WORKER_VAR = "SAGE_WORKER_PARENT"
LEFT_EXIT = 75          # the run was left for a worker of its version
_PR_SET_PDEATHSIG = 1


_READ: list["WorkerClaim | None"] = []   # the claim, once read: the variable is gone from the environment then


class WorkerClaim:
    """The claim a worker holds on a run it executes: the worker's pid and program version, whether the run was
    queued (else interrupted), and whether the run has a process of its own whose output is to be stored (a
    thread-mode worker's runs store theirs through their hosts).

    `held`: the claim as the worker's store made it (a queue.Claim), when the run executes in the worker's own
    process: the run takes its lease over as it is — its store fences with the claim's token, and the run
    reads nothing the claim read — instead of taking a lease of its own. `taken`: called once the run holds
    the lease and its own heartbeat renews it (the worker's heartbeats then leave it alone)."""

    def __init__(self, pid: int, version: str, was_queued: bool, capture: bool = False, held: Claim | None = None,
                 taken: Callable[[], None] | None = None) -> None:
        self.pid = pid
        self.version = version
        self.was_queued = was_queued
        self.capture = capture
        self.held = held
        self.taken = taken

    @classmethod
    def from_environment(cls) -> "WorkerClaim | None":
        """The claim this process runs under, None when no worker started it. Ties this process's life to the
        worker's; exits at once when the worker has already gone. Read once per process: every later call (the
        command's check before the run, the run itself) gets the same claim."""
        if _READ:
            return _READ[0]
        text = os.environ.pop(WORKER_VAR, "")   # not inherited by the program's own child processes
        pid, _, rest = text.partition(":")
        version, _, state = rest.partition(":")
        claim = cls(int(pid), version, state == "queued", capture=True) if pid.isdigit() else None
        _READ.append(claim)
        if claim is not None:
            claim._follow_parent()
        return claim

    def _follow_parent(self) -> None:
        if sys.platform.startswith("linux"):
            try:
                ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            except (OSError, AttributeError):
                self._watch_parent()
        else:
            self._watch_parent()
        if os.getppid() != self.pid:   # the worker died before the signal was set
            os._exit(1)

    def _watch_parent(self) -> None:
        def watch() -> None:
            while os.getppid() == self.pid:
                threading.Event().wait(0.5)
            os._exit(1)
        threading.Thread(target=watch, name="sage-worker-parent", daemon=True).start()

    def may_take(self, run: RunRecord, host: str) -> bool:
        """Whether `run`'s lease is the worker's claim, which this process takes over."""
        return run.lease_pid == self.pid and run.lease_host == host


class StoredLines:
    """A text stream that stores each complete line with the run and passes it on to `stream` (where the
    worker sends the process's own output). Partial lines wait for their end; `flush` stores nothing."""

    def __init__(self, store: Any, run_id: str, name: str, stream: Any) -> None:
        self._store = store
        self._run_id = run_id
        self._name = name
        self._stream = stream
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            lines = (self._pending + text).split("\n")
            self._pending = lines.pop()
            for line in lines:
                try:
                    self._store.append_output(self._run_id, self._name, line)
                except Exception:  # the store failed this once: the run's next journal write reports it
                    pass
        try:
            self._stream.write(text)
        except (OSError, ValueError):
            pass
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:   # encoding, fileno, … of the real stream
        return getattr(self._stream, name)


def capture_output(store: Any, run_id: str) -> None:
    """From now on what this process prints is stored with the run."""
    sys.stdout = StoredLines(store, run_id, "stdout", sys.stdout)
    sys.stderr = StoredLines(store, run_id, "stderr", sys.stderr)
