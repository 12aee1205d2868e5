"""How a `tool X` block binds to a `[tools.X]` table of grove.toml (SPEC §8.1): the one place of the rule.

A block binds to the key equal to its name, else to the one key equal to it ignoring case; a block named like
a built-in tool (SPEC §7) binds by exact key only, so `[tools.shell]` never replaces the built-in `Shell`. Two
keys equal ignoring case (and neither exact) make the binding ambiguous (E090).

The checker binds each tool block once, when it reads the declaration, and records the key on the block's
`ToolInfo.server` and every `ToolRef.server`: the runtime never binds again. The other users of the rule name a
block before any checking (`sage tools inspect X`, the background start of the servers agents `use`, `sage
check --verify-tools`) and ask `settings.ToolSettings`, which applies this rule to grove.toml's tables.
"""
from __future__ import annotations

from typing import Iterable

# the tools of SPEC §7, declared as `tool` blocks in stdlib/prelude.sg and implemented in sagepy/tools
BUILTIN_TOOLS = ("Http", "Fs", "Shell", "Database")


class AmbiguousBinding(Exception):
    """A tool block that matches several `[tools.X]` keys ignoring case (E090)."""


def bound_key(name: str, keys: Iterable[str]) -> str | None:
    """The `[tools.X]` key among `keys` that tool block `name` binds to, or None when none does. Raises
    AmbiguousBinding when two keys match."""
    keys = list(keys)
    if name in keys:
        return name
    if name in BUILTIN_TOOLS:
        return None
    folded = name.lower()
    matches = [key for key in keys if key.lower() == folded]
    if len(matches) > 1:
        tables = ", ".join(f"[tools.{key}]" for key in sorted(matches))
        raise AmbiguousBinding(f"tool block {name} matches several tables in grove.toml: {tables}")
    return matches[0] if matches else None
