"""`sage explain CODE`: the long explanation of a diagnostic or runtime error code, from sagepy/errorcodes/."""
from __future__ import annotations

import sys
from typing import Any


def add_arguments(parser: Any) -> None:
    parser.add_argument("code", metavar="CODE", help="an error or warning code, e.g. E013")


def run_explain_command(args: Any) -> int:
    from ..errorcodes import explain_text, lookup
    entry = lookup(args.code)
    if entry is None:
        sys.stderr.write(f"error: unknown error code '{args.code}'\n"
                         "  = help: codes look like E013 or W008; docs/errors.md in the sagepy repository "
                         "lists them all\n")
        return 1
    sys.stdout.write(explain_text(entry))
    return 0
