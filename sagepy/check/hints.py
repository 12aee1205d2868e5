"""The help line under an unknown-field error (E026, E027, E032, E062): the closest field name when one is
close enough (the checker's did-you-mean cutoff), else the fields there are, so that a short misspelling
(`p.xx` on a record with `x` and `y`) still says what to write."""
from __future__ import annotations

from typing import Iterable

from ..diagnostics import did_you_mean

# a longer list would bury the line; past it, only a close match is offered
_LISTED_FIELDS_MAX = 8


def field_hint(name: str, fields: Iterable[str], owner: str) -> str | None:
    """`owner` names what has the fields, as the message does: "record `P`", "agent `A`"."""
    names = list(fields)
    close = did_you_mean(name, names)
    if close is not None or not names or len(names) > _LISTED_FIELDS_MAX:
        return close
    return f"{owner} has field{'s' if len(names) > 1 else ''} " + ", ".join(f"`{n}`" for n in names)
