"""`sage test` (SPEC §9): discovery, selection, concurrent execution with timeouts, results and summary.

Each test runs on its own runtime from the command's session: its own Runtime (agent numbering, captured
output), its own effects (mock queues, MCP connections opened by its first unmocked call and closed when it
ends) and its own in-memory persistence store.
"""
from __future__ import annotations

import os
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..deepstack import start_thread
from ..diagnostics import Diagnostic, display_path
from ..effects.step import set_current_context
from ..runtime.agents import AgentInstance
from ..core.errors import AgentCancelled, SageRaise, TestAbort
from ..core.values import ErrorValue

if TYPE_CHECKING:
    from ..session import Session


class TestCase:
    """`replay`: the cassette the test's first statement `replay "file";` names, as a path (SPEC §22.2)."""

    __slots__ = ("file", "name", "body", "serial", "session", "replay")

    def __init__(self, file: str, name: str, body: Any, serial: bool, session: Session,
                 replay: str | None = None) -> None:
        self.file = file
        self.name = name
        self.body = body
        self.serial = serial
        self.session = session
        self.replay = replay

    @property
    def label(self) -> str:
        return f"{display_path(self.file)}::{self.name}"


class TestResult:
    """The outcome of one test: status "pass", "fail", or "error" (its file failed to load or check)."""

    __slots__ = ("label", "status", "detail", "output", "duration", "name", "file")

    def __init__(self, label: str, status: str, detail: str = "", output: list[str] | None = None,
                 duration: float = 0.0, name: str = "", file: str = "") -> None:
        self.label = label
        self.status = status
        self.detail = detail
        self.output = output or []
        self.duration = duration
        self.name = name
        self.file = file


class LoadedFile:
    """A test file, compiled: its test cases, or when it has errors the names its tests are declared with."""

    def __init__(self, path: str, cases: list[TestCase], diagnostics: list[Diagnostic],
                 declared: list[str]) -> None:
        self.path = path
        self.cases = cases
        self.diagnostics = diagnostics
        self.declared = declared

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def error_results(self) -> list[TestResult]:
        """One ERROR per declared test (SPEC §9.4); a file whose test names cannot be read stands as one."""
        if not self.declared:
            return [TestResult(f"{display_path(self.path)}: file has errors", "error", FILE_HAS_ERRORS,
                               file=self.path)]
        return [TestResult(f"{display_path(self.path)}::{name}", "error", FILE_HAS_ERRORS, name=name,
                           file=self.path) for name in self.declared]


FILE_HAS_ERRORS = "file has errors"
# A test declaration at the start of a line: how a file that does not parse still names its tests.
_TEST_DECLARATION = re.compile(r'^[ \t]*test[ \t]+"((?:[^"\\\n]|\\.)*)"', re.MULTILINE)


def load_test_file(path: str, session: Session) -> LoadedFile:
    from ..engine.program import CheckFailed, compile_session
    try:
        program = compile_session(session, path, require_run=False, test_file=True)
    except CheckFailed as failed:
        declared = _declared_names(failed.loaded, path) if failed.loaded is not None else []
        return LoadedFile(path, [], failed.diagnostics, declared)
    cases = [TestCase(path, decl.name, body, decl.annotation == "serial", session, _replayed(decl, path))
             for decl, body, env in program.tests if os.path.abspath(env.path) == os.path.abspath(path)]
    return LoadedFile(path, cases, [], [case.name for case in cases])


def _replayed(decl: Any, path: str) -> str | None:
    """The cassette of a test that opens with `replay "file";`, relative to the test file."""
    from ..syntax import ast as A
    stmts = decl.body.stmts
    if stmts and type(stmts[0]) is A.ReplayStmt:
        return os.path.join(os.path.dirname(os.path.abspath(path)), stmts[0].path)
    return None


def _declared_names(program: Any, path: str) -> list[str]:
    from ..syntax import ast as A
    module = next((m for m in program.modules if os.path.abspath(m.path) == os.path.abspath(path)), None)
    if module is None:
        return []
    names = [item.name for item in module.items if isinstance(item, A.TestDecl)]
    if names or module.items:
        return names
    return [match.group(1) for match in _TEST_DECLARATION.finditer(module.source)]


def run_case(case: TestCase, timeout_ms: int, real_llm: bool = False, replay: str | None = None) -> TestResult:
    """Run one test to completion (or timeout); never raises. `replay`: `sage test --replay FILE`, the
    cassette that answers the steps no mock answers, unless the test names its own."""
    from ..effects.cassette import Cassette, CassetteRefused
    from ..effects.mocks import MockQueues
    cassette = None
    if case.replay or replay:
        try:
            cassette = Cassette.replay(case.replay or replay)
        except CassetteRefused as exc:
            return TestResult(case.label, "fail", str(exc), [], 0.0, case.name, case.file)
    output: list[str] = []
    lock = threading.Lock()

    def capture(text: str) -> None:
        with lock:
            output.extend(text.split("\n"))

    from ..engine.execute import runtime_for
    from ..engine.host import Host
    # a test's host: its output captured, its mock queues, whose layer goes first in its chain
    mocks = MockQueues()
    runtime = runtime_for(case.session, Host(out=capture, err=capture, mocks=mocks, real_llm=real_llm,
                                             telemetry=False, cassette=cassette))
    effects = runtime.effects
    ctx = AgentInstance(runtime, None, 0, None)
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def body() -> None:
        set_current_context(ctx)
        try:
            case.body.run(ctx)
        except TestAbort as abort:
            outcome["abort"] = abort
        except SageRaise as exc:
            outcome["error"] = exc.error
        except AgentCancelled:
            outcome["cancelled"] = True
        except RecursionError:
            outcome["error"] = ErrorValue("Runtime", "call depth exceeded", "E205")
        except BaseException as exc:  # a bug in sagepy must fail the test, not the runner
            outcome["error"] = ErrorValue("Runtime", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            done.set()

    started = time.monotonic()
    start_thread(body, f"test {case.name}")
    finished = done.wait(timeout_ms / 1000)
    duration = time.monotonic() - started
    mocks.end()
    ctx.request_stop()
    runtime.stop_all()
    if not finished:
        done.wait(1.0)
    runtime.shutdown(grace_seconds=0.5)
    effects.close()
    detail = ""
    if cassette is not None and cassette.missed is not None:
        detail = cassette.missed.replace("\n", "\n      ")
    elif not finished:
        detail = f"timed out after {timeout_ms} ms"
    elif "abort" in outcome:
        detail = outcome["abort"].detail
    elif runtime.test_failure is not None:
        detail = runtime.test_failure.detail
    elif "error" in outcome:
        detail = _error_detail(outcome["error"])
    status = "fail" if detail else "pass"
    return TestResult(case.label, status, detail, output, duration, case.name, case.file)


def _error_detail(error: ErrorValue) -> str:
    head = f"error[{error.code}]: {error.display()}" if error.code else f"error: {error.display()}"
    if error.span:
        file, span = error.span
        if span:
            return f"{head}\n      --> {display_path(file)}:{span[0]}:{span[1]}"
    return head


def format_result(result: TestResult, verbose: bool) -> list[str]:
    """The result line and, under a failure, its indented detail and captured output (SPEC §9.4)."""
    head = f"{_WORDS[result.status]} {result.label}"
    if verbose and result.status != "error":
        head += f" ({int(result.duration * 1000)} ms)"
    lines = [head]
    if result.status == "fail":
        lines.append("    " + result.detail)
    if result.output and (result.status == "fail" or verbose):
        lines.append("    captured output:")
        lines.extend(f"      | {line}" for line in result.output)
    return lines


_WORDS = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


_NOT_RUN = TestResult("", "not run")


def run_all(cases: list, timeout_ms: int, real_llm: bool, serial_all: bool,
            emit: Callable[[TestResult], None], exit_first: bool = False,
            replay: str | None = None) -> list[TestResult]:
    """Concurrent tests first (at most max(2, CPUs) at a time), then @serial ones alone; results are passed
    to `emit` in declaration order as soon as a result and all before it are known. An entry that is
    already a TestResult (a file with errors) stands in its place. With `exit_first`, nothing after the
    first failure is started or reported (a test already running finishes, unreported)."""
    results: list[TestResult | None] = [c if isinstance(c, TestResult) else None for c in cases]
    emitted = 0
    lock = threading.Lock()
    stopped = threading.Event()

    def flush() -> None:
        nonlocal emitted
        while emitted < len(results) and results[emitted] is not None:
            result = results[emitted]
            if stopped.is_set():
                results[emitted] = _NOT_RUN
            elif result is not _NOT_RUN:
                emit(result)
                if exit_first and result.status != "pass":
                    stopped.set()
            emitted += 1

    def finish(i: int, result: TestResult) -> None:
        with lock:
            results[i] = result
            flush()

    def run_one(i: int) -> None:
        finish(i, _NOT_RUN if stopped.is_set() else run_case(cases[i], timeout_ms, real_llm, replay))

    pending = [i for i, c in enumerate(cases) if isinstance(c, TestCase)]
    concurrent = [i for i in pending if not (cases[i].serial or serial_all)]
    serial = [i for i in pending if cases[i].serial or serial_all]
    with lock:
        flush()
    if concurrent:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for i in concurrent:
                pool.submit(run_one, i)
    for i in serial:
        run_one(i)
    return [r for r in results if r is not None and r is not _NOT_RUN]
