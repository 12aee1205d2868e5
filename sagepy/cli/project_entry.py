"""What the commands that take a PATH (`run`, `serve`, `worker`, `ui`) do first: open the project's session and
find its entry file, or say why not."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session import Session


def open_session(path: str | None) -> tuple[Session, str | None] | int:
    """(the session of the project PATH lies in, PATH when it names a file), or exit code 1 after the error."""
    from ..project import ProjectError
    from ..session import Session
    try:
        return Session.open(path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1


def entry_file(session: Session, explicit: str | None) -> str | int:
    """The file to run (PATH's, else the project's entry), or exit code 1 after the error when it is missing."""
    entry = explicit or session.entry_file()
    if not os.path.isfile(entry):
        from ..diagnostics import display_path
        sys.stderr.write(f"error: no entry file found (looked for {display_path(entry)})\n")
        return 1
    return entry


def open_entry(path: str | None) -> tuple[Session, str] | int:
    """`open_session` then `entry_file`: the session and the file to run, or exit code 1 after the error."""
    opened = open_session(path)
    if isinstance(opened, int):
        return opened
    session, explicit = opened
    entry = entry_file(session, explicit)
    return entry if isinstance(entry, int) else (session, entry)
