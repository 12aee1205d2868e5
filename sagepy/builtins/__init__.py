"""The native standard library: one module per family of SPEC §6, each exporting `BUILTINS` (Sage name ->
plain Python function taking Sage values positionally) and, where it has any, `CONSTANTS`.

The Sage-side declarations of these functions live in `stdlib/*.sg`. Builtins that need the interpreter
(printing, the clock, stdin, `map_set`/`map_delete`, assertions) are provided by the interpreter itself.
Family modules import only cheap modules at top level; heavy ones (`datetime`, `json`) load on first use.
"""
from __future__ import annotations

from typing import Any, Callable

from . import conversions, environ, files, json_, lists, maps, numbers, options, strings, timefmt

_FAMILIES = (conversions, strings, numbers, lists, maps, options, files, timefmt, environ, json_)
# the families that read or change the world: each call of theirs is an `io` step of the effects chain
_IO_FAMILIES = (files, environ)


def load_builtins() -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for family in _FAMILIES:
        merged.update(family.BUILTINS)
    return merged


def load_io_builtins() -> dict[str, Callable[..., Any]]:
    """The builtins of `load_builtins` that are `io` steps (SPEC §14), by name."""
    merged: dict[str, Callable[..., Any]] = {}
    for family in _IO_FAMILIES:
        merged.update(family.BUILTINS)
    return merged


def load_constants() -> dict[str, object]:
    merged: dict[str, object] = {}
    for family in _FAMILIES:
        merged.update(getattr(family, "CONSTANTS", {}))
    return merged
