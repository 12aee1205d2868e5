"""`@persistent` agent fields (SPEC §4.8): the runtime's side of the store.

Values are keyed by agent name and field name and shared by every instance of the agent (last write wins).
The store itself (`backend`, a sagepy.store.base.Store: SQLite at `[persistence] path`, PostgreSQL at its
`url`, else process memory;
a fresh in-memory one per test under `sage test`) holds them as JSON (SPEC §5); this adapter converts with
the field's type and keeps a per-process cache, so that `get` costs no read. `update` is the exception: it
reads inside the store's transaction, never from the cache, so concurrent updates from other agents and other
processes lose nothing. The store's failures become catchable Runtime errors with SPEC's messages.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from ..core import types as T
from ..core.errors import runtime_error

if TYPE_CHECKING:
    from ..store.base import StepRecord, Store

_UNREADABLE = object()   # a stored value that no longer converts to the field's type


class StateStore:
    """`backend` None: process memory, created when a field is first used (a run that has no `@persistent`
    field never imports the store)."""

    def __init__(self, backend: Store | None = None) -> None:
        self._backend = backend
        # Held around every write and its cache update, so that the cache ends as the store does; reentrant
        # because an `update` function may read fields (`get`) on the same thread.
        self.lock = threading.RLock()
        self.cache: dict[tuple[str, str], Any] = {}

    def load(self, agent: str, field: str, t: T.Type, start: Any = None) -> Any:
        """The stored value, else `start` (the value a `summon` or child spec gave the field), else the type's
        default (SPEC §4.8). A start of `None` is the default: only an `Option` field can be given `None`."""
        from ..core.convert import default_value
        key = (agent, field)
        with self.lock:
            if key in self.cache:
                return self.cache[key]
            found, data = self._call(self.backend.get_field, agent, field)
            value = _decode(data, t) if found else _UNREADABLE
            if value is _UNREADABLE:   # nothing stored, or a value of an older type: start again
                value = default_value(t) if start is None else start
            self.cache[key] = value
            return value

    def save(self, agent: str, field: str, value: Any, data: Any = None, step: StepRecord | None = None,
             run_id: str | None = None) -> None:
        """Store `value`; `data` is its JSON form (SPEC §5) when the caller has it already. With `step`, its
        journal record commits in the same transaction."""
        from ..core.convert import to_json
        with self.lock:
            self._call(self.backend.set_field, agent, field, to_json(value) if data is None else data, step, run_id)
            self.cache[(agent, field)] = value

    def update(self, agent: str, field: str, t: T.Type, apply: Callable[[Any], Any],
               step: StepRecord | None = None, run_id: str | None = None) -> Any:
        """`self.f.update(fn)`: `apply` maps the committed old value to the new one inside one store
        transaction; returns the new value. A Sage error raised by `apply` rolls the transaction back and
        propagates. The old value, when the store holds none, is the one `load` started the field at."""
        from ..core.convert import default_value, to_json
        key = (agent, field)
        applied: list[Any] = []

        def step_json(stored: tuple[bool, Any]) -> Any:
            found, data = stored
            old = _decode(data, t) if found else _UNREADABLE
            if old is _UNREADABLE:
                old = self.cache[key] if key in self.cache else default_value(t)
            applied[:] = [apply(old)]
            return to_json(applied[0])

        with self.lock:
            self._call(self.backend.update_field, agent, field, step_json, step, run_id)
            self.cache[key] = applied[0]
            return applied[0]

    @property
    def backend(self) -> Store:
        if self._backend is None:
            from ..store.memory import MemoryStore
            self._backend = MemoryStore()
        return self._backend

    def get(self, agent: str, field: str) -> Any:
        with self.lock:
            return self.cache[(agent, field)]

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        from ..store.base import Busy, StepRecord, TakenOver, Unavailable, Unreachable   # loaded already
        try:
            return method(*args)
        except Busy:
            raise runtime_error(f"persistent store busy: {self.backend.path}") from None
        except (TakenOver, Unavailable) as exc:
            journaled = any(isinstance(arg, StepRecord) for arg in args)
            if isinstance(exc, TakenOver) or (journaled and isinstance(exc, Unreachable)):
                raise   # the journal stops the run (SPEC §14.1)
            raise runtime_error(f"persistent store unavailable: {self.backend.path}: {exc}") from None


def _decode(data: Any, t: T.Type) -> Any:
    from ..core.convert import from_json
    try:
        return from_json(data, t)
    except Exception:  # any conversion failure means the stored value predates the field's type
        return _UNREADABLE
