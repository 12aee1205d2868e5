"""A process that works on a store file, for the tests that need a second process.

python store_worker.py increment PATH N      N x StateStore.update(+1) of Main.n; prints the last value
python store_worker.py set-with-step PATH     one field write carrying a journal record (run r1)
python store_worker.py lease PATH PID         tries to take run r1's lease (fresh when < 10 s old); prints
                                              "taken" or "refused <owner pid>"
python store_worker.py hold PATH SECONDS      holds BEGIN IMMEDIATE; prints "holding" once it does
python store_worker.py open-new DIR N T0      opens DIR/new-<i>.db for i < N, each at the wall-clock moment
                                              T0 + i * 20 ms (so that several processes open each new file
                                              together); prints "opened N" or the first failure
"""
from __future__ import annotations

import sqlite3
import sys
import time

from sagepy.core import types as T
from sagepy.runtime.persistence import StateStore
from sagepy.store import base
from sagepy.store.sqlite import SqliteStore


def main(command: str, path: str, *rest: str) -> None:
    if command == "hold":
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        print("holding", flush=True)
        time.sleep(float(rest[0]))
        db.execute("COMMIT")
        return
    if command == "open-new":
        count, start = int(rest[0]), float(rest[1])
        for i in range(count):
            time.sleep(max(0.0, start + i * 0.02 - time.time()))
            try:
                SqliteStore(f"{path}/new-{i}.db").close()
            except base.Unavailable as exc:
                print(f"new-{i}.db: {exc}")
                return
        print(f"opened {count}")
        return
    store = SqliteStore(path)
    if command == "increment":
        state = StateStore(store)
        value = None
        for _ in range(int(rest[0])):
            value = state.update("Main", "n", T.INT, lambda old: old + 1)
        print(value)
    elif command == "set-with-step":
        record = base.StepRecord("Main", 1, "state", "n.set", "00" * 32, "idempotent", base.DONE, 42)
        store.set_field("Main", "n", 42, record, "r1")
    elif command == "lease":
        owner = store.acquire_lease("r1", int(rest[0]), "host", f"token-{rest[0]}",
                                    lambda run: run.lease_age >= 10.0)
        print("taken" if owner is None else f"refused {owner.lease_pid}")
    store.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
