"""Where sagepy keeps its caches (SPEC §0.1): `$SAGE_CACHE_DIR`, else `$XDG_CACHE_HOME/sagepy`, else
`~/.cache/sagepy`; `SAGE_NO_CACHE` turns caching off. Both the AST cache and the serialised Lark parser live here."""
from __future__ import annotations

import os
from typing import Mapping


def cache_root(environ: Mapping[str, str] | None = None) -> str | None:
    """The cache directory `environ` selects (a session passes its snapshot; default: the environment now)."""
    env = os.environ if environ is None else environ
    if env.get("SAGE_NO_CACHE"):
        return None
    explicit = env.get("SAGE_CACHE_DIR")
    if explicit:
        return explicit
    xdg = env.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "sagepy")
    return os.path.join(os.path.expanduser("~"), ".cache", "sagepy")
