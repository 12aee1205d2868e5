"""Every method of sagepy.store.base.Store, on every backend: a SQLite file, a PostgreSQL database (a real
server, tests/pgcluster.py) and process memory."""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from sagepy.store import base
from sagepy.store.memory import MemoryStore
from sagepy.store.sqlite import SqliteStore


def make_store(kind: str, request, tmp_path: Path, project: str = "demo"):
    if kind == "sqlite":
        return SqliteStore(str(tmp_path / ".sage" / "state.db"))
    if kind == "postgres":
        from sagepy.store.postgres import PostgresStore
        return PostgresStore(request.getfixturevalue("pg_url"), project)
    return MemoryStore()


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request, tmp_path: Path):
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()


def run(run_id: str, started_at: float, status: str = base.RUNNING, **lease) -> base.RunRecord:
    return base.RunRecord(run_id, started_at, status, None, "src/main.sg", **lease)


def step(path: str, number: int, status: str = base.DONE, outcome=None, kind: str = "tool") -> base.StepRecord:
    return base.StepRecord(path, number, kind, "Http.get", "ab" * 32, "read_only", status, outcome)


def test_the_backends_say_what_they_are(store, tmp_path: Path) -> None:
    if isinstance(store, SqliteStore):
        assert (store.path, store.durable) == (str(tmp_path / ".sage" / "state.db"), True)
        assert store._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store._db.execute("PRAGMA synchronous").fetchone() == (2,)   # FULL: each COMMIT is on disk
    elif isinstance(store, MemoryStore):
        assert (store.path, store.durable) == (None, False)
    else:   # the URL as messages show it: the password masked
        assert store.durable and store.path.startswith("postgresql://sage:***@127.0.0.1:")
        assert "PgSecret" not in store.path


def test_a_field_holds_json_data(store) -> None:
    assert store.get_field("Main", "count") == (False, None)
    store.set_field("Main", "count", 3)
    store.set_field("Main", "stats", {"runs": 2, "names": ["a", "é"], "ok": True, "x": None, "f": 1.5})
    assert store.get_field("Main", "count") == (True, 3)
    assert store.get_field("Main", "stats") == (True, {"runs": 2, "names": ["a", "é"], "ok": True, "x": None,
                                                        "f": 1.5})
    assert store.get_field("Other", "count") == (False, None)
    store.set_field("Main", "count", None)
    assert store.get_field("Main", "count") == (True, None)


def test_a_value_read_is_a_copy(store) -> None:
    store.set_field("Main", "log", [1, 2])
    found, value = store.get_field("Main", "log")
    value.append(3)
    assert store.get_field("Main", "log") == (True, [1, 2])


def test_a_field_write_with_a_step_records_both(store) -> None:
    store.create_run(run("r1", 1.0))
    store.set_field("Main", "count", 5, step("Main", 1, kind="state", outcome=5), "r1")
    assert store.get_field("Main", "count") == (True, 5)
    assert [(s.path, s.number, s.kind, s.outcome) for s in store.steps("r1")] == [("Main", 1, "state", 5)]


def test_update_field_reads_the_stored_value_and_records_the_new_one(store) -> None:
    store.create_run(run("r1", 1.0))
    seen = []

    def add_one(stored):
        seen.append(stored)
        found, old = stored
        return (old if found else 10) + 1

    assert store.update_field("Main", "n", add_one) == 11
    assert store.update_field("Main", "n", add_one, step("Main", 1, kind="state"), "r1") == 12
    assert seen == [(False, None), (True, 11)]
    assert store.get_field("Main", "n") == (True, 12)
    assert [s.outcome for s in store.steps("r1")] == [12]   # the record holds the value written


def test_an_update_whose_function_raises_writes_nothing(store) -> None:
    store.create_run(run("r1", 1.0))
    store.set_field("Main", "n", 1)

    def fails(stored):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update_field("Main", "n", fails, step("Main", 1), "r1")
    assert store.get_field("Main", "n") == (True, 1)
    assert store.steps("r1") == []


def test_a_write_inside_an_update_joins_it(store) -> None:
    def also_set(stored):
        store.set_field("Main", "other", "x")
        return 1

    assert store.update_field("Main", "n", also_set) == 1
    assert store.get_field("Main", "other") == (True, "x")

    def set_then_fail(stored):
        store.set_field("Main", "other", "y")
        raise ValueError("no")

    with pytest.raises(ValueError):
        store.update_field("Main", "n", set_then_fail)
    if isinstance(store, SqliteStore):   # one transaction: the joined write is rolled back with it
        assert store.get_field("Main", "other") == (True, "x")


def test_concurrent_updates_from_threads_lose_nothing(store) -> None:
    def work():
        for _ in range(200):
            store.update_field("Main", "n", lambda stored: (stored[1] if stored[0] else 0) + 1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.get_field("Main", "n") == (True, 800)


def test_runs_are_listed_newest_first_and_ended(store) -> None:
    assert store.newest_run() is None and store.list_runs() == []
    store.create_run(run("20260101-000000-aaaa", 100.0))
    store.create_run(run("20260101-000002-cccc", 102.0, lease_pid=7, lease_host="h", lease_heartbeat=102.5))
    store.create_run(run("20260101-000001-bbbb", 101.0))
    assert [r.id for r in store.list_runs()] == ["20260101-000002-cccc", "20260101-000001-bbbb",
                                                 "20260101-000000-aaaa"]
    newest = store.newest_run()
    if not isinstance(store, (SqliteStore, MemoryStore)):   # PostgreSQL stamps a heartbeat with its own clock
        assert 0 <= newest.lease_age < 5
        newest.lease_heartbeat = 102.5
    assert newest == run("20260101-000002-cccc", 102.0, lease_pid=7, lease_host="h", lease_heartbeat=102.5)
    assert store.get_run("nope") is None
    store.end_run("20260101-000002-cccc", base.COMPLETED, 0)
    ended = store.get_run("20260101-000002-cccc")
    assert (ended.status, ended.exit_code, ended.lease_heartbeat, ended.lease_token) == (base.COMPLETED, 0, None, None)
    assert (ended.lease_pid, ended.lease_host) == (7, "h")   # the last owner


def test_steps_are_ordered_by_path_then_number_and_replaced_by_their_outcome(store) -> None:
    store.create_run(run("r1", 1.0))
    store.create_run(run("r2", 2.0))
    store.record_step("r1", step("Main/Worker#1", 1))
    store.record_step("r1", step("Main", 2, status=base.STARTED))
    store.record_step("r1", step("Main", 1, outcome={"a": [1, "x"]}))
    store.record_step("r2", step("Main", 1))
    store.record_step("r1", step("Main", 2, status=base.STEP_FAILED,
                                 outcome={"kind": "Tool", "message": "boom", "code": None}))
    records = store.steps("r1")
    assert [(s.path, s.number, s.status) for s in records] == [
        ("Main", 1, base.DONE), ("Main", 2, base.STEP_FAILED), ("Main/Worker#1", 1, base.DONE)]
    assert records[0] == step("Main", 1, outcome={"a": [1, "x"]})
    assert records[1].outcome == {"kind": "Tool", "message": "boom", "code": None}
    store.delete_step("r1", "Main", 2)
    assert [(s.path, s.number) for s in store.steps("r1")] == [("Main", 1), ("Main/Worker#1", 1)]
    assert len(store.steps("r2")) == 1 and store.steps("unknown") == []


def test_prune_keeps_the_newest_ended_runs_and_never_touches_unended_ones(store) -> None:
    statuses = [base.COMPLETED, base.FAILED, base.RUNNING, base.HALTED, base.COMPLETED, base.COMPLETED]
    for i, status in enumerate(statuses):
        store.create_run(run(f"r{i}", float(i), status))
        store.record_step(f"r{i}", step("Main", 1))
    assert store.prune_runs(1) == ["r4", "r1", "r0"]
    assert [r.id for r in store.list_runs()] == ["r5", "r3", "r2"]
    assert store.steps("r0") == [] and len(store.steps("r5")) == 1
    assert store.prune_runs(0) == ["r5"]
    assert [r.id for r in store.list_runs()] == ["r3", "r2"]


def test_a_lease_is_taken_when_free_or_stale_and_refused_when_fresh(store) -> None:
    store.create_run(run("r1", 1.0))
    never_stale = lambda owner: False  # noqa: E731
    assert store.acquire_lease("r1", 100, "host-a", "token-a", never_stale) is None
    owner = store.acquire_lease("r1", 200, "host-b", "token-b", never_stale)
    assert (owner.lease_pid, owner.lease_host, owner.lease_token) == (100, "host-a", "token-a")
    assert 0 <= owner.lease_age < 5   # on the store's clock: just taken
    beat = owner.lease_heartbeat
    store.heartbeat("r1")
    assert store.get_run("r1").lease_heartbeat >= beat
    seen = []

    def stale(owner):
        seen.append(replace(owner))
        return True

    assert store.acquire_lease("r1", 200, "host-b", "token-b", stale) is None
    assert seen[0].lease_pid == 100
    assert (store.get_run("r1").lease_pid, store.get_run("r1").lease_host) == (200, "host-b")
    store.release_lease("r1")
    assert store.get_run("r1").lease_heartbeat is None and store.get_run("r1").lease_pid == 200
    assert store.acquire_lease("r1", 300, "host-c", "token-c", never_stale) is None
    with pytest.raises(KeyError):
        store.acquire_lease("missing", 1, "h", "t", never_stale)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_strings_that_are_not_valid_unicode_are_stored(kind: str, request, tmp_path: Path) -> None:
    """Lone surrogates and NUL in every JSON value a store keeps come back the same (written as escapes:
    PostgreSQL's text refuses both as they are); a stored output line shows them as printed, U+FFFD."""
    store = make_store(kind, request, tmp_path)
    try:
        broken = {"answer \ud83d": ["x\ud800y", "a\udcffb", "nul\x00z"]}
        store.set_field("Main", "log", broken)
        assert store.get_field("Main", "log") == (True, broken)
        store.create_run(run("r1", 1.0))
        store.record_step("r1", step("Main", 1, outcome=broken))
        store.record_steps("r1", [step("Main", 2, outcome="x\ud800y"), step("Main", 3, outcome="\x00")])
        assert [s.outcome for s in store.steps("r1")] == [broken, "x\ud800y", "\x00"]
        store.append_output("r1", "stdout", "x\ud800y\x00z")
        assert [line for _, _, line in store.output("r1")] == ["x\ufffdy\ufffdz"]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_worker_claims_again_a_run_of_its_own_sent_back_to_the_queue(kind: str, request, tmp_path: Path) -> None:
    # A worker never claims a run it holds under a fresh lease. A run it halted, which a person resolved and
    # sent back to the queue (`sage runs resolve`), waits until the process that ran it is done with it: a
    # thread-mode worker says so when the run's thread ends (it never exits), and the run can be claimed again,
    # or a lone worker would never finish it.
    import os
    import socket

    from sagepy.store.leases import lease_is_claimable
    from sagepy.store.queue import QUEUED, RunInfo
    made = make_store(kind, request, tmp_path)
    pid, host = os.getpid(), socket.gethostname()
    try:
        made.submit_run(run("r1", 1.0, QUEUED), RunInfo(version="v1"))

        def claim():
            return made.claim_runs("default", "v1", pid, host, lease_is_claimable, set(), 3, 32)

        first = claim()
        assert [c.run.id for c in first] == ["r1"] and not first[0].journaled
        assert claim() == []   # held by this very process under a fresh lease
        made.record_step("r1", step("Main", 1))
        made.end_run("r1", base.HALTED, 1)
        assert made.requeue_run("r1")
        assert claim() == []   # the process that ran it may still be closing what it opened
        made.forget_owner("r1", pid, host)
        again = claim()
        assert [c.run.id for c in again] == ["r1"]
        assert again[0].journaled and not again[0].resumed   # queued again, with a journal to carry on from
    finally:
        made.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_claim_looks_past_candidates_it_may_not_take(kind: str, request, tmp_path: Path) -> None:
    # A claim reads its candidates a few at a time (the oldest first); one that none of the first few may take
    # (their last owner still exiting, passed over by the worker, of another version) looks further.
    import os
    import socket

    from sagepy.store.queue import QUEUED, RunInfo
    made = make_store(kind, request, tmp_path)
    pid, host = os.getpid(), socket.gethostname()
    try:
        for i in range(20):
            made.submit_run(run(f"r{i:02}", float(i), QUEUED), RunInfo(version="v2" if i == 18 else "v1"))

        def claim(skip: set[str]):
            return made.claim_runs("default", "v1", pid, host, lambda r: r.id >= "r17", skip, 3, 1)

        assert [c.run.id for c in claim(set())] == ["r17"]
        assert claim({"r19"}) == []   # r18 is of another version, r19 passed over, r00-r16 not claimable
        assert [c.run.id for c in claim(set())] == ["r19"]
    finally:
        made.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_one_beat_renews_the_leases_it_holds_and_no_other(kind: str, request, tmp_path: Path) -> None:
    # The heartbeat of a worker's runs, all at once: a lease another process took is reported, not renewed; a
    # cancel request is reported; a run that ended (its lease released) is left alone — a late beat must
    # never make an ended run's lease look fresh again.
    import os
    import socket

    from sagepy.store.leases import lease_is_stale
    from sagepy.store.queue import QUEUED, RunInfo
    made = make_store(kind, request, tmp_path)
    other = make_store(kind, request, tmp_path)
    pid, host = os.getpid(), socket.gethostname()
    try:
        for name in ("kept", "taken", "ended", "cancelled"):
            made.submit_run(run(name, 1.0, QUEUED), RunInfo(version="v1"))
            assert made.acquire_lease(name, pid, host, f"token-{name}", lease_is_stale) is None
            made.mark_running(name)
        assert other.acquire_lease("taken", 4242, "elsewhere", "theirs", lambda r: True) is None
        made.end_run("ended", base.COMPLETED, 0)
        assert made.cancel_run("cancelled", lease_is_stale) is False   # running: asked to stop
        before = {name: made.get_run(name).lease_heartbeat for name in ("kept", "taken", "ended", "cancelled")}
        taken, cancels = made.renew_leases(["kept", "taken", "ended", "cancelled"])
        assert set(taken) == {"taken"} and (taken["taken"].pid, taken["taken"].host) == (4242, "elsewhere")
        assert cancels == {"cancelled"}
        after = {name: made.get_run(name) for name in ("kept", "taken", "ended", "cancelled")}
        assert after["kept"].lease_heartbeat >= before["kept"] and after["kept"].lease_token == "token-kept"
        assert after["taken"].lease_token == "theirs" and after["taken"].lease_heartbeat == before["taken"]
        assert after["ended"].lease_heartbeat is None and after["ended"].status == base.COMPLETED
    finally:
        made.close()
        other.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_claims_take_at_most_their_limit_and_never_one_run_twice(kind: str, request, tmp_path: Path) -> None:
    # Two workers claiming at once, each a batch at a time on its own connection: every queued run is claimed
    # once, by one of them, under its lease, and no batch holds more runs than it asked for.
    from sagepy.store.leases import lease_is_claimable
    from sagepy.store.queue import QUEUED, RunInfo
    stores = [make_store(kind, request, tmp_path) for _ in range(2)]
    try:
        for i in range(100):
            stores[0].submit_run(run(f"r{i:03}", float(i), QUEUED), RunInfo(version="v1"))
        claimed: list[list[str]] = [[], []]
        sizes: list[int] = []
        start = threading.Barrier(2)

        def claimer(n: int) -> None:
            start.wait()
            while batch := stores[n].claim_runs("default", "v1", 1000 + n, f"host-{n}", lease_is_claimable, set(),
                                                3, 7):
                sizes.append(len(batch))
                claimed[n].extend(claim.run.id for claim in batch)

        threads = [threading.Thread(target=claimer, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
            assert not thread.is_alive()
        assert sorted(claimed[0] + claimed[1]) == [f"r{i:03}" for i in range(100)]
        assert max(sizes) <= 7
        owners = {r.id: (r.lease_pid, r.lease_host, r.status) for r in stores[0].list_runs()}
        for n in range(2):
            assert {owners[run_id] for run_id in claimed[n]} <= {(1000 + n, f"host-{n}", base.RUNNING)}
    finally:
        for made in stores:
            made.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_forgotten_claim_is_no_longer_renewed(kind: str, request, tmp_path: Path) -> None:
    # A worker forgets the token of a claim whose run has ended (its memory does not grow with the runs it
    # claimed): its beats no longer touch that run.
    from sagepy.store.leases import lease_is_claimable
    from sagepy.store.queue import QUEUED, RunInfo
    made = make_store(kind, request, tmp_path)
    try:
        for name in ("kept", "done"):
            made.submit_run(run(name, 1.0, QUEUED), RunInfo(version="v1"))
        assert len(made.claim_runs("default", "v1", 7, "host-a", lease_is_claimable, set(), 3, 32)) == 2
        before = made.get_run("done").lease_heartbeat
        made.forget_claim("done")
        assert made.renew_leases(["kept", "done"]) == ({}, set())
        assert made.get_run("done").lease_heartbeat == before
    finally:
        made.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_store_holding_another_stores_claim_is_fenced_by_it(kind: str, request, tmp_path: Path) -> None:
    # A thread-mode worker's run takes its worker's claim over as it is: the run's own connection holds the
    # claim's token without a round trip and writes with it; once another process has taken the run over (the
    # lease went stale), it writes nothing more, and says who holds the run.
    from sagepy.store.leases import lease_is_claimable
    from sagepy.store.queue import QUEUED, RunInfo
    claimer, runner, other = (make_store(kind, request, tmp_path) for _ in range(3))
    try:
        claimer.submit_run(run("r1", 1.0, QUEUED), RunInfo(version="v1"))
        [claim] = claimer.claim_runs("default", "v1", 7, "host-a", lease_is_claimable, set(), 3, 32)
        runner.hold_lease("r1", claim.run.lease_token)
        runner.record_step("r1", step("Main", 1))
        runner.record_steps("r1", [step("Main", 2)])
        runner.append_output("r1", "stdout", "one")
        assert other.acquire_lease("r1", 4242, "elsewhere", "theirs", lambda owner: True) is None
        writes = (lambda: runner.record_step("r1", step("Main", 3)),
                  lambda: runner.record_steps("r1", [step("Main", 3)]),
                  lambda: runner.record_intent("r1", step("Main", 3, status=base.STARTED)),
                  lambda: runner.append_output("r1", "stdout", "two"),
                  lambda: runner.set_field("Main", "n", 1, step("Main", 3, kind="state"), "r1"),
                  lambda: runner.end_run("r1", base.COMPLETED, 0))
        for write in writes:
            with pytest.raises(base.TakenOver) as lost:
                write()
            assert (lost.value.pid, lost.value.host) == (4242, "elsewhere")
        assert [s.number for s in other.steps("r1")] == [1, 2]
        assert [line for _, _, line in other.output("r1")] == ["one"]
        assert other.get_field("Main", "n") == (False, None)
        assert (other.get_run("r1").status, other.get_run("r1").lease_token) == (base.RUNNING, "theirs")
    finally:
        for made in (claimer, runner, other):
            made.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_one_grouped_commit_writes_many_runs_and_fences_each(kind: str, request, tmp_path: Path) -> None:
    # The grouped commits' timer writes what every run held back in one transaction: each run's records and
    # output lines only while its lease is this store's; a run taken over meanwhile gets nothing and is told
    # who holds it, the others are written all the same. A run this store holds no lease of is not fenced.
    import os
    import socket

    from sagepy.store.leases import lease_is_stale
    made = make_store(kind, request, tmp_path)
    other = make_store(kind, request, tmp_path)
    pid, host = os.getpid(), socket.gethostname()
    try:
        for name in ("a", "b", "c", "free"):
            made.create_run(run(name, 1.0))
        for name in ("a", "b", "c"):
            assert made.acquire_lease(name, pid, host, f"token-{name}", lease_is_stale) is None
        assert other.acquire_lease("b", 4242, "elsewhere", "theirs", lambda owner: True) is None
        usage = step(base.USAGE_PATH, 1, outcome={"turns": 1}, kind=base.USAGE)
        taken = made.record_steps_of({
            "a": base.Pending([step("Main", 1), usage, replace(usage, outcome={"turns": 2})],
                              [("stdout", "a1"), ("stderr", "a2")]),
            "b": base.Pending([step("Main", 1)], [("stdout", "b1")]),
            "c": base.Pending([], [("stdout", "c1")]),
            "empty": base.Pending()})
        assert set(taken) == {"b"} and (taken["b"].pid, taken["b"].host) == (4242, "elsewhere")
        # the same with a run it holds no lease of (PostgreSQL takes another path then)
        taken = made.record_steps_of({"a": base.Pending([step("Main", 2)], [("stdout", "a3")]),
                                      "b": base.Pending([step("Main", 2)]),
                                      "free": base.Pending([step("Main", 1)], [("stdout", "f1")])})
        assert set(taken) == {"b"}
        assert [(s.path, s.number, s.outcome) for s in other.steps("a")] == [
            (base.USAGE_PATH, 1, {"turns": 2}), ("Main", 1, None), ("Main", 2, None)]
        assert other.output("a") == [(1, "stdout", "a1"), (2, "stderr", "a2"), (3, "stdout", "a3")]
        assert other.steps("b") == [] and other.output("b") == []
        assert other.steps("c") == [] and other.output("c") == [(1, "stdout", "c1")]
        assert len(other.steps("free")) == 1 and other.output("free") == [(1, "stdout", "f1")]
    finally:
        made.close()
        other.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_ends_with_its_last_writes_or_not_at_all(kind: str, request, tmp_path: Path) -> None:
    # The end of a run commits what its journal still held back (outcomes, its last output lines) with the
    # end itself; a deposed owner's end writes none of it.
    import os
    import socket

    from sagepy.store.leases import lease_is_stale
    made = make_store(kind, request, tmp_path)
    other = make_store(kind, request, tmp_path)
    pid, host = os.getpid(), socket.gethostname()
    try:
        for name in ("r1", "r2"):
            made.create_run(run(name, 1.0))
            assert made.acquire_lease(name, pid, host, f"token-{name}", lease_is_stale) is None
        made.end_run("r1", base.COMPLETED, 0, base.Pending([step("Main", 1)], [("stdout", "bye")]))
        ended = other.get_run("r1")
        assert (ended.status, ended.exit_code, ended.lease_token, ended.lease_heartbeat) == (base.COMPLETED, 0, None,
                                                                                              None)
        assert len(other.steps("r1")) == 1 and other.output("r1") == [(1, "stdout", "bye")]
        assert other.acquire_lease("r2", 4242, "elsewhere", "theirs", lambda owner: True) is None
        with pytest.raises(base.TakenOver):
            made.end_run("r2", base.COMPLETED, 0, base.Pending([step("Main", 1)], [("stdout", "late")]))
        assert other.steps("r2") == [] and other.output("r2") == []
        assert (other.get_run("r2").status, other.get_run("r2").lease_token) == (base.RUNNING, "theirs")
    finally:
        made.close()
        other.close()
