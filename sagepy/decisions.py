"""A person's approval decision (SPEC §17.1, §17.4): the one typed value every answerer builds — the terminal,
`sage runs approve|deny`, the web console, `mock approve`, the policy's automatic denial — and the journal
JSON it is recorded as (`{"approved", "by", "at"?, "always"?, "reason"?}`).

Who decided is `$USER@<host>` for a person at this machine (`person()`), `console (<user>@<host>)` for one
using `sage ui`, `mock` under `sage test`, `policy` for the automatic denial, `journal` for a record written by
hand.
"""
from __future__ import annotations

import getpass
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

DENIED = "denied"   # the reason of a denial given none


def person() -> str:
    """Who answers at this terminal, or with `sage runs approve|deny|answer`: `$USER@<host>`."""
    try:
        user = os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):   # no user name for this uid
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def console_person() -> str:
    """Who answers in the web console (`sage ui`): the console, for the OS user that serves it."""
    return f"console ({person()})"


def now_utc() -> str:
    """When a decision was taken, as the journal records it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# A denial journaled by this sagepy says that its call took no step number (SPEC §17.1: the model's next turn
# is the next step); a denial journaled before says nothing, and its call kept the number it had.
NUMBERED = "call_step"


def takes_number(decision: dict) -> bool:
    """Whether the call an approval decided takes a step number: approved, or denied by an older sagepy."""
    return bool(decision.get("approved")) or decision.get(NUMBERED) is not False


@dataclass(frozen=True)
class Decision:
    """Approved or denied, by whom, when (None: not recorded, as for mocks), why, and whether the approval holds
    for the rest of the run (`always`)."""
    approved: bool
    by: str
    at: str | None = None
    reason: str | None = None
    always: bool = False

    @classmethod
    def approve(cls, by: str, always: bool = False, at: str | None = None) -> "Decision":
        return cls(True, by, now_utc() if at is None else at, None, always)

    @classmethod
    def deny(cls, by: str, reason: str | None = None, at: str | None = None) -> "Decision":
        return cls(False, by, now_utc() if at is None else at, reason or DENIED)

    @classmethod
    def from_outcome(cls, outcome: Any) -> "Decision":
        """The decision a journal record holds; a record written by hand as a bare value names the decision by
        its truth."""
        if not isinstance(outcome, dict):
            return cls(bool(outcome), "journal")
        approved = bool(outcome.get("approved"))
        return cls(approved, str(outcome.get("by") or ""), outcome.get("at"),
                   None if approved else str(outcome.get("reason") or DENIED), bool(outcome.get("always")))

    def outcome(self) -> dict[str, Any]:
        """The journal's JSON of the decision."""
        found: dict[str, Any] = {"approved": self.approved, "by": self.by}
        if self.at is not None:
            found["at"] = self.at
        if self.approved:
            if self.always:
                found["always"] = True
        else:
            found["reason"] = self.reason or DENIED
            found[NUMBERED] = False
        return found
