"""The static checker (SPEC §3): `check_program` resolves names, types and effects of a loaded program and
returns every diagnostic it finds (errors and warnings), in no particular order. It is the only resolver: what
it resolves is recorded on the AST for the runtime compiler."""
from __future__ import annotations

from typing import Any, Callable

from ..diagnostics import Diagnostic


def check_program(program: Any, *, project_config: dict | None = None, test_file: bool = False) -> list[Diagnostic]:
    """Check `program` (as returned by `sagepy.loader.load_program`). `project_config` is the parsed grove.toml
    (for the tool-binding rules E086/W084); `test_file` marks the root module as a test file."""
    from .checker import Checker
    return Checker(program, project_config, test_file).run()


def check_entry(entry_path: str, project: Any = None, test_file: bool = False,
                loaded: Callable[[Any], None] | None = None) -> tuple[Any, list[Diagnostic], dict[str, Callable]]:
    """Load, check and link the program of `entry_path`, stopping at the first stage that finds errors: the
    work of `sage check`, and all that `sage run` and `sage test` do before compiling. Returns the program, the
    diagnostics and the Python functions of its `extern fn`s. `loaded(program)` runs as soon as the program has
    loaded without errors."""
    from ..link import link_externs
    from ..loader import load_program
    program = load_program(entry_path)
    diags = list(program.diagnostics)
    if loaded is not None and not diags:
        loaded(program)
    if project is not None:
        diags.extend(project.config_diagnostics())
    if _has_errors(diags):
        return program, diags, {}
    diags.extend(check_program(program, project_config=project.config if project is not None else None,
                               test_file=test_file))
    if _has_errors(diags):
        return program, diags, {}
    program.resolved = True   # every name is resolved and annotated: what `--verify-tools` compares
    externs, link_errors = link_externs(program, project)
    return program, diags + link_errors, externs


def _has_errors(diags: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diags)
