"""A process that works on a PostgreSQL store, for the tests that need more than one process.

python pg_worker.py open URL              opens the store (creating its schema when there is none)
python pg_worker.py increment URL N       N x StateStore.update(+1) of Main.n; prints the last value
"""
from __future__ import annotations

import sys

from sagepy.core import types as T
from sagepy.runtime.persistence import StateStore
from sagepy.store.postgres import PostgresStore


def main(command: str, url: str, *rest: str) -> None:
    store = PostgresStore(url, "demo")
    if command == "increment":
        state = StateStore(store)
        value = None
        for _ in range(int(rest[0])):
            value = state.update("Main", "n", T.INT, lambda old: old + 1)
        print(value)
    store.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
