"""The static checker of SPEC §3: one pass over a loaded program that resolves names, types every expression,
tracks fallibility and reports every error it finds (it never stops at the first).

The work is split by concern into mixins, each in its own module: `env.Namespaces` (modules, `use`, types),
`names.Names` (values and variants), `exprs.Expressions`, `agentexprs.AgentExpressions`, `calls.Calls`,
`intrinsics.Intrinsics`, `tooluse.ToolUse` (`divine` and its tools), `stmts.Statements`, `patterns.Patterns` and
`items.Items`. `Checker` holds the shared
state: the prelude, the module scopes, the agents, and the diagnostics.

Checking is linear in the size of the program: every body is visited once (agents possibly earlier than their
turn, when an `await` needs their result type), and lookups are dictionary hits.
"""
from __future__ import annotations

from typing import Any

from ..diagnostics import Diagnostic, display_path
from .agentexprs import AgentExpressions
from .calls import Calls
from .env import ModuleScope, Namespaces
from .exprs import Expressions
from .intrinsics import Intrinsics
from .items import Items
from .names import Names
from .patterns import Patterns
from .prelude import load_prelude
from .stmts import Statements
from .symbols import AgentInfo, ToolTables
from .tooluse import ToolUse


class Checker(Namespaces, Names, Expressions, AgentExpressions, Calls, Intrinsics, ToolUse, Statements, Patterns,
              Items):
    def __init__(self, program: Any, configured_tools: ToolTables, test_file: bool) -> None:
        self.program = program
        self.direct_scores: set[int] = set()   # the `score` statements standing directly in an eval block
        self.first_replays: set[int] = set()   # the `replay` statements opening a test block
        self.test_file = test_file
        self.prelude = load_prelude()
        self.configured_tools = configured_tools
        self.diagnostics: list[Diagnostic] = []
        self.scopes: dict[int, ModuleScope] = {}
        self.root_scope: ModuleScope | None = None
        self.agents: dict[str, AgentInfo] = {}        # by name: `Agent<A>` names its agent
        self.agent_decls: dict[int, AgentInfo] = {}   # by declaration, duplicates included
        self.mcp_tools: dict[str, AgentInfo] = {}     # `#[mcp_tool]` names (SPEC §21), first agent of each
        self.update_closure: Any = None               # the closure literal given to `self.f.update` (E066)
        self.refs: list[tuple] = []                   # every name resolved, for the index (index.py)

    def error(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, span, hint=hint))

    def warn(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, file, span, severity="warning", hint=hint))

    def note(self, file: str, span: tuple | None, name: str, target: Any, where: Any = "h",
             define: bool = False) -> None:
        """Record that `name`, written at `where` inside `span`, denotes `target` (see index.py). One append:
        `sage check` pays nothing more for the index the language server builds from these."""
        self.refs.append((file, span, name, where, target, define))

    @staticmethod
    def shown_path(path: str | None) -> str:
        return display_path(path)

    def run(self) -> list[Diagnostic]:
        self.build_scopes(self.program)
        for module in self.program.modules:
            self.check_module(self.scopes[id(module)])
        return self.diagnostics
