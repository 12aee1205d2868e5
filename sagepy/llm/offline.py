"""The answers that need no server (SPEC §4.10): the `echo` model and the `mock` key.

`echo` is a deterministic stand-in that lets examples and CI run with no key and no network: it echoes the
prompt, or gives the default value of the requested type, which always fits the type's schema. The `mock`
key predates `echo` and only answers plain calls.
"""
from __future__ import annotations

from typing import Any

from ..core import types as T
from ..core.convert import ConversionError, default_value

ECHO_LIMIT = 200
MOCK_TYPED_ERROR = "mock client cannot produce structured output"


class OfflineError(Exception):
    """An offline answer that cannot be given; the message is the Llm error's message."""


def echo_answer(prompt: str, target: T.Type) -> Any:
    if target == T.STRING:
        return "echo: " + prompt[:ECHO_LIMIT]
    try:
        return default_value(target)
    except ConversionError as exc:
        raise OfflineError(f"echo model cannot produce a value of type {T.type_name(target)}: {exc}") from None


def mock_answer(prompt: str, target: T.Type) -> str:
    if target != T.STRING:
        raise OfflineError(MOCK_TYPED_ERROR)
    return f"[Mock LLM response for: {prompt}]"
