"""Linking: the Python function of every `extern fn`, from the modules listed in `[extern] modules` (SPEC §11).

`sage check` and `sage run` share this step: an `extern fn` with no implementation is E093 in both. Linking
imports the user's modules (that is how their functions are found) but builds nothing of the runtime; the
runtime wraps each function found with `runtime.externs.bind_extern`.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable, Protocol

from .diagnostics import Diagnostic
from .syntax import ast as A


class _Extern(Protocol):
    @property
    def modules(self) -> list[str]: ...


class LinkSettings(Protocol):
    """What linking reads of a command's settings (a sagepy.settings.Settings): the project's root and its
    `[extern] modules` (sagepy.grove.ExternSettings)."""

    root: str

    @property
    def extern(self) -> _Extern: ...


class ExternModules:
    """The `[extern] modules` of a project, each loaded once, in the listed order."""

    def __init__(self, settings: LinkSettings) -> None:
        self.settings = settings
        self.modules: list[Any] | None = None
        self.errors: list[str] = []

    def _load(self) -> list[Any]:
        if self.modules is None:
            self.modules = []
            for i, rel in enumerate(self.settings.extern.modules):
                path = os.path.join(self.settings.root, rel)
                if not os.path.isfile(path):
                    self.errors.append(f"extern module not found: {rel}")
                    continue
                try:
                    spec = importlib.util.spec_from_file_location(f"sage_extern_{i}", path)
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                except Exception as exc:  # the user's module failed to import: reported as E093
                    self.errors.append(f"extern module {rel} failed to load: {type(exc).__name__}: {exc}")
                    continue
                self.modules.append(module)
        return self.modules

    def find(self, name: str) -> Callable[..., Any] | None:
        for module in self._load():
            fn = getattr(module, name, None)
            if callable(fn):
                return fn
        return None


def link_externs(program: Any, settings: LinkSettings) -> tuple[dict[str, Callable[..., Any]], list[Diagnostic]]:
    """The Python function of every `extern fn` of `program` by name, and an E093 for each one not found."""
    modules = ExternModules(settings)
    found: dict[str, Callable[..., Any]] = {}
    diagnostics: list[Diagnostic] = []
    for module in program.modules:
        for item in module.items:
            if type(item) is not A.FnDecl or not item.extern:
                continue
            fn = modules.find(item.name)
            if fn is not None:
                found[item.name] = fn
                continue
            hint = "; ".join(modules.errors) if modules.errors else \
                "define it in a Python module listed in grove.toml `[extern] modules`"
            diagnostics.append(Diagnostic("E093", f"no implementation for `extern fn {item.name}`", module.path,
                                          item.span, hint=hint))
    return found, diagnostics
