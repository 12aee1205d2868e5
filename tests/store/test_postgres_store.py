"""What only the PostgreSQL store has to show (SPEC §14.1), against a real server (tests/pgcluster.py): its
schema created on first use by many processes at once, the format refusal, projects and schemas that never
mix, atomic updates across processes, fencing, claims, and a server that goes away and comes back."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from sagepy.core import types as T
from sagepy.runtime.persistence import StateStore
from sagepy.store import base
from sagepy.store.postgres import FORMAT, PostgresStore

REPO = Path(__file__).resolve().parent.parent.parent
WORKER = str(Path(__file__).resolve().parent / "pg_worker.py")


def run(run_id: str, **lease) -> base.RunRecord:
    return base.RunRecord(run_id, 1.0, base.RUNNING, None, "src/main.sg", **lease)


def step(number: int, status: str = base.DONE, safety: str = "read_only", outcome=None) -> base.StepRecord:
    return base.StepRecord("Main", number, "tool", "Counter.charge", "ab" * 32, safety, status, outcome)


def worker(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, WORKER, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_many_processes_opening_an_empty_database_at_once_all_get_one_schema(pg_url: str) -> None:
    procs = [worker("open", pg_url) for _ in range(6)]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, results
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT key, value FROM sage.meta").fetchall() == [("format", str(FORMAT))]
        tables = {row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'sage'")}
    assert tables == {"meta", "fields", "runs", "steps", "run_queue", "run_output"}


def test_a_newer_format_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url, "demo").close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE sage.meta SET value = %s WHERE key = 'format'", (str(FORMAT + 1),))
    with pytest.raises(base.NewerFormat) as refused:
        PostgresStore(pg_url, "demo")
    assert refused.value.args == (FORMAT + 1, FORMAT)


def test_projects_and_schemas_of_one_database_never_mix(pg_url: str) -> None:
    one, two, other_schema = (PostgresStore(pg_url, "one"), PostgresStore(pg_url, "two"),
                              PostgresStore(pg_url, "one", schema="Elsewhere"))
    try:
        one.set_field("Main", "n", 1)
        two.set_field("Main", "n", 2)
        one.create_run(run("r1"))
        one.record_step("r1", step(1, outcome=5))
        assert (one.get_field("Main", "n"), two.get_field("Main", "n")) == ((True, 1), (True, 2))
        assert other_schema.get_field("Main", "n") == (False, None)
        assert two.get_run("r1") is None and two.list_runs() == [] and two.steps("r1") == []
        assert [r.id for r in one.list_runs()] == ["r1"] and other_schema.list_runs() == []
    finally:
        for store in (one, two, other_schema):
            store.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM \"Elsewhere\".meta").fetchone() == (1,)


def test_updates_from_two_processes_lose_nothing(pg_url: str) -> None:
    PostgresStore(pg_url, "demo").close()
    procs = [worker("increment", pg_url, "150") for _ in range(2)]
    results = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], results
    store = PostgresStore(pg_url, "demo")
    try:
        assert store.get_field("Main", "n") == (True, 300)
        assert sorted(int(out) for out, _ in results)[-1] == 300
    finally:
        store.close()


def test_a_deposed_owner_writes_nothing_more(pg_url: str) -> None:
    first, second = PostgresStore(pg_url, "demo"), PostgresStore(pg_url, "demo")
    try:
        first.create_run(run("r1", lease_pid=1, lease_host="a", lease_heartbeat=1.0, lease_token="t1"))
        first.record_step("r1", step(1, outcome=1))
        assert second.acquire_lease("r1", 2, "b", "t2", lambda owner: True) is None   # taken over as stale
        for write in (lambda: first.record_step("r1", step(2, outcome=2)),
                      lambda: first.record_steps("r1", [step(2, outcome=2), step(3, outcome=3)]),
                      lambda: first.record_intent("r1", step(2, base.STARTED, "destructive")),
                      lambda: first.set_field("Main", "n", 9, step(2, outcome=9), "r1"),
                      lambda: first.heartbeat("r1"),
                      lambda: first.end_run("r1", base.COMPLETED, 0)):
            with pytest.raises(base.TakenOver) as taken:
                write()
            assert (taken.value.pid, taken.value.host) == (2, "b")
        assert [s.number for s in second.steps("r1")] == [1]
        assert second.get_field("Main", "n") == (False, None)
        assert second.get_run("r1").status == base.RUNNING
        second.record_step("r1", step(2, outcome=2))   # the owner writes on
        second.heartbeat("r1")
    finally:
        first.close()
        second.close()


def test_an_intent_is_inserted_once_and_never_written_over(pg_url: str) -> None:
    store = PostgresStore(pg_url, "demo")
    try:
        store.create_run(run("r1", lease_pid=1, lease_host="a", lease_heartbeat=1.0, lease_token="t1"))
        intent = step(1, base.STARTED, "destructive")
        assert store.record_intent("r1", intent) is True
        with psycopg.connect(pg_url, autocommit=True) as conn:   # as if another owner had claimed step 2
            conn.execute("INSERT INTO sage.steps SELECT project, run_id, path, 2, kind, target, args_hash, safety, "
                         "status, outcome, 'other' FROM sage.steps WHERE number = 1")
        assert store.record_intent("r1", step(2, base.STARTED, "destructive")) is False
        assert [(s.number, s.status) for s in store.steps("r1")] == [(1, "started"), (2, "started")]
    finally:
        store.close()


def test_a_restarted_server_is_waited_for_and_an_absent_one_is_unreachable(pg_cluster, pg_url: str) -> None:
    store = PostgresStore(pg_url, "demo")
    try:
        store.set_field("Main", "n", 1)
        done = threading.Event()

        def restart() -> None:
            pg_cluster.restart(down_seconds=1.0)
            done.set()
        restarter = threading.Thread(target=restart)
        restarter.start()
        # writes while the server goes down and comes back: each is retried until it commits
        value = 2
        while not done.is_set():
            store.set_field("Main", "n", value)
            value += 1
            time.sleep(0.02)
        restarter.join()
        store.set_field("Main", "n", 40)
        assert store.get_field("Main", "n") == (True, 40)
    finally:
        store.close()
    impatient = PostgresStore(pg_url, "demo", retry_seconds=1.0)
    try:
        pg_cluster.stop()
        with pytest.raises(base.Unreachable) as lost:
            impatient.set_field("Main", "n", 41)
        assert "PgSecret" not in str(lost.value)
    finally:
        pg_cluster.start()
        impatient.close()
    with pytest.raises(base.Unreachable) as refused:
        PostgresStore(pg_url.replace(str(pg_cluster.port), str(pg_cluster.port + 1)), "demo")
    assert "refused" in str(refused.value) or "failed" in str(refused.value)


def test_state_store_updates_on_postgres_are_atomic_across_threads(pg_url: str) -> None:
    state = StateStore(PostgresStore(pg_url, "demo"))
    try:
        threads = [threading.Thread(target=lambda: [state.update("Main", "n", T.INT, lambda old: old + 1)
                                                    for _ in range(50)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert state.backend.get_field("Main", "n") == (True, 200)
    finally:
        state.close()


def test_a_database_of_format_1_is_upgraded_when_opened(pg_url: str) -> None:
    PostgresStore(pg_url, "demo").close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE sage.meta SET value = '1' WHERE key = 'format'")
    PostgresStore(pg_url, "demo").close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT key, value FROM sage.meta").fetchall() == [("format", str(FORMAT))]
