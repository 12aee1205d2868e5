"""Map builtins (SPEC §6.5).

Map keys are `String`, `Int` or `Bool`, whose Python hash and equality match Sage equality, so a Sage map is
a plain dict. `map_set` and `map_delete` assign to a variable, which only the interpreter can do: it
implements them by rebinding the variable to the new dict that `map_with` / `map_without` build, so other
holders of the old map never see the change.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.values import option


def map_get(m: dict, k: Any) -> Any:
    return option(m.get(k))


def map_has(m: dict, k: Any) -> bool:
    return k in m


def map_keys(m: dict) -> list:
    return list(m)


def map_values(m: dict) -> list:
    return list(m.values())


def map_with(m: dict, k: Any, v: Any) -> dict:
    """A copy of m with k bound to v; an existing key keeps its place in the insertion order."""
    updated = dict(m)
    updated[k] = v
    return updated


def map_without(m: dict, k: Any) -> dict:
    """A copy of m without k (m itself when k is absent: maps are never mutated, so sharing is safe)."""
    if k not in m:
        return m
    reduced = dict(m)
    del reduced[k]
    return reduced


BUILTINS: dict[str, Callable[..., Any]] = {
    "map_get": map_get,
    "map_has": map_has,
    "map_keys": map_keys,
    "map_values": map_values,
    "map_with": map_with,
    "map_without": map_without,
}
