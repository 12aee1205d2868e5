"""The static checker (SPEC §3): `check_program` resolves names, types and effects of a loaded program and
returns every diagnostic it finds (errors and warnings), in no particular order."""
from __future__ import annotations

from typing import Any

from ..diagnostics import Diagnostic


def check_program(program: Any, *, project_config: dict | None = None, test_file: bool = False) -> list[Diagnostic]:
    """Check `program` (as returned by `sagepy.loader.load_program`). `project_config` is the parsed grove.toml
    (for the tool-binding rules E086/W084); `test_file` marks the root module as a test file."""
    from .checker import Checker
    return Checker(program, project_config, test_file).run()
