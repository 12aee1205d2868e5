"""The program version of a project (SPEC §14.2): which program a queued run was submitted with, so that a
worker executes only runs of the program it has.

The first 12 lower-case hex digits of a SHA-256 over grove.toml, every `.sg` file of the entry module tree and
every `[extern] modules` file, in the order of their project-relative POSIX paths, each as its path, a NUL
byte, its bytes and a NUL byte. A listed file that does not exist counts as empty.
"""
from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any, Iterable, Protocol

if TYPE_CHECKING:
    from ..settings import Settings


class VersionedProject(Protocol):
    """What the version reads of a command's session (a sagepy.session.Session): its project's root and
    settings, and the module tree of an entry file."""

    settings: Settings

    @property
    def root(self) -> str: ...

    def load(self, entry: str) -> Any: ...


def program_version(root: str, files: Iterable[str]) -> str:
    """The version over `files` (absolute or root-relative paths; duplicates count once)."""
    named: dict[str, str] = {}
    for path in files:
        full = os.path.abspath(os.path.join(root, path))
        named[os.path.relpath(full, root).replace(os.sep, "/")] = full
    digest = hashlib.sha256()
    for rel in sorted(named):
        try:
            with open(named[rel], "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        digest.update(rel.encode("utf-8") + b"\0" + data + b"\0")
    return digest.hexdigest()[:12]


def version_files(session: VersionedProject, modules: Iterable[str]) -> list[str]:
    """grove.toml, the module files given and the extern modules of `session`'s project."""
    files = list(modules)
    if session.settings.grove_path is not None:
        files.append(session.settings.grove_path)
    files.extend(os.path.join(session.root, rel) for rel in session.settings.extern.modules)
    return files


def session_version(session: VersionedProject, entry: str) -> str:
    """The version of the program whose entry file is `entry`, loading its module tree to find its files."""
    program = session.load(entry)
    return program_version(session.root, version_files(session, [m.path for m in program.modules]))
