"""The native standard library: one module per family of SPEC §6, each exporting `BUILTINS` (Sage name ->
plain Python function taking Sage values positionally) and, where it has any, `CONSTANTS`.

The Sage-side declarations of these functions live in `stdlib/*.sg`. Those that read or change the world are
`io` steps, described in sagepy.effect_builtins. Builtins that need the interpreter (printing, sleeping,
asking, `map_set`/`map_delete`, assertions, dynamic MCP) are provided by the interpreter itself.
Family modules import only cheap modules at top level; heavy ones (`datetime`, `json`) load on first use.
"""
from __future__ import annotations

from typing import Any, Callable

from ..effect_builtins import EFFECT_BUILTINS, IO
from . import conversions, environ, files, json_, lists, maps, numbers, options, process, strings, timefmt

_FAMILIES = (conversions, strings, numbers, lists, maps, options, files, timefmt, environ, json_, process)


def load_builtins() -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for family in _FAMILIES:
        merged.update(family.BUILTINS)
    return merged


_io_builtins: dict[str, Callable[..., Any]] | None = None


def load_io_builtins() -> dict[str, Callable[..., Any]]:
    """The builtins of `load_builtins` that are `io` steps (SPEC §14), by name: the `native` ones of
    sagepy.effect_builtins. A new dict each time (every run builds its effects from one: `sage eval` builds
    hundreds), taken from the one made on the first call."""
    global _io_builtins
    if _io_builtins is None:
        native = load_builtins()
        _io_builtins = {name: native[name] for name, b in EFFECT_BUILTINS.items()
                        if b.kind == IO and b.perform == "native"}
    return dict(_io_builtins)


def load_constants() -> dict[str, object]:
    merged: dict[str, object] = {}
    for family in _FAMILIES:
        merged.update(getattr(family, "CONSTANTS", {}))
    return merged
