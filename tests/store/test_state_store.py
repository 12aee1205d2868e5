"""StateStore, the runtime's adapter over a base.Store: Sage values converted with the field's type, the
per-process cache, and the atomic `update`."""
from __future__ import annotations

from pathlib import Path

import pytest

from sagepy.core import types as T
from sagepy.core.errors import SageRaise, runtime_error
from sagepy.runtime.persistence import StateStore
from sagepy.store.memory import MemoryStore
from sagepy.store.sqlite import SqliteStore



@pytest.fixture(params=["sqlite", "memory"])
def backend(request, tmp_path: Path):
    made = SqliteStore(str(tmp_path / "state.db")) if request.param == "sqlite" else MemoryStore()
    yield made
    made.close()


def test_load_prefers_the_stored_value_then_the_start_then_the_default(backend) -> None:
    backend.set_field("Main", "stored", 5)
    state = StateStore(backend)
    assert state.load("Main", "stored", T.INT, 99) == 5
    assert state.load("Main", "started", T.INT, 99) == 99
    assert state.load("Main", "fresh", T.STRING) == ""
    backend.set_field("Main", "old", "text of an older type")
    assert state.load("Main", "old", T.INT) == 0
    assert state.get("Main", "stored") == 5


def test_save_writes_through_and_updates_the_cache(backend) -> None:
    state = StateStore(backend)
    state.load("Main", "n", T.INT)
    state.save("Main", "n", 3)
    assert (state.get("Main", "n"), backend.get_field("Main", "n")) == (3, (True, 3))
    state.save("Main", "n", 4, data=4)
    assert backend.get_field("Main", "n") == (True, 4)


def test_update_reads_the_committed_value_not_the_cache(backend) -> None:
    state = StateStore(backend)
    assert state.load("Main", "n", T.INT) == 0
    backend.set_field("Main", "n", 10)   # another process wrote meanwhile
    assert state.get("Main", "n") == 0
    assert state.update("Main", "n", T.INT, lambda old: old + 1) == 11
    assert state.get("Main", "n") == 11 and backend.get_field("Main", "n") == (True, 11)


def test_update_of_a_field_never_stored_starts_from_its_starting_value(backend) -> None:
    state = StateStore(backend)
    state.load("Main", "n", T.INT, 41)
    assert state.update("Main", "n", T.INT, lambda old: old + 1) == 42
    other = StateStore(backend)
    assert other.update("Main", "m", T.INT, lambda old: old + 1) == 1   # never loaded: the default


def test_a_sage_error_in_the_update_function_rolls_back_and_propagates(backend) -> None:
    state = StateStore(backend)
    state.load("Main", "n", T.INT)
    state.save("Main", "n", 7)

    def fails(old):
        raise runtime_error("boom")

    with pytest.raises(SageRaise) as raised:
        state.update("Main", "n", T.INT, fails)
    assert raised.value.error.message == "boom"
    assert (state.get("Main", "n"), backend.get_field("Main", "n")) == (7, (True, 7))


def test_an_update_function_may_read_fields(backend) -> None:
    state = StateStore(backend)
    state.load("Main", "step", T.INT, 5)
    state.load("Main", "n", T.INT)
    assert state.update("Main", "n", T.INT, lambda old: old + state.get("Main", "step")) == 5
