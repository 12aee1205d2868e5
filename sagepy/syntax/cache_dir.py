"""Where sagepy keeps its caches (SPEC §0.1): `$SAGE_CACHE_DIR`, else `$XDG_CACHE_HOME/sagepy`, else
`~/.cache/sagepy`; `SAGE_NO_CACHE` turns caching off. Both the AST cache and the serialised Lark parser live here."""
from __future__ import annotations

import os


def cache_root() -> str | None:
    if os.environ.get("SAGE_NO_CACHE"):
        return None
    explicit = os.environ.get("SAGE_CACHE_DIR")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "sagepy")
    return os.path.join(os.path.expanduser("~"), ".cache", "sagepy")
