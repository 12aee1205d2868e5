"""`sage worker` (SPEC §14.2): claims the project's queued and interrupted runs and executes them, at most
`concurrency` at once: each in a child process of its own (`sage run --resume RUN_ID`, sagepy.workers.child),
or, with a launcher of the engine's (sagepy.engine.queued), each a run of the worker's own process.

A claim puts the run under the worker's own lease, which the worker keeps fresh until the child takes it over
(the child may take its worker's lease and no other; a run of the worker's own process takes the claim over as
it is). The child dies with the worker, so a killed worker leaves runs whose leases go stale — interrupted runs
that any worker then claims, counting a recovery. A graceful stop (SIGTERM, SIGINT) claims nothing more,
forwards SIGTERM to the children, which stop before their next step and release their leases, and exits 143 or
130; a second signal kills the children at once.

Runs are claimed up to `CLAIM_BATCH` in one transaction, and looked for again only when there may be some: a
free slot after a full batch, a run queued (PostgreSQL's NOTIFY), the poll interval past, or no run left.
"""
from __future__ import annotations

import collections
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..store.leases import HEARTBEAT_SECONDS, lease_is_claimable
from ..wake import WakingEvent
from .child import LEFT_EXIT, WORKER_VAR

if TYPE_CHECKING:
    from ..store.queue import Claim

STOP_GRACE_S = 9.0   # SPEC: a stopped worker exits within 10 s
# Runs claimed in one transaction at most: a worker with a thousand free slots makes about 30 claims, not a
# thousand, while each transaction stays short for the other workers
CLAIM_BATCH = 32


@dataclass
class WorkerOptions:
    path: str | None          # the PATH given to `sage worker`, passed on to each run's `sage run`
    queue: str = "default"
    concurrency: int = 1
    drain: bool = False
    any_version: bool = False
    poll_s: float = 1.0
    max_recoveries: int = 5


@dataclass
class Execution(ABC):
    """One claimed run being executed. `claimed`: the worker's lease still holds the run (its execution has not
    taken it over); `was_queued`: claimed from the queue, not as an interrupted run."""
    run_id: str
    version: str
    ended: threading.Event = field(default_factory=threading.Event)
    claimed: bool = True
    was_queued: bool = True

    @property
    @abstractmethod
    def returncode(self) -> int | None:
        """The exit code once ended, else None."""

    @abstractmethod
    def signal(self, signum: int) -> None:
        """SIGTERM: stop before the next step, releasing the lease; SIGKILL: at once."""

    def run_holds_lease(self) -> None:
        """The run took the lease over: its own heartbeat renews it from now on, not the worker's."""
        self.claimed = False


@dataclass
class ProcessExecution(Execution):
    process: subprocess.Popen | None = None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def signal(self, signum: int) -> None:
        try:
            self.process.send_signal(signum)
        except (ProcessLookupError, OSError):
            pass


class Launcher(Protocol):
    """Starts the execution of a claimed run; calls `ended(execution)` when it has ended. `in_process`: its
    runs are threads of the worker's process, which a forced stop ends with them."""
    in_process: bool

    def __call__(self, claim: Claim, ended: Callable[[Execution], None]) -> Execution: ...


class ProcessLauncher:
    """Each run in a child process of its own: `sage run [PATH] --resume RUN_ID`, which dies with the worker."""
    in_process = False

    def __init__(self, path: str | None, version: str) -> None:
        self.path = path
        self.version = version

    def __call__(self, claim: Claim, ended: Callable[[Execution], None]) -> Execution:
        run_id, resumed = claim.run.id, claim.resumed
        command = [sys.executable, "-m", "sagepy", "run"]
        if self.path is not None:
            command.append(self.path)
        command += ["--resume", run_id]
        env = dict(os.environ)
        # the child checks that the files are still those of this worker's version (with --any-version too)
        env[WORKER_VAR] = f"{os.getpid()}:{self.version}:{'interrupted' if resumed else 'queued'}"
        # a session of its own: a Ctrl-C at the worker's terminal reaches the worker, which stops its runs
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        execution = ProcessExecution(run_id, claim.info.version, was_queued=not resumed, process=process)

        def wait() -> None:
            process.wait()
            ended(execution)
        threading.Thread(target=wait, name=f"sage-run-{run_id}", daemon=True).start()
        return execution


class Worker:
    """`launch`: how a claimed run is executed (default: a child process each); `changed`: whether the program's
    files changed since the worker compiled them (a thread-mode worker then claims nothing more)."""

    def __init__(self, store: Any, version: str, options: WorkerOptions, launch: Launcher | None = None,
                 changed: Callable[[], bool] | None = None) -> None:
        self.store = store
        self.version = version
        self.options = options
        self.launch = launch if launch is not None else ProcessLauncher(options.path, version)
        self.changed = changed
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.children: dict[str, Execution] = {}
        self.ended: collections.deque[Execution] = collections.deque()   # ended, not yet reaped
        self.skip: set[str] = set()        # runs left for another version or stopped for a person to look at
        self.wake = threading.Event()      # a child ended, a signal came, or (PostgreSQL) a run was queued
        self.queued = WakingEvent()        # (PostgreSQL) a run became claimable
        self.queued.also_wake(self.wake)
        self.looked = -math.inf            # when a claim last found fewer runs than it could take
        self.signals: list[int] = []
        self.lock = threading.RLock()      # also taken by the signal handler, on the main thread

    # ---------------------------------------------------------------- the loop

    def run(self) -> int:
        options = self.options
        say(f"worker {self.host}:{self.pid} started (queue {options.queue}, version {self.version}, "
            f"concurrency {options.concurrency})")
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        beating = threading.Event()
        heart = threading.Thread(target=self._heartbeat, args=(beating,), name="sage-worker-lease", daemon=True)
        heart.start()
        listening = getattr(self.store, "listen_for_runs", None)
        if listening is not None:   # PostgreSQL: NOTIFY wakes the loop as soon as a run becomes claimable
            listening(self.queued)
        try:
            return self._loop()
        finally:
            beating.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _loop(self) -> int:
        options = self.options
        while True:
            self._reap()
            if self.signals:
                return self._stop()
            exhausted, outdated = True, False
            free = options.concurrency - len(self.children)
            if free > 0 and self._may_find_runs():
                outdated = self.changed is not None and self.changed()
                exhausted = outdated or self._claim(free)
            if outdated and not self.children:
                say("worker: program files changed; restart the worker")
                return 0
            if options.drain and exhausted and not self.children:
                say("worker: no runnable runs left")
                return 0
            self.wake.wait(options.poll_s)
            self.wake.clear()

    def _may_find_runs(self) -> bool:
        """Whether a claim may find a run now. A run that ends frees a slot but queues nothing: while some runs
        go on, the queue is looked at again only after a full batch, when a run was queued (NOTIFY) or once
        the poll interval has passed; with none left, at every turn of the loop."""
        return (not self.children or self.queued.is_set()
                or time.monotonic() - self.looked >= self.options.poll_s)

    def _claim(self, free: int) -> bool:
        """Claim and start runs for up to `free` slots, a batch at a time; True when no more could be claimed."""
        options = self.options
        while free > 0 and not self.signals:
            self.queued.clear()
            wanted = min(CLAIM_BATCH, free)
            claims = self.store.claim_runs(options.queue, None if options.any_version else self.version, self.pid,
                                           self.host, lease_is_claimable, self.skip, options.max_recoveries, wanted)
            for claim in claims:
                if claim.gave_up:
                    say(f"run {claim.run.id}: gave up after {claim.info.recoveries} recoveries")
                    continue
                self._start(claim)
                free -= 1
            if len(claims) < wanted:
                self.looked = time.monotonic()
                return True
            self.looked = -math.inf
        return False

    def _start(self, claim: Claim) -> None:
        run_id = claim.run.id
        with self.lock:   # registered before it can end: the signal handler sees every execution
            child = self.launch(claim, self._ended)
            self.children[run_id] = child
        # a queued run with a journal was queued again (`sage runs approve`, `resolve`): it carries on
        say(f"run {run_id}: {'resumed' if claim.resumed or claim.journaled else 'started'}")

    def _ended(self, child: Execution) -> None:
        child.ended.set()
        self.ended.append(child)
        self.wake.set()

    def _reap(self) -> None:
        with self.lock:
            ended = []
            while self.ended:
                child = self.ended.popleft()
                if self.children.get(child.run_id) is child:
                    del self.children[child.run_id]
                    ended.append(child)
        for child in ended:
            self._report(child)
            self.store.forget_claim(child.run_id)

    def _report(self, child: Execution) -> None:
        run_id, code = child.run_id, child.returncode
        if code == LEFT_EXIT:
            self.skip.add(run_id)
            say(f"run {run_id}: left for version {child.version}")
            return
        run = self.store.get_run(run_id)
        if run is None:
            return
        if run.status in ("completed", "failed"):
            say(f"run {run_id}: {run.status} (exit {run.exit_code})")
        elif run.status in ("halted", "paused", "cancelled"):
            say(f"run {run_id}: {run.status}")
        elif run.status == "queued" and code in (HALTED_EXIT, PAUSED_EXIT):
            # it halted or paused, and a person resolved or answered it before this report: queued again for a
            # worker (this one too), not a run that stopped on its own
            say(f"run {run_id}: {'paused' if code == PAUSED_EXIT else 'halted'}")
        elif self.signals:   # stopped by this worker's stop: another worker resumes it
            return
        elif child.claimed and run.lease_pid == self.pid and run.lease_host == self.host:   # never taken over
            # given back as it was claimed, without this worker as its last owner (a claim would wait for it)
            self.store.unclaim_run(run_id, child.was_queued)
            self.skip.add(run_id)
            say(f"run {run_id}: stopped (exit {code})")
        elif run.lease_heartbeat is None:   # it stopped on its own and stays resumable (a journal divergence)
            self.skip.add(run_id)
            say(f"run {run_id}: stopped (exit {code})")
        # else its process was killed alone: its lease goes stale and a worker recovers it

    def _heartbeat(self, stop: threading.Event) -> None:
        """Keep the worker's claims fresh until each child takes its run's lease over: one transaction a second
        for all of them."""
        while not stop.wait(HEARTBEAT_SECONDS):
            with self.lock:
                claimed = {child.run_id: child for child in self.children.values()
                           if child.claimed and not child.ended.is_set()}
            if not claimed:
                continue
            try:
                taken, _ = self.store.renew_leases(list(claimed))
            except Exception:  # busy this second: a claim stays fresh for 10 s
                continue
            for run_id in taken:   # the run's own process holds the lease now
                claimed[run_id].claimed = False

    # ---------------------------------------------------------------- stopping

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)
        if len(self.signals) > 1:
            self._kill()
        else:
            with self.lock:
                children = list(self.children.values())
            for child in children:
                child.signal(signal.SIGTERM)
        self.wake.set()

    def _kill(self) -> None:
        """Stop every run at once: their leases go stale. Runs of this process end with it."""
        if self.launch.in_process:
            os._exit(130 if self.signals[0] == signal.SIGINT else 143)
        with self.lock:
            children = list(self.children.values())
        for child in children:
            child.signal(signal.SIGKILL)

    def _stop(self) -> int:
        code = 130 if self.signals[0] == signal.SIGINT else 143
        deadline = time.monotonic() + STOP_GRACE_S
        while True:
            with self.lock:
                children = list(self.children.values())
            if not children:
                break
            if time.monotonic() >= deadline:
                self._kill()
                for child in children:
                    child.ended.wait(1.0)
                break
            self.wake.wait(0.1)
            self.wake.clear()
            self._reap()
        self._reap()
        return code


HALTED_EXIT, PAUSED_EXIT = 3, 5


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
