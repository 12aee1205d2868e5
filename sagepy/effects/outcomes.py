"""What the journal of durable runs writes for a step and reads back (SPEC §14): the hash of the arguments, a
step's value as JSON (§5) and back as the value the real layer would have returned, an error as its kind,
message and code and back as the same Sage error.

A step with a return type (`step.ret`: model answers, tool calls, `mcp_call`) converts through it. The others
return what the real layer returns for their kind and target: the builtin's prelude type for `io` and `mcp`
steps, the field's type for a `state` read or update, `Bool` for an `await`; a step whose value is JSON data
already (a model turn of a tool loop: the model's message) is kept as it is. A `receive` is special: its
outcome names the message (the sender's path and send number), not the message itself, which the sender sends
again on resume.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..core import types as T
from ..core.errors import SageRaise
from ..core.values import UNIT, ErrorValue
from .step import AWAIT, IO, LLM, MCP, STATE, TOOL, Step


def args_hash(arguments: Any) -> str:
    """SHA-256 (hex) of the arguments' canonical JSON: sorted keys, no whitespace, UTF-8."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def value_type(step: Step) -> T.Type | None:
    """The Sage type of the step's value, or None when the value is JSON data already."""
    kind = step.kind
    if kind == LLM and isinstance(step.arguments, dict):
        # a turn of a tool loop (§4.12; its arguments are the conversation) answers with the model's message,
        # JSON data, whatever the `divine`'s type; a sampling request's answer is a String either way
        return None
    if step.ret is not None:
        return step.ret
    if kind in (IO, MCP):
        from ..check.prelude import load_prelude
        signature = load_prelude().fns.get(step.target)
        return signature.ret if signature is not None else None
    if kind == AWAIT:
        return T.BOOL
    if kind == STATE:
        if step.target.endswith(".get") or step.target.endswith(".update"):
            return step.agent.agent.persistent_types[step.target.rsplit(".", 1)[0]]
        return T.UNIT
    return None


def encode_value(step: Step, value: Any) -> Any:
    """The JSON the journal records for the step's value."""
    if value_type(step) is None:
        return value
    from ..core.convert import to_json
    return to_json(value)


def decode_value(step: Step, data: Any) -> Any:
    """The value the real layer would have returned, from its recorded JSON."""
    t = value_type(step)
    if t is None:
        return data
    if t == T.UNIT:
        return UNIT
    from ..core.convert import from_json
    return from_json(data, t)


def encode_error(error: ErrorValue) -> dict:
    data: dict = {"kind": error.kind, "message": error.message}
    if error.code is not None:
        data["code"] = error.code
    if error.display_text is not None:
        data["display"] = error.display_text
    return data


def decode_error(step: Step, data: Any) -> SageRaise:
    """The Sage error of a `failed` record. One written by `sage runs resolve --failed MESSAGE` may hold the
    message alone: its kind is then the one the step raises (SPEC §14: "an error of the call's kind")."""
    if not isinstance(data, dict):
        data = {"message": "" if data is None else str(data)}
    kind = data.get("kind") or error_kind(step)
    return SageRaise(ErrorValue(str(kind), str(data.get("message", "")), data.get("code"),
                                display_text=data.get("display")))


def error_kind(step: Step) -> str:
    """The kind of error a step of this kind raises."""
    if step.kind == TOOL:
        return "Tool" if step.tool is None or step.tool.builtin else "Mcp"
    return {LLM: "Llm", MCP: "Mcp", AWAIT: "Timeout"}.get(step.kind, "Agent")
