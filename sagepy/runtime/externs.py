"""`extern fn` bound to Python functions of the modules listed in `[extern] modules` (SPEC §11).

Arguments reach Python as their JSON form (SPEC §5: dict, list, str, int, float, bool, None); the result is
converted to the declared return type (failure: E207). A `fails` extern signals failure by raising
`sagepy.SageFail("message")` (a User error); any other exception becomes Runtime error E208.
"""
from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Any, Callable

from .. import SageFail
from .. import types as T
from .errors import SageRaise
from .values import ErrorValue

if TYPE_CHECKING:
    from ..settings import Settings


class ExternModules:
    """The `[extern] modules` of a project, each loaded once, in the listed order."""

    def __init__(self, settings: Settings) -> None:
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


def bind_extern(name: str, fn: Callable[..., Any], ret: T.Type) -> Callable[..., Any]:
    from ..convert import ConversionError, from_json, to_json

    def call(*args: Any) -> Any:
        try:
            py_args = [to_json(a) for a in args]
        except ConversionError as exc:
            raise SageRaise(ErrorValue("Runtime", f"extern fn '{name}': cannot pass argument: {exc}", "E207"))
        try:
            result = fn(*py_args)
        except SageFail as exc:
            raise SageRaise(ErrorValue("User", str(exc)))
        except Exception as exc:  # any failure inside user Python code is a Sage error, never a traceback
            raise SageRaise(ErrorValue("Runtime", f"extern fn '{name}' raised {type(exc).__name__}: {exc}", "E208"))
        try:
            return from_json(result, ret)
        except ConversionError as exc:
            raise SageRaise(ErrorValue("Runtime", f"extern fn '{name}' returned a value that is not "
                                       f"{T.type_name(ret)}: {exc}", "E207"))
    return call
