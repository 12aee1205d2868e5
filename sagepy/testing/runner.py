"""`sage test` (SPEC §9): discovery, selection, concurrent execution with timeouts, results and summary.

Each test runs on its own runtime stack from the command's session: its own Runtime (agent numbering, captured
output), its own effects (mock queues, MCP connections opened by its first unmocked call and closed when it
ends) and its own in-memory persistence store.
"""
from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..diagnostics import Diagnostic, display_path
from ..runtime.agents import AgentInstance, set_current_context, start_thread
from ..runtime.errors import AgentCancelled, SageRaise, TestAbort
from ..runtime.values import ErrorValue

if TYPE_CHECKING:
    from ..session import Session


class TestCase:
    __slots__ = ("file", "name", "body", "serial", "session")

    def __init__(self, file: str, name: str, body: Any, serial: bool, session: Session) -> None:
        self.file = file
        self.name = name
        self.body = body
        self.serial = serial
        self.session = session

    @property
    def label(self) -> str:
        return f"{display_path(self.file)}::{self.name}"


class TestResult:
    __slots__ = ("label", "status", "detail", "output", "duration", "name", "file")

    def __init__(self, label: str, status: str, detail: str = "", output: list[str] | None = None,
                 duration: float = 0.0, name: str = "", file: str = "") -> None:
        self.label = label
        self.status = status          # "pass" | "fail" | "skip"
        self.detail = detail
        self.output = output or []
        self.duration = duration
        self.name = name
        self.file = file


class LoadedFile:
    def __init__(self, path: str, cases: list[TestCase], diagnostics: list[Diagnostic]) -> None:
        self.path = path
        self.cases = cases
        self.diagnostics = diagnostics

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


def discover(path: str) -> list[str]:
    """A `*_test.sg` file, or every test file under PATH/src (else PATH), in sorted order (SPEC §9.2)."""
    if os.path.isfile(path):
        return [os.path.abspath(path)] if path.endswith("_test.sg") else []
    start = os.path.join(path, "src") if os.path.isdir(os.path.join(path, "src")) else path
    found = []
    for directory, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in files:
            if f.endswith("_test.sg"):
                found.append(os.path.abspath(os.path.join(directory, f)))
    return sorted(found)


def load_test_file(path: str, session: Session) -> LoadedFile:
    stack = session.runtime_stack()
    _, diags = session.compile(path, stack, test_file=True)
    cases = [TestCase(path, decl.name, body, decl.annotation == "serial", session)
             for decl, body, env in stack.host.tests if os.path.abspath(env.path) == os.path.abspath(path)]
    return LoadedFile(path, cases, diags)


def run_case(case: TestCase, timeout_ms: int, real_llm: bool = False) -> TestResult:
    """Run one test to completion (or timeout); never raises."""
    from .mocks import MockQueues
    output: list[str] = []
    lock = threading.Lock()

    def capture(text: str) -> None:
        with lock:
            output.extend(text.split("\n"))

    stack = case.session.runtime_stack(out=capture, err=capture, mocks=MockQueues(), real_llm=real_llm)
    runtime, effects = stack.runtime, stack.effects
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
    effects.ended = True
    ctx.request_stop()
    runtime.stop_all()
    if not finished:
        done.wait(1.0)
    runtime.shutdown(grace_seconds=0.5)
    effects.close()
    detail = ""
    if not finished:
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
    if result.status == "skip":
        return [f"SKIP {result.label}"] if verbose else []
    head = f"{'PASS' if result.status == 'pass' else 'FAIL'} {result.label}"
    if verbose:
        head += f" ({int(result.duration * 1000)} ms)"
    lines = [head]
    if result.status == "fail":
        lines.append("    " + result.detail)
    if result.output and (result.status == "fail" or verbose):
        lines.append("    captured output:")
        lines.extend(f"      | {line}" for line in result.output)
    return lines


class Selection:
    def __init__(self, filter_text: str | None, file_filter: str | None, root: str) -> None:
        self.filter_text = filter_text
        self.file_filter = file_filter
        self.root = root

    def keeps_file(self, path: str) -> bool:
        if not self.file_filter:
            return True
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        wanted = self.file_filter.replace(os.sep, "/")
        return rel == wanted or rel.endswith("/" + wanted)

    def keeps(self, case: TestCase) -> bool:
        return self.keeps_file(case.file) and (not self.filter_text or self.filter_text in case.name)


def run_all(cases: list, timeout_ms: int, real_llm: bool, serial_all: bool,
            emit: Callable[[TestResult], None]) -> list[TestResult]:
    """Concurrent tests first (at most max(2, CPUs) at a time), then @serial ones alone; results are passed
    to `emit` in declaration order as soon as a result and all before it are known. An entry that is
    already a TestResult (a file with errors) stands in its place."""
    results: list[TestResult | None] = [c if isinstance(c, TestResult) else None for c in cases]
    emitted = 0
    lock = threading.Lock()

    def flush() -> None:
        nonlocal emitted
        while emitted < len(results) and results[emitted] is not None:
            emit(results[emitted])
            emitted += 1

    def finish(i: int, result: TestResult) -> None:
        with lock:
            results[i] = result
            flush()

    pending = [i for i, c in enumerate(cases) if isinstance(c, TestCase)]
    concurrent = [i for i in pending if not (cases[i].serial or serial_all)]
    serial = [i for i in pending if cases[i].serial or serial_all]
    with lock:
        flush()
    if concurrent:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for i in concurrent:
                pool.submit(lambda i=i: finish(i, run_case(cases[i], timeout_ms, real_llm)))
    for i in serial:
        finish(i, run_case(cases[i], timeout_ms, real_llm))
    return [r for r in results if r is not None]
