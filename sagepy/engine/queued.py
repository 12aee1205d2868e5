"""A worker's runs in the worker's own process (SPEC §14.2, `sage worker --isolation thread`): the program is
compiled once, and each claimed run is a `Program.run` of it on a large-stack thread of its own (the engine
runs the entry agent right there), with a Host that stores the run's output with the run and stops the run
when the worker is told to stop.

The runs share the compiled program, one connection to the store (a second one, apart from the worker's own,
so that the worker's bookkeeping never waits for its runs' writes), one heartbeat for all their leases and the
model client's connection pool; each has its own agents, journal and output. A run takes its worker's claim
over as it is: its connection fences the run's writes with the claim's token, and the run reads nothing the
claim read. A run that fails with an internal error ends that run alone.
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..deepstack import start_thread
from ..store.leases import this_host
from ..workers.child import WorkerClaim
from ..workers.worker import Execution
from .host import Host
from .outcome import COMPLETED

if TYPE_CHECKING:
    from ..store.queue import Claim
    from .program import Program


@dataclass
class ThreadExecution(Execution):
    host: Host = field(default_factory=Host)
    code: int | None = None

    @property
    def returncode(self) -> int | None:
        return self.code

    def signal(self, signum: int) -> None:
        # a thread cannot be killed: a forced stop ends the worker's process (Worker._kill)
        self.host.stop(130 if signum == signal.SIGINT else 143)


class StoredOutput:
    """One of a run's output streams, stored line by line with the run (`sage runs logs`) as it is printed:
    with the journal's pending outcomes while the run's journal takes lines (one transaction for both), else
    on its own."""

    def __init__(self, host: Host, store: Any, run_id: str, name: str) -> None:
        self.host = host
        self.store = store
        self.run_id = run_id
        self.name = name

    def __call__(self, text: str) -> None:
        effects = self.host.effects
        journal = effects.journal if effects is not None else None
        for line in text.split("\n"):
            if journal is not None and journal.output(self.name, line):
                continue
            try:
                self.store.append_output(self.run_id, self.name, line)
            except Exception:  # the store failed this once: the run's next journal write reports it
                pass


class ThreadLauncher:
    """Starts each claimed run as a thread of this process. `backend`: the runs' own connection to the store
    (a `sagepy.runtime.persistence.StateStore`'s backend)."""
    in_process = True

    def __init__(self, program: Program, backend: Any, version: str) -> None:
        from ..runtime.durable import LeaseKeeper
        self.program = program
        self.backend = backend
        self.version = version
        self.leases = LeaseKeeper(backend)   # one heartbeat a second for all the runs

    def __call__(self, claim: Claim, ended: Callable[[Execution], None]) -> Execution:
        from ..runtime.persistence import StateStore
        backend = self.backend
        run_id = claim.run.id
        host = Host(store=StateStore(backend), durable=True)
        host.out = StoredOutput(host, backend, run_id, "stdout")
        host.err = StoredOutput(host, backend, run_id, "stderr")
        execution = ThreadExecution(run_id, claim.info.version, was_queued=not claim.resumed, host=host)
        host.claim = WorkerClaim(os.getpid(), self.version, not claim.resumed, held=claim,
                                 taken=execution.run_holds_lease)
        host.leases = self.leases

        def run() -> None:
            status = None
            try:
                outcome = self.program.run(host=host, run_id=run_id, resume=True)
                execution.code, status = outcome.exit_code, outcome.status
            except BaseException as exc:  # a bug of sagepy's in this run ends this run, not the worker
                execution.code = 1
                host.err(f"internal error: {type(exc).__name__}: {exc}")
            finally:
                # the run is over in this process: a lease it released no longer waits for the process to
                # exit (it never will), so a run sent back to the queue can be claimed again, here or elsewhere
                # (a completed run is never claimed again)
                if status != COMPLETED:
                    try:
                        backend.forget_owner(run_id, os.getpid(), this_host())
                    except Exception as exc:  # the store's failure leaves the run to a restart of the worker
                        host.err(f"warning: could not record the end of run {run_id}: {exc}")
                ended(execution)
        start_thread(run, f"sage-run-{run_id}")
        return execution
