"""The static checker (SPEC §3): `check_program` resolves names, types and effects of a loaded program and
returns every diagnostic it finds (errors and warnings), in no particular order. It is the only resolver: what
it resolves is recorded on the AST for the runtime compiler."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection

from ..diagnostics import Diagnostic

if TYPE_CHECKING:
    from .index import ProgramIndex
    from .symbols import ToolTables


def check_program(program: Any, *, tools: ToolTables | Collection[str] = (), test_file: bool = False,
                  index: ProgramIndex | None = None) -> list[Diagnostic]:
    """Check `program` (as returned by `sagepy.loader.load_program`). `tools` holds the `[tools.<Name>]`
    tables of grove.toml (`Settings.tools`, or bare keys), which the checker binds each tool block to once
    (SPEC §8.1: recorded on its `ToolRef`s; E090 when ambiguous), with the rules E086/W084; `test_file` marks the root module
    as a test file. With `index`, that `ProgramIndex` is filled with every declaration and use of each name
    (what the language server queries). The checker recurses as deep as the program nests, so it runs on a
    large-stack thread."""
    from ..deepstack import call_on_deep_stack
    from .checker import Checker
    from .symbols import TableKeys
    checker = Checker(program, tools if hasattr(tools, "binding") else TableKeys(tools), test_file)
    diagnostics = call_on_deep_stack(checker.run, "check")
    if index is not None:
        index.fill(checker)
    return diagnostics
