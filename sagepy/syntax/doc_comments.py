"""`///` doc comments (SPEC §1.1): consecutive `///` lines directly above an item, a tool function or an agent's
field (the description of a served agent's parameter, SPEC §21).

The grammar skips every `//` comment, so the parser attaches doc comments after building the tree: the lines
right above the start of each item (its first attribute, for a tool function or a served agent) that begin with
`///`, with `///` and one following space removed, joined with `\\n`. Anywhere else a `///` line is an ordinary comment.
"""
from __future__ import annotations

from . import ast as A

_DOCUMENTED = (A.RecordDecl, A.EnumDecl, A.ConstDecl, A.FnDecl, A.ToolDecl, A.AgentDecl, A.SupervisorDecl,
               A.ProtocolDecl)


def attach_doc_comments(items: list, text: str) -> None:
    """Set `doc` on every documented item of a file, and on the functions of its tool blocks."""
    lines: list[str] | None = None
    for item in items:
        if not isinstance(item, _DOCUMENTED) or item.span is None:
            continue
        if lines is None:
            if "///" not in text:
                return
            lines = text.split("\n")
        attrs = getattr(item, "attrs", None)
        item.doc = doc_above(lines, attrs[0].span[0] if attrs else item.span[0])
        if isinstance(item, A.AgentDecl):
            for field in item.fields:
                if field.span is not None:
                    field.doc = doc_above(lines, field.span[0])
        elif isinstance(item, A.ToolDecl):
            for fn in item.fns:
                if fn.span is not None:
                    fn.doc = doc_above(lines, fn.span[0])


def doc_above(lines: list[str], line: int) -> str | None:
    """The doc comment ending on the line above 1-based `line`, or None."""
    i = line - 2
    found: list[str] = []
    while i >= 0:
        stripped = lines[i].strip()
        if not stripped.startswith("///"):
            break
        body = stripped[3:]
        found.append(body[1:] if body.startswith(" ") else body)
        i -= 1
    if not found:
        return None
    return "\n".join(reversed(found))
