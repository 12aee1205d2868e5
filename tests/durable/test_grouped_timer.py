"""The grouped commits' timer (SPEC §14), in this process on both backends: when it wakes, it commits what the
groups of every run pending on a store hold in ONE transaction (`record_steps_of`), each run fenced by its own
lease — a run taken over meanwhile gets nothing written and learns it at its next record — and the output
lines a run keeps in its group go with its outcomes."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from sagepy.effects import grouping
from sagepy.effects.grouping import OutcomeGroups
from sagepy.store import base
from sagepy.store.leases import lease_is_stale
from sagepy.store.sqlite import SqliteStore

RUNS = 20


def open_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path):
    if kind == "sqlite":
        return SqliteStore(str(tmp_path / "state.db"))
    from sagepy.store.postgres import PostgresStore
    return PostgresStore(request.getfixturevalue("pg_url"), "demo")


def record(number: int) -> base.StepRecord:
    return base.StepRecord("Main", number, "llm", "divine", "ab" * 32, "read_only", base.DONE, f"answer {number}")


def leased(store, names: list[str]) -> None:
    for name in names:
        store.create_run(base.RunRecord(name, 1.0, base.RUNNING, None, "src/main.sg"))
        assert store.acquire_lease(name, os.getpid(), socket.gethostname(), f"token-{name}", lease_is_stale) is None


def wait_until(done, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (found := done()):
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)
    return found


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path):
    """The store the groups commit to, and another connection that reads what was committed."""
    made = open_store(request.param, request, tmp_path)
    reader = open_store(request.param, request, tmp_path)
    yield made, reader
    made.close()
    reader.close()


def test_one_transaction_commits_the_groups_of_every_run(stores, monkeypatch: pytest.MonkeyPatch) -> None:
    made, reader = stores
    names = [f"r{i:02}" for i in range(RUNS)]
    leased(made, names)
    commits: list[set[str]] = []
    real = made.record_steps_of

    def counted(pending):
        commits.append(set(pending))
        return real(pending)
    monkeypatch.setattr(made, "record_steps_of", counted)
    groups = [OutcomeGroups(made, name) for name in names]
    with grouping._timer._wake:   # the timer cannot look at its groups before all of them are pending
        for group in groups:
            group.add(record(1))
            group.add_line("stdout", f"line of {group.run_id}")
    wait_until(lambda: all(reader.steps(name) and reader.output(name) for name in names), "every run's commit")
    assert commits == [set(names)]
    assert reader.output("r07") == [(1, "stdout", "line of r07")]


def test_a_run_taken_over_gets_nothing_written_and_learns_it(stores) -> None:
    made, reader = stores
    leased(made, ["kept", "taken"])
    assert reader.acquire_lease("taken", 4242, "elsewhere", "theirs", lambda owner: True) is None
    kept, taken = OutcomeGroups(made, "kept"), OutcomeGroups(made, "taken")
    with grouping._timer._wake:
        for group in (kept, taken):
            group.add(record(1))
            group.add_line("stdout", "printed")
    wait_until(lambda: reader.steps("kept"), "the other run's commit")

    def told() -> base.TakenOver | None:
        try:
            taken.add(record(2))
        except base.TakenOver as exc:
            return exc
        return None
    lost = wait_until(told, "the taken run to learn it")
    assert (lost.pid, lost.host) == (4242, "elsewhere")
    assert not taken.add_line("stdout", "after")   # its group takes no more lines: the caller's write is fenced
    assert reader.steps("taken") == [] and reader.output("taken") == []
    assert reader.output("kept") == [(1, "stdout", "printed")]


def test_the_last_writes_of_a_run_are_handed_to_its_end_and_its_group_takes_no_more(stores) -> None:
    made, reader = stores
    leased(made, ["r1"])
    group = OutcomeGroups(made, "r1")
    group.add(record(1))
    group.add_line("stdout", "last")
    last = group.take_last()
    assert [r.number for r in last.steps] == [1] and last.output == [("stdout", "last")]
    assert not group.add_line("stdout", "late")   # closed: a line printed now is stored on its own
    made.end_run("r1", base.COMPLETED, 0, last)
    assert [r.number for r in reader.steps("r1")] == [1] and reader.output("r1") == [(1, "stdout", "last")]
