"""A pool of fuzz worker processes (tests/fuzz/worker.py) with a time budget per input.

A worker that exceeds the budget is killed and replaced: past the budget while checking, the input is `slow`
(checking must never take that long); while running, it is `timeout` (a Sage program may legitimately loop
forever). A worker that dies by itself is a `crash` (a signal such as SIGSEGV, or an exit nobody asked for);
its faulthandler output is kept as the detail.
"""
from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .worker import read_frame, write_frame

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class Job:
    key: int
    name: str
    source: bytes
    run: bool = True
    crash: bool = False  # for the harness's own test: the worker kills itself with SIGSEGV


@dataclass
class Result:
    job: Job
    outcome: str
    detail: str = ""
    check_s: float = 0.0
    run_s: float = 0.0
    phase: str = "check"
    extra: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.check_s + self.run_s


def worker_environment(home: str) -> dict[str, str]:
    """The environment of a worker: offline model, no tracing, no shell commands (PATH holds nothing), no
    caches or state outside the harness's temporary folder, and SAGE_DEBUG so that an internal error comes
    with its Python traceback."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAGE_")}
    empty_bin = os.path.join(home, "bin")
    os.makedirs(empty_bin, exist_ok=True)
    env.update({
        "SAGE_API_KEY": "mock", "SAGE_DEBUG": "1", "NO_COLOR": "1", "PATH": empty_bin, "HOME": home,
        "SAGE_CACHE_DIR": os.path.join(home, "cache"), "SAGE_FS_ROOT": os.path.join(home, "fsroot"),
        "SAGE_SHELL_TIMEOUT": "1", "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    })
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    return env


class _Worker:
    def __init__(self, home: str, number: int) -> None:
        self.workdir = os.path.join(home, f"w{number}")
        self.log_path = os.path.join(home, f"w{number}.log")
        request_read, self.request_fd = os.pipe()
        self.reply_fd, reply_write = os.pipe()
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.worker", str(request_read), str(reply_write), self.workdir],
            cwd=str(REPO_ROOT), env=worker_environment(home), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self._log, pass_fds=(request_read, reply_write))
        os.close(request_read)
        os.close(reply_write)
        self.job: Job | None = None
        self.phase = "check"
        self.deadline = 0.0
        self.started = 0.0

    def submit(self, job: Job, budget: float) -> None:
        self.job, self.phase = job, "check"
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self._log.seek(0)
        self._log.truncate()
        try:
            write_frame(self.request_fd, {"name": job.name, "source": job.source, "run": job.run,
                                         "crash": job.crash})
        except OSError:  # the worker is already gone: reading its reply reports the crash
            pass

    def log_tail(self) -> str:
        self._log.flush()
        try:
            return Path(self.log_path).read_bytes()[-3000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for fd in (self.request_fd, self.reply_fd):
            os.close(fd)
        self._log.close()


class Pool:
    """`pool.run(jobs)` yields one Result per job, in completion order."""

    def __init__(self, workers: int = 1, budget: float = 10.0) -> None:
        self.home = tempfile.mkdtemp(prefix="sage-fuzz-")
        self.size = max(1, workers)
        self.budget = budget
        self._workers: list[_Worker] = []
        self._spawned = 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._workers:
            worker.kill()
        self._workers = []
        shutil.rmtree(self.home, ignore_errors=True)

    def _spawn(self) -> _Worker:
        self._spawned += 1
        return _Worker(self.home, self._spawned)

    def run_one(self, job: Job) -> Result:
        return next(self.run(iter([job])))

    def run(self, jobs: Iterator[Job]) -> Iterator[Result]:
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())
        selector = selectors.DefaultSelector()
        busy: dict[int, _Worker] = {}
        pending = iter(jobs)
        exhausted = False

        def feed(worker: _Worker) -> bool:
            job = next(pending, None)
            if job is None:
                return False
            worker.submit(job, self.budget)
            busy[worker.reply_fd] = worker
            selector.register(worker.reply_fd, selectors.EVENT_READ, worker)
            return True

        for worker in self._workers:
            if not exhausted and not feed(worker):
                exhausted = True
        try:
            while busy:
                now = time.monotonic()
                timeout = max(0.0, min(w.deadline for w in busy.values()) - now)
                for key, _ in selector.select(timeout):
                    worker = key.data
                    result = self._receive(worker)
                    if result is None:
                        continue
                    selector.unregister(worker.reply_fd)
                    del busy[worker.reply_fd]
                    if result.outcome == "crash":
                        worker = self._replace(worker)
                    yield result
                    if not exhausted and not feed(worker):
                        exhausted = True
                now = time.monotonic()
                for fd, worker in list(busy.items()):
                    if now < worker.deadline:
                        continue
                    selector.unregister(worker.reply_fd)
                    del busy[fd]
                    job, phase, elapsed = worker.job, worker.phase, now - worker.started
                    worker = self._replace(worker)
                    outcome = "slow" if phase == "check" else "timeout"
                    yield Result(job, outcome, f"no result after {elapsed:.1f} s ({phase})",
                                 check_s=elapsed if phase == "check" else 0.0,
                                 run_s=elapsed if phase == "run" else 0.0, phase=phase)
                    if not exhausted and not feed(worker):
                        exhausted = True
        finally:
            for worker in busy.values():
                selector.unregister(worker.reply_fd)
                self._workers[self._workers.index(worker)] = self._replace(worker)
            selector.close()

    def _receive(self, worker: _Worker) -> Result | None:
        """The job's result, None after a phase message, or a crash if the worker died."""
        assert worker.job is not None
        try:
            message = read_frame(worker.reply_fd)
        except (EOFError, OSError):
            code = worker.proc.wait()
            why = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            return Result(worker.job, "crash", f"worker {why} ({worker.phase})\n{worker.log_tail()}",
                          phase=worker.phase)
        if set(message) == {"phase"}:
            worker.phase = message["phase"]
            return None
        return Result(worker.job, message["outcome"], message["detail"], message["check_s"], message["run_s"],
                      message["phase"])

    def _replace(self, worker: _Worker) -> _Worker:
        worker.kill()
        fresh = self._spawn()
        self._workers[self._workers.index(worker)] = fresh
        return fresh
