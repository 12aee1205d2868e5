"""One `Session` per command (DESIGN.md "One resolver, one Session"; Jinja2's `Environment` is the model).

A session is built once from the project: grove.toml parsed into typed settings, the `SAGE_*` variables read
once from a snapshot of the environment taken after `.env` is loaded (sagepy.settings), and the AST cache
directory they select. It loads and checks programs, and `build_runtime` is the one factory of a Runtime
with its effects chain and store, which `sage run`, `sage test` (and its pytest plugin) use alike.

Importing this module is cheap: the runtime, the checker and the parser are imported when first needed.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .project import Project, find_project
from .settings import Overrides, Settings

if TYPE_CHECKING:
    from .diagnostics import Diagnostic
    from .check.index import ProgramIndex
    from .loader import Program, Sources
    from .runtime.agents import Runtime
    from .runtime.persistence import StateStore


class Session:
    """What one `sage` command shares: the project, its settings and the environment snapshot they came
    from, and the AST cache they select. Nothing in it changes while the command runs."""

    def __init__(self, project: Project, environ: Mapping[str, str] | None = None) -> None:
        self.project = project
        self.overrides = Overrides(os.environ if environ is None else environ)
        self.settings = Settings.from_project(project, self.overrides)

    @classmethod
    def open(cls, path: str | None) -> tuple["Session", str | None]:
        """The session of the project PATH lies in (SPEC §10.1), and PATH itself when it names a file.
        `.env` is loaded first, so that its variables are part of the snapshot. Raises ProjectError."""
        project, explicit = find_project(path)
        return cls(project), explicit

    @property
    def root(self) -> str:
        return self.settings.root

    def entry_file(self) -> str:
        return self.settings.entry_file()

    # ---------------------------------------------------------------- programs

    def load(self, path: str, sources: Sources | None = None) -> Program:
        from .loader import load_program
        return load_program(path, cache_dir=self.overrides.cache_dir, sources=sources)

    def check(self, program: Program, test_file: bool = False, index: ProgramIndex | None = None) -> list[Diagnostic]:
        from .check import check_program
        diags = check_program(program, tools=self.settings.tools, test_file=test_file, index=index)
        return diags + self._approval_keys(program)

    def _approval_keys(self, program: Program) -> list[Diagnostic]:
        """W085 for an `[approvals]` key that names no tool of the program (SPEC §17.1)."""
        policy = self.settings.approvals
        if policy is None:
            return []
        from .diagnostics import Diagnostic
        from .syntax import ast as A
        known = {item.name for module in program.modules for item in module.items if isinstance(item, A.ToolDecl)}
        known.update(self.settings.tools)
        return [Diagnostic("W085", f"[approvals] {key} names no tool of this program; it applies only to a dynamic "
                           f"connection of that name", self.settings.grove_path, policy.spans.get(key),
                           severity="warning")
                for key in policy.unknown_keys(known)]

    def analyze(self, path: str, test_file: bool = False, sources: Sources | None = None,
                index: ProgramIndex | None = None, link: bool = True) -> tuple[Program, list[Diagnostic]]:
        """Load, check and link the program of `path`: the work of `sage check`, and all that `sage run` and
        `sage test` do before compiling. Each stage runs only when the ones before it found no error: loading
        and grove.toml's diagnostics, the checker (the only resolver: it records on the AST what the runtime
        needs, and `program.resolved` says so), and linking (the Python function of every `extern fn`, in
        `program.externs`; E093 for each one missing).
        `sources` reads the files (the language server's unsaved buffers); `index` is filled by the checker;
        `link=False` stops after checking (linking imports the program's Python modules)."""
        program = self.load(path, sources)
        program.resolved = False
        program.externs = {}
        diags = list(program.diagnostics)
        diags.extend(self.settings.diagnostics)
        if _has_errors(diags):
            return program, diags
        diags.extend(self.check(program, test_file=test_file, index=index))
        if _has_errors(diags):
            return program, diags
        program.resolved = True
        if not link:
            return program, diags
        from .link import link_externs
        program.externs, link_errors = link_externs(program, self.settings)
        return program, diags + link_errors

    # ---------------------------------------------------------------- the runtime

    def trace_target(self, trace_file: str | None, trace_stderr: bool) -> tuple[str | None, bool]:
        """Where `sage run` writes trace events: the flags, else SAGE_TRACE_FILE / SAGE_TRACE."""
        return trace_file or self.overrides.trace_file, trace_stderr or self.overrides.trace

    def build_runtime(self, *, out: Callable[[str], None] | None = None, err: Callable[[str], None] | None = None,
                      trace: tuple[str | None, bool] = (None, False), persistent: bool = False,
                      store: StateStore | None = None, durable: bool = False, mocks: Any = None, real_llm: bool = False,
                      program_args: list[str] | None = None, export: str | None = None,
                      io: dict[str, Callable[..., Any]] | None = None,
                      cassette: Any = None) -> Runtime:
        """The one place a Runtime, its effects chain (assembled here, once: `runtime.effects`) and its store
        (`runtime.store`) are built.

        `persistent`: `@persistent` fields use the project's store (`open_store` says what it raises);
        `store`: an opened one, the caller's; neither: a fresh in-memory one; `durable`: the chain journals every step into that store
        (`runtime.effects.journal`, which `runtime.durable` starts);
        `mocks`: the test's mock queues (`sage test`), consulted before the real world; `program_args`: what
        `args()` returns (SPEC §6.1: what follows `--` on the `sage run` line, `[]` under `sage test`); `export`:
        the entry file as displayed, for `sage run`, whose spans are exported when an OTLP endpoint is set; `io`:
        the run's own functions for some `io` builtins (`now_ms`, `env`, `read_line`, …: its host's clock,
        environment or stdin), instead of the process's; `cassette`: the recorded run written or replayed
        (sagepy.effects.cassette, SPEC §22.2)."""
        from .builtins import load_io_builtins
        from .effects import build_effects
        from .runtime.agents import Runtime
        if store is None and persistent:
            store = self.open_store()   # first: it is what can refuse to open
        runtime = Runtime(out=out, err=err, store=store, program_args=program_args)
        runtime.mocks = mocks
        journal = None
        if durable:
            from .effects.journal import Journal
            journal = Journal(runtime.store.backend, runtime, self.settings.secret_env_names)
        trace_path, trace_stderr = trace
        build_effects(runtime, self.settings, {**load_io_builtins(), **(io or {})}, trace_path=trace_path, trace_stderr=trace_stderr,
                      mocks=mocks, real_llm=real_llm, journal=journal, export=export, cassette=cassette)
        return runtime

    def open_store(self) -> StateStore:
        """The project's `@persistent` store: the SQLite file or PostgreSQL database of `[persistence]`
        (sagepy.store.config), else process memory. Raises sagepy.store.base.Unavailable (Unreachable) or
        NewerFormat when the store cannot serve, StoreConfigError when it cannot be tried
        (`store_open_failure` words them)."""
        from .runtime.persistence import StateStore
        target = self.settings.state_target()
        if target is None:
            return StateStore()
        from .store.config import open_store
        return StateStore(open_store(target))


def store_open_failure(target: Any, exc: Exception) -> str:
    """The `sage run` message for a store that cannot be opened or used (SPEC §4.8, §14, §14.1)."""
    from .store.config import open_failure
    return open_failure(target, exc)


def _has_errors(diags: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diags)
