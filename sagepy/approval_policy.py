"""`[approvals]` of grove.toml (SPEC §17.1): which tool calls need a person's approval before they are made.

Each key other than `calls` and `prompt` names a tool — a tool block, a built-in tool, or a dynamic connection
by its configured `name` — and says which of its functions need approval: `"destructive"` (those whose safety
class is destructive), `"always"` (all of them) or an array of function names in which `*` matches any run of
characters. `calls = "model"` (the default) limits the policy to the calls a model asks for; `"all"` adds the
program's own calls. `prompt = "never"` keeps sagepy from asking at a terminal.

Values are checked when grove.toml is read (E090); whether a key names a tool of the program is known only
once the program is loaded (`unknown_keys`, W085), since a dynamic connection's name is known only at run time.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Collection

from .binding import BUILTIN_TOOLS
SETTINGS = ("calls", "prompt")   # the keys that name no tool
_CALLS = ("model", "all")
_PROMPT = ("auto", "never")


class Rule:
    """What one key asks for: every function, the destructive ones, or those matching a pattern."""

    __slots__ = ("kind", "patterns")

    def __init__(self, kind: str, patterns: tuple[re.Pattern, ...] = ()) -> None:
        self.kind = kind            # "always" | "destructive" | "names"
        self.patterns = patterns

    def covers(self, fn: str, safety: Callable[[], str]) -> bool:
        if self.kind == "always":
            return True
        if self.kind == "destructive":
            return safety() == "destructive"
        return any(p.fullmatch(fn) for p in self.patterns)


class ApprovalPolicy:
    """The parsed `[approvals]` table; `rules` is empty without one (nothing needs approval)."""

    __slots__ = ("rules", "calls", "prompt", "spans")

    def __init__(self) -> None:
        self.rules: dict[str, Rule] = {}
        self.calls = "model"
        self.prompt = "auto"
        self.spans: dict[str, tuple | None] = {}   # key -> where grove.toml writes it, for W085

    def rule(self, names: Collection[str]) -> Rule | None:
        """The rule of the first of `names` (a tool's names: its block, its `[tools.X]` key) that has one."""
        for name in names:
            found = self.rules.get(name)
            if found is not None:
                return found
        return None

    def needs(self, names: Collection[str], fn: str, source: str, safety: Callable[[], str]) -> bool:
        """Whether a call of `fn` of the tool known by `names`, asked for by `source` (`model` or `program`),
        needs approval. `safety` gives the function's class; it is asked only for a `"destructive"` rule."""
        if not self.rules or (source != "model" and self.calls != "all"):
            return False
        found = self.rule(names)
        return found is not None and found.covers(fn, safety)

    def unknown_keys(self, known: Collection[str]) -> list[str]:
        """The tool keys that name none of `known` (the program's tool blocks and the `[tools.X]` tables) nor
        a built-in tool."""
        return [key for key in self.rules if key not in known and key not in BUILTIN_TOOLS]


def pattern(name: str) -> re.Pattern:
    """A function-name pattern: `*` matches any run of characters (none included), everything else itself."""
    return re.compile(".*".join(re.escape(part) for part in name.split("*")), re.DOTALL)


def parse_approvals(data: dict, report: Callable[[str, str | None, str | None], None],
                    locate: Callable[[str], tuple | None]) -> ApprovalPolicy:
    """The policy of an `[approvals]` table; each invalid value is reported (`report(message, key, hint)`,
    an E090) and left out. `locate(key)` is where grove.toml writes a key."""
    policy = ApprovalPolicy()
    for key, value in data.items():
        if key in SETTINGS:
            choices = _CALLS if key == "calls" else _PROMPT
            if value in choices:
                setattr(policy, key, value)
            else:
                report(f"[approvals] {key} must be one of {', '.join(f'{c!r}' for c in choices)}, "
                       f"found {_describe(value)}".replace("'", '"'), key, None)
            continue
        rule = _rule(value)
        if rule is None:
            report(f'[approvals] {key} must be "destructive", "always" or an array of function names, '
                   f"found {_describe(value)}", key, None)
            continue
        policy.rules[key] = rule
        policy.spans[key] = locate(key)
    return policy


def _rule(value: Any) -> Rule | None:
    if value in ("always", "destructive"):
        return Rule(value)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return Rule("names", tuple(pattern(v) for v in value))
    return None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "an empty array" if not value else "an array with an element that is not a function name"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return str(value)
    return "a table" if isinstance(value, dict) else type(value).__name__
