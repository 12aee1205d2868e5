"""The SQLite store shared by several processes: atomic updates, leases, the busy timeout, and a field write
and its journal record committed in one transaction (checked with the crash-injection hooks)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagepy.core import types as T
from sagepy.core.errors import SageRaise
from sagepy.runtime.persistence import StateStore
from sagepy.store import base
from sagepy.store.sqlite import FORMAT, SqliteStore

REPO = Path(__file__).resolve().parent.parent.parent
WORKER = str(Path(__file__).resolve().parent / "store_worker.py")


def worker_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in (base.CRASH_AFTER_VAR, base.CRASH_BEFORE_VAR, base.COUNT_WRITES_VAR)}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def start(*args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, WORKER, *args], env=worker_env(**extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    path = str(tmp_path / "state.db")
    store = SqliteStore(path)
    store.create_run(base.RunRecord("r1", 1.0, base.RUNNING, None, "main.sg"))
    store.close()
    return path


def test_two_processes_of_5000_updates_each_end_at_exactly_10000(db_path: str) -> None:
    procs = [start("increment", db_path, "5000") for _ in range(2)]
    results = [finish(proc) for proc in procs]
    for code, out, err in results:
        assert code == 0, err
    assert max(int(out) for _, out, _ in results) == 10000
    assert SqliteStore(db_path).get_field("Main", "n") == (True, 10000)


def test_processes_opening_a_new_file_together_all_open_it(tmp_path: Path) -> None:
    # turning a new file into WAL is refused at once, not after the busy timeout, while another process does it
    count, start_at = 150, time.time() + 1.5
    procs = [start("open-new", str(tmp_path), str(count), str(start_at)) for _ in range(4)]
    for code, out, err in [finish(proc) for proc in procs]:
        assert (code, out, err) == (0, f"opened {count}\n", "")


@pytest.mark.parametrize("hook, committed", [(base.CRASH_BEFORE_VAR, False), (base.CRASH_AFTER_VAR, True)])
def test_a_field_write_and_its_journal_record_commit_together(db_path: str, tmp_path: Path, hook: str,
                                                              committed: bool) -> None:
    counted = tmp_path / "writes.txt"
    code, out, err = finish(start("set-with-step", db_path, **{hook: "1", base.COUNT_WRITES_VAR: str(counted)}))
    assert code == base.CRASH_EXIT_CODE, err
    store = SqliteStore(db_path)
    field, records = store.get_field("Main", "n"), store.steps("r1")
    if committed:
        assert field == (True, 42) and [(r.path, r.number, r.outcome) for r in records] == [("Main", 1, 42)]
        assert counted.read_text().splitlines() == ["1"]
    else:
        assert field == (False, None) and records == []
        assert not counted.exists()


def test_every_committed_journal_write_is_counted_and_no_other(db_path: str, tmp_path: Path) -> None:
    counted = tmp_path / "writes.txt"
    code, out, err = finish(start("set-with-step", db_path, **{base.COUNT_WRITES_VAR: str(counted)}))
    assert code == 0, err
    assert counted.read_text().splitlines() == ["1"]   # opening and a plain lease write are not journal writes
    code, out, err = finish(start("lease", db_path, "1", **{base.COUNT_WRITES_VAR: str(counted)}))
    assert (code, counted.read_text().splitlines()) == (0, ["1"]), err


def test_a_lease_taken_by_one_process_is_refused_to_another_until_stale(db_path: str) -> None:
    assert finish(start("lease", db_path, "111"))[1] == "taken\n"
    assert finish(start("lease", db_path, "222"))[1] == "refused 111\n"
    db = sqlite3.connect(db_path, isolation_level=None)   # the owner stopped beating a minute ago
    db.execute("UPDATE runs SET lease_heartbeat = ?", (time.time() - 60,))
    db.close()
    assert finish(start("lease", db_path, "222"))[1] == "taken\n"
    assert SqliteStore(db_path).get_run("r1").lease_pid == 222


def test_two_processes_racing_for_a_free_lease_never_both_get_it(db_path: str) -> None:
    for attempt in range(3):
        store = SqliteStore(db_path)
        store.release_lease("r1")
        store.close()
        procs = [start("lease", db_path, str(pid)) for pid in (1000 + attempt, 2000 + attempt)]
        answers = sorted(finish(proc)[1].split()[0] for proc in procs)
        assert answers == ["refused", "taken"]


def test_a_store_locked_past_the_busy_timeout_is_busy(db_path: str) -> None:
    holder = start("hold", db_path, "30")
    try:
        assert holder.stdout.readline() == "holding\n"
        store = SqliteStore(db_path, busy_timeout_s=0.2)
        with pytest.raises(base.Busy):
            store.set_field("Main", "n", 1)
        assert store.get_field("Main", "n") == (False, None)   # readers are not blocked by a writer (WAL)
        state = StateStore(store)
        with pytest.raises(SageRaise) as raised:
            state.save("Main", "n", 1)
        assert (raised.value.error.kind, raised.value.error.message) == (
            "Runtime", f"persistent store busy: {db_path}")
        with pytest.raises(SageRaise):
            state.update("Main", "n", T.INT, lambda old: old + 1)
        store.close()
    finally:
        holder.kill()
        holder.communicate()


def test_an_older_file_keeps_its_values_and_gains_the_journal_tables(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE sage_state (agent TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, "
                "PRIMARY KEY (agent, field))")
    old.execute("INSERT INTO sage_state VALUES ('Main', 'count', '7')")
    old.commit()
    old.close()
    store = SqliteStore(path)
    assert store.get_field("Main", "count") == (True, 7)
    assert StateStore(store).load("Main", "count", T.INT) == 7
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == (str(FORMAT),)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
