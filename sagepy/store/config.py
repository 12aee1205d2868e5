"""Which durable store a project uses, and opening it (SPEC §4.8, §14, §14.1).

`[persistence]` in grove.toml chooses the backend: `sqlite` (the default: the file `path` under the project
root) or `postgres` (the database of `url`, in `schema`, keyed by `[project] name`). `SAGE_STATE_URL`, when
set, replaces the backend, `url` and `path` of a project that has the table: `postgresql://…` or
`postgres://…` selects PostgreSQL, `sqlite:<path>` SQLite (a path relative to the current directory).
`$NAME` and `${NAME}` in `url` are resolved from the environment (`$$` is a `$`), so that a password stays
there; wherever the URL is shown, its password is `***`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from ..secrecy import mask_passwords

if TYPE_CHECKING:
    from ..grove import PersistenceSettings, ProjectSettings
    from ..variables import Overrides
    from .base import Store

NEEDS_PSYCOPG = "error: the postgres backend needs psycopg 3: pip install 'sagepy[postgres]'"
_REFERENCE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class StoreConfigError(Exception):
    """The store cannot even be tried: str() is the whole message (`error: …`), exit 1."""


@dataclass(frozen=True)
class StoreTarget:
    backend: str            # "sqlite" | "postgres"
    location: str           # the SQLite file, or the PostgreSQL URL with its `$` references resolved
    schema: str = "sage"
    project: str = ""       # the key of everything in a shared database

    @property
    def shown(self) -> str:
        """The store as messages name it: the file, or the URL with its password as `***`."""
        return self.location if self.backend == "sqlite" else mask_passwords(self.location)


class StoreSettings(Protocol):
    """What choosing the store reads of a command's settings (a sagepy.settings.Settings)."""

    root: str
    overrides: Overrides
    project: ProjectSettings
    persistence: PersistenceSettings


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def store_target(settings: StoreSettings) -> StoreTarget | None:
    """The durable store of the project, or None when its `@persistent` fields live in process memory (no
    `[persistence]` table, or `backend = "memory"` without SAGE_STATE_URL). StoreConfigError for an unset
    `$` variable in `url`."""
    persistence = settings.persistence
    if not persistence.present:
        return None
    override = settings.overrides.setting("SAGE_STATE_URL")
    project = settings.project.name or os.path.basename(os.path.abspath(settings.root))
    if override is not None:
        if override.startswith("sqlite:") and len(override) > len("sqlite:"):
            return StoreTarget("sqlite", os.path.abspath(override[len("sqlite:"):]))
        if not is_postgres_url(override):
            raise StoreConfigError("error: SAGE_STATE_URL must be a postgresql:// (or postgres://) URL or "
                                   f"sqlite:<path>, found '{mask_passwords(override)}'")
        return StoreTarget("postgres", override, persistence.schema, project)
    if persistence.backend == "sqlite":
        return StoreTarget("sqlite", os.path.join(settings.root, persistence.path))
    if persistence.backend == "postgres" and persistence.url is not None:
        return StoreTarget("postgres", resolve_references(persistence.url, settings.overrides),
                           persistence.schema, project)
    return None


def resolve_references(url: str, environ: Mapping[str, str]) -> str:
    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(2)
        if name not in environ:
            raise StoreConfigError(f"error: [persistence] url refers to unset environment variable '{name}'")
        return environ[name]
    return _REFERENCE.sub(substitute, url)


def open_store(target: StoreTarget, create: bool = True) -> Store | None:
    """The store `target` names. `create=False`: None for a SQLite file that does not exist yet (looking at
    runs creates no store). Raises base.Unavailable (Unreachable for a database that cannot be reached),
    base.NewerFormat, or StoreConfigError when psycopg is missing."""
    if target.backend == "sqlite":
        if not create and not os.path.exists(target.location):
            return None
        from .sqlite import SqliteStore
        return SqliteStore(target.location)
    try:
        import psycopg  # noqa: F401  (only to say what is missing)
    except ImportError:
        raise StoreConfigError(NEEDS_PSYCOPG) from None
    from .postgres import PostgresStore
    return PostgresStore(target.location, target.project, target.schema, shown=target.shown)


def open_failure(target: StoreTarget | None, exc: Exception) -> str:
    """The message of a store that cannot serve a command (SPEC §4.8, §14, §14.1), without a password."""
    from .base import NewerFormat, Unreachable
    if isinstance(exc, StoreConfigError):
        return str(exc)
    if isinstance(exc, NewerFormat):
        found, supported = exc.args
        return f"error: journal format {found} is newer than this sagepy supports ({supported})"
    shown = target.shown if target is not None else "the store"
    reason = mask_passwords(str(exc), target.location) if target is not None else str(exc)
    if isinstance(exc, Unreachable):
        return f"error: cannot reach the state database {shown}: {reason}"
    return f"error: persistent store unavailable: {shown}: {reason}"



def open_failure_for_store(store: Any, exc: Exception) -> str:
    """`error: cannot reach the state database <masked URL>: <reason>` for a store in use (its `path` is
    already masked, and so are its errors)."""
    return f"error: cannot reach the state database {store.path}: {exc}"
