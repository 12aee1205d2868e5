"""The arguments of a `tools/call` to a served agent (SPEC §21): their size against `[serve] max_argument_bytes`,
then each parameter converted to its field's Sage type by the one JSON mapping of §5, so that a mismatch names
the argument and what was expected. What comes out is the `args` of the agent's run: each field's JSON, as
converted and written back (`Option` fields left out are `None`)."""
from __future__ import annotations

from typing import Any

from ..check.served import ServedAgent
from ..core import types as T
from ..core.types import type_name
from ..core.convert import ConversionError, fitted_json
from ..core.json_text import compact_json


class BadArguments(Exception):
    """Arguments a served agent cannot take; the message is the tool error's text."""


def argument_size(arguments: Any) -> int:
    """The size in bytes of the arguments as compact JSON (what the limit counts)."""
    return len(compact_json(arguments).encode("utf-8"))


def check_arguments(served: ServedAgent, arguments: Any, max_bytes: int) -> dict:
    """The run's field values (JSON) for `arguments`; raises BadArguments naming the argument at fault."""
    size = argument_size(arguments)
    if size > max_bytes:
        raise BadArguments(f"the arguments are {size} bytes, more than [serve] max_argument_bytes ({max_bytes})")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise BadArguments("the arguments must be a JSON object")
    values: dict[str, Any] = {}
    for name, type_, _doc in served.params:
        optional = isinstance(type_, T.OptionT)
        if name not in arguments:
            if optional:
                continue
            raise BadArguments(f"missing argument `{name}`: expected {type_name(type_)}")
        try:
            values[name] = fitted_json(arguments[name], type_)
        except ConversionError as exc:
            at = ConversionError(f"$.{name}" + exc.path[1:], exc.expected, exc.value, exc.reason)
            raise BadArguments(f"invalid argument `{name}`: {at}") from None
    return values
