"""pytest plugin (SPEC §9.5): `*_test.sg` files become pytest items, one per `test` block.

Registered through the `pytest11` entry point; it collects only with `--sage` or the ini option
`sage_tests = true`, so installing sagepy never changes an unrelated pytest run. Items run one at a time with
the semantics of `sage test` (mocks, sibling module, timeouts from grove.toml).
"""
from __future__ import annotations

from typing import Any

import pytest

_SESSIONS = pytest.StashKey[dict]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("sagepy", "Sage tests")
    group.addoption("--sage", action="store_true", help="collect and run *_test.sg files")
    group.addoption("--sage-real-llm", action="store_true", help="call the configured LLM when no divine mock is left")
    group.addoption("--sage-timeout-ms", type=int, default=None, help="per-test time limit in milliseconds")
    parser.addini("sage_tests", "collect *_test.sg files", type="bool", default=False)


def _enabled(config: Any) -> bool:
    return bool(config.getoption("--sage") or config.getini("sage_tests"))


def pytest_collect_file(file_path: Any, parent: Any) -> Any:
    if file_path.name.endswith("_test.sg") and _enabled(parent.config):
        return SageFile.from_parent(parent, path=file_path)
    return None


class SageFailure(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _session(file: SageFile) -> Any:
    """The session of the project a test file lies in: one per project for the whole pytest run, as one
    `sage test` command has one (grove.toml parsed once, the environment read once)."""
    from ..project import locate_project
    from ..session import Session
    root, _grove, _file = locate_project(str(file.path))
    sessions = file.config.stash.setdefault(_SESSIONS, {})
    session = sessions.get(root)
    if session is None:
        session = sessions[root] = Session.open(root)[0]
    return session


class SageFile(pytest.File):
    def collect(self) -> Any:
        from ..diagnostics import format_diagnostics
        from .runner import load_test_file
        loaded = load_test_file(str(self.path), _session(self))
        if loaded.has_errors:
            # one failing item per declared test, as `sage test` reports an ERROR for each (SPEC §9.4)
            errors = format_diagnostics(loaded.diagnostics)
            for result in loaded.error_results():
                yield SageItem.from_parent(self, name=result.name or "file has errors", case=None, errors=errors)
            return
        for case in loaded.cases:
            yield SageItem.from_parent(self, name=case.name, case=case, errors=None)


class SageItem(pytest.Item):
    def __init__(self, *, case: Any, errors: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.errors = errors

    def runtest(self) -> None:
        from .runner import run_case
        if self.case is None:
            raise SageFailure(self.errors or "file has errors")
        config = self.config
        timeout = config.getoption("--sage-timeout-ms") or self.case.session.settings.test.timeout_ms
        result = run_case(self.case, timeout, real_llm=config.getoption("--sage-real-llm"))
        if result.status == "fail":
            detail = result.detail
            if result.output:
                detail += "\ncaptured output:\n" + "\n".join(f"  | {line}" for line in result.output)
            raise SageFailure(detail)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, SageFailure):
            return excinfo.value.detail
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple:
        return self.path, 0, f"{self.path.name}::{self.name}"
