"""Who owns a run (SPEC §14, "One owner at a time"): the one staleness rule that `sage run --resume` (taking a
lease over) and `sage runs` (showing `running` as `interrupted`) share.

A run being executed holds a lease: its process id, its host name, a random token and a heartbeat renewed
every second. The lease is fresh while the heartbeat is younger than 10 s and, when the lease is held on this
host, its process is still alive; otherwise it is stale and another process may take the run over. The age
of the heartbeat is the store's (`RunRecord.lease_age`: PostgreSQL's `now()` for a database that many
machines share), never this machine's clock against another's.
"""
from __future__ import annotations

import os
import socket
import time

from .base import INTERRUPTED, RUNNING, RunRecord

HEARTBEAT_SECONDS = 1.0
FRESH_SECONDS = 10.0


def this_host() -> str:
    return socket.gethostname()


def lease_is_stale(run: RunRecord, now: float | None = None, host: str | None = None) -> bool:
    """Whether `run`'s lease may be taken over: no lease at all, a heartbeat 10 s old or older, or a holder on
    this host whose process has ended. The age is the store's `lease_age`; `now` (default: the clock) is
    for a record without one. `host` defaults to this machine's name."""
    if run.lease_pid is None or run.lease_heartbeat is None:
        return True
    age = run.lease_age if run.lease_age is not None else (time.time() if now is None else now) - run.lease_heartbeat
    if age >= FRESH_SECONDS:
        return True
    return run.lease_host == (host or this_host()) and not process_alive(run.lease_pid)


def lease_is_claimable(run: RunRecord, host: str | None = None) -> bool:
    """Whether a worker may claim `run` (SPEC §14.2): its lease is stale, and, when it was released by a
    process of this host, that process has exited. A process that released its lease (it ended, halted,
    stopped) still closes what it opened and exits; a run queued again meanwhile (`sage runs resolve`) waits
    for it, so that no run is ever executed by two processes at once."""
    if not lease_is_stale(run, host=host):
        return False
    released = run.lease_heartbeat is None and run.lease_pid is not None
    return not (released and run.lease_host == (host or this_host()) and process_alive(run.lease_pid))


def shown_status(run: RunRecord, now: float | None = None) -> str:
    """The status `sage runs` shows: a `running` run whose lease is stale was interrupted (killed, crashed, or
    its machine went down) and waits for `sage run --resume`."""
    if run.status == RUNNING and lease_is_stale(run, now):
        return INTERRUPTED
    return run.status


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host and has not ended (a zombie, killed but not yet reaped by its
    parent, counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # it exists, under another user
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # the state follows the parenthesised command name, which may itself hold spaces or parentheses
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):   # no /proc (macOS): os.kill's answer stands
        return True
