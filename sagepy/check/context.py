"""The checker as its helpers see it: `Checking`, the one declared interface between the visitor (`Checker`,
checker.py) and the modules of functions it delegates families of nodes to (names, items, agentexprs,
intrinsics, tooluse, patterns).

A helper takes a `Checking` as its first argument and reaches into the checker only through it;
tests/test_architecture.py checks that every attribute a helper reads of it is declared here.
"""
from __future__ import annotations

from typing import Any, Protocol

from ..core import types as T
from .body import Body, Locals
from .env import Namespaces
from .prelude import Prelude
from .symbols import AgentInfo, ToolInfo, ToolTables


class Checking(Protocol):
    """The checker while it checks one program."""

    prelude: Prelude
    ns: Namespaces                       # the first pass: module scopes, `use`, types, agents
    configured_tools: ToolTables         # the `[tools.<Name>]` tables of grove.toml
    direct_scores: set[int]              # the `score` statements standing directly in an eval block
    first_replays: set[int]              # the `replay` statements opening a test block
    mcp_tools: dict[str, AgentInfo]      # `#[mcp_tool]` names (SPEC §21), first agent of each

    def error(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        """Report an error."""
        ...

    def warn(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        """Report a warning."""
        ...

    def note(self, file: str, span: tuple | None, name: str, target: Any, where: Any = "h",
             define: bool = False) -> None:
        """Record that `name`, written at `where` inside `span`, denotes `target` (see index.py). One append:
        `sage check` pays nothing more for the index the language server builds from these."""
        ...

    def expr(self, node: Any, cx: Body, lc: Locals, expected: T.Type | None = None) -> T.Type:
        """The type of an expression, `expected` a hint that flows inward."""
        ...

    def expect(self, node: Any, expected: T.Type, cx: Body, lc: Locals) -> T.Type:
        """Type `node` with `expected` as hint and report E018 when it does not fit."""
        ...

    def mismatch(self, expected: T.Type, actual: T.Type, span: tuple, cx: Body, code: str = "E018",
                 hint: str | None = None) -> None:
        """Report E018 (or `code`): `actual` where `expected` is needed."""
        ...

    def e_Literal(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        """The type of a literal."""
        ...

    def skip_fields(self, fields: list, cx: Body, lc: Locals) -> None:
        """Type the values of fields already in error, for the errors inside them."""
        ...

    def block_type(self, block: Any, cx: Body, lc: Locals, expected: Any = None, discard: bool = False) -> T.Type:
        """The type of a block (NEVER when it never completes); with `discard`, its statements only."""
        ...

    @staticmethod
    def has_tail(block: Any) -> bool:
        """True when the block ends in a value: a trailing expression or a final `match` statement."""
        ...

    def loop_jump(self, word: str, span: tuple, cx: Body) -> bool:
        """Check a `break` or `continue` (`word`) against the enclosing loop."""
        ...

    def return_value(self, value: Any, span: tuple, cx: Body, lc: Locals) -> None:
        """Check a `return` of `value` (None: no value) against the body's result type."""
        ...

    def skip_args(self, node: Any, cx: Body, lc: Locals) -> None:
        """Type the arguments of a call that is already in error, for the errors inside them."""
        ...

    def prelude_value(self, name: str) -> bool:
        """Whether `name` is a prelude function, constant or intrinsic."""
        ...

    def note_tool_member(self, obj: Any, fa: Any, tool: ToolInfo, cx: Body) -> None:
        """Record the references of a `Tool.fn` member access (index.py)."""
        ...

    def check_agent(self, agent: AgentInfo) -> None:
        """Check an agent's declaration and handlers now (an `await` needs its result type before its turn)."""
        ...
