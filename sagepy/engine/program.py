"""Compile once, run many (SPEC §20): `compile` loads, checks, links and compiles a program into an immutable
`Program`; `Program.run` runs it with a Host of the caller's, as many times and from as many threads at once
as the caller likes. The compiled closures hold no run state: everything a run changes lives on its Runtime,
which each run builds for itself (sagepy.engine.execute).
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from ..diagnostics import Diagnostic
    from ..session import Session
    from .host import Host
    from .outcome import RunOutcome


class CheckFailed(Exception):
    """The program has errors; `diagnostics` lists them all (each with `code`, `message`, `file`, `line`,
    `column`, `severity`). `modules`: the files of the program as far as it could be loaded."""

    def __init__(self, diagnostics: list[Diagnostic], modules: Sequence[str] = (), loaded: Any = None) -> None:
        self.diagnostics = diagnostics
        self.modules = list(modules)
        self.loaded = loaded   # the program as far as it was loaded (sagepy.loader.Program), or None
        errors = [d for d in diagnostics if d.severity == "error"]
        first = errors[0] if errors else None
        super().__init__(f"{len(errors)} error(s); first: {first.code} {first.message}" if first is not None
                         else "the program has errors")


class Program:
    """A checked and compiled program. Immutable: runs never change it, so any number of threads may run it
    at once (each run has its own agents, journal position, mocks and output)."""

    __slots__ = ("session", "path", "entry", "code", "root", "modules", "uses", "_version", "_lock")

    def __init__(self, session: Session, path: str, entry: str | None, code: Any, root: Any,
                 modules: Sequence[str], uses: frozenset[str]) -> None:
        init = object.__setattr__   # the one place a Program's attributes are set
        init(self, "session", session)   # the project's settings and environment snapshot
        init(self, "path", path)         # the entry file
        init(self, "entry", entry)       # the agent `run <Name>;` names, when the file has one
        init(self, "code", code)         # the compiled program (sagepy.runtime.compile.Compiler)
        init(self, "root", root)         # the entry module's checked AST
        init(self, "modules", tuple(modules))
        init(self, "uses", uses)         # the tool blocks some agent `use`s: their servers start with a run
        init(self, "_version", None)     # computed on first use, once
        init(self, "_lock", threading.Lock())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Program is immutable: cannot set {name}")

    @property
    def tests(self) -> list:
        """The test blocks of a test file: (declaration, compiled body, namespace) each."""
        return self.code.tests

    @property
    def version(self) -> str:
        """The program version of SPEC §14.2, over the files this program was compiled from."""
        with self._lock:
            if self._version is None:
                from ..workers.version import program_version, version_files
                object.__setattr__(self, "_version",
                                   program_version(self.session.root, version_files(self.session, self.modules)))
            return self._version

    def agent(self, name: str) -> Any:
        """The compiled agent (or supervisor) `name` of the entry module, or None."""
        scope = self.code.root_scope
        entity = scope.lookup(name) if scope is not None else None
        if entity is None or id(getattr(entity, "decl", None)) not in self.code.compiled:
            return None
        return self.code.runtime_item(entity)

    def run(self, *, args: Sequence[str] | Mapping[str, Any] = (), entry: str | None = None,
            host: Host | None = None, run_id: str | None = None, resume: bool = False) -> RunOutcome:
        """Run the entry agent to its end (or agent `entry`, its fields given as a JSON dict in `args`);
        `run_id` with `resume=True` resumes that durable run. Never raises for the program's own failures."""
        from .execute import execute
        from .host import Host
        return execute(self, host if host is not None else Host(), args, entry, run_id, resume)


def compile(path: str | os.PathLike, *, settings: Mapping[str, str] | None = None,
            require_run: bool = True) -> Program:
    """Load, check, link and compile the `.sg` file or project directory `path` (SPEC §20). `settings`: the
    `SAGE_*` variables to use instead of the process environment's; `require_run`: the entry file must end
    with `run <Agent>;` (a program only served or evaluated need not). Raises CheckFailed."""
    from ..diagnostics import Diagnostic
    from ..project import ProjectError
    from ..session import Session
    from ..project import find_project
    try:
        project, explicit = find_project(os.fspath(path))
    except ProjectError as exc:
        raise CheckFailed([Diagnostic("", str(exc), os.fspath(path), None)]) from None
    session = Session(project, None if settings is None else {**os.environ, **settings})
    entry = explicit or session.entry_file()
    if not os.path.isfile(entry):
        raise CheckFailed([Diagnostic("", f"no entry file found (looked for {entry})", entry, None)])
    return compile_session(session, entry, require_run=require_run)


def analyze(session: Session, entry: str, *, test_file: bool | None = None, sources: Any = None,
            index: Any = None, link: bool = True) -> tuple[Any, list[Diagnostic]]:
    """Load, check and (with `link`) link the program of `entry` without compiling it: what `sage check`, the
    language server and a queued submission need. `test_file`: check test and eval blocks too (default: by
    the file's name); `sources`: the files' text where it is not the disk's (an editor's unsaved buffers);
    `index`: filled by the checker with every name's definition and uses. Returns the loaded program (its
    `modules`, its `root`) and every diagnostic; it raises nothing for the program's errors."""
    if test_file is None:
        from ..testfiles import EVAL_SUFFIX, TEST_SUFFIX
        test_file = entry.endswith((TEST_SUFFIX, EVAL_SUFFIX))
    return session.analyze(entry, test_file=test_file, sources=sources, index=index, link=link)


def compile_session(session: Session, entry: str, *, require_run: bool = True, test_file: bool = False) -> Program:
    """`compile` for a command that has opened its session already; `test_file`: a `*_test.sg` file, whose
    test blocks are compiled too (`program.tests`)."""
    from ..builtins import load_builtins, load_constants, load_io_builtins
    from ..diagnostics import Diagnostic
    from ..runtime.compile import Compiler
    from ..syntax import ast as A
    loaded, diags = analyze(session, entry, test_file=test_file)
    modules = [m.path for m in loaded.modules]
    errors = any(d.severity == "error" for d in diags)
    run_decl = None
    if loaded.root is not None:
        for item in loaded.root.items:
            if isinstance(item, A.RunDecl):
                run_decl = item
    if run_decl is None and require_run and not errors:
        diags.append(Diagnostic("E041", "the entry file has no `run` declaration", entry, None,
                                hint="end the file with `run Main;` naming the entry agent"))
        errors = True
    if errors:
        raise CheckFailed(diags, modules, loaded)
    code = Compiler(None, loaded.externs, load_builtins(), load_constants(), load_io_builtins())
    code.compile_program(loaded)
    uses = frozenset(name for module in loaded.modules for item in module.items if isinstance(item, A.AgentDecl)
                     for name, _span in item.uses)
    return Program(session, entry, run_decl.name if run_decl is not None else None, code, loaded.root, modules,
                   uses)
