"""`extern fn` bound to the Python functions that linking (`sagepy/link.py`) found for them (SPEC §11).

Arguments reach Python as their JSON form (SPEC §5: dict, list, str, int, float, bool, None); the result is
converted to the declared return type (failure: E207). A `fails` extern signals failure by raising
`sagepy.SageFail("message")` (a User error); any other exception becomes Runtime error E208.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.errors import SageFail
from ..core import types as T
from ..core.errors import SageRaise
from ..core.values import ErrorValue


def bind_extern(name: str, fn: Callable[..., Any], ret: T.Type) -> Callable[..., Any]:
    from ..core.convert import ConversionError, from_json, to_json

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
