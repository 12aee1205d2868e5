"""What the command groups with subcommands (`sage tools …`, `sage runs …`) do before their subcommand: insist
on one, and open the project's session."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session import Session


def open_group(args: argparse.Namespace, group: str, subcommands: tuple[str, ...]) -> tuple[str, Session] | int:
    """(the subcommand, the project's session), or the exit code after the error is written: 2 without a
    subcommand, 1 when the project cannot be opened."""
    from ..project import ProjectError
    from ..session import Session
    command = getattr(args, f"{group}_command", None)
    if command is None:
        sys.stderr.write(f"usage: sage {group} {{{','.join(subcommands)}}} …\n"
                         f"sage {group}: error: a subcommand is required\n")
        return 2
    try:
        session, _ = Session.open(None)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return command, session
