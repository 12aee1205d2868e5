"""What the journal of durable runs writes for a step and reads back (SPEC §14): the hash of the arguments, a
step's outcome as JSON (§5) and back, an error as its kind, message and code and back as the same Sage error.

Outcomes are wire data already (the boundary converts them to Sage values above the chain): the journal
records and replays them as they are, whatever the step's type. A `state` read or update is the exception
(its value is the field's, converted with the field's type), and so is a `receive`: its outcome names the
message (the sender's path and send number), not the message itself, which the sender sends again on resume.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..core.errors import SageRaise
from ..core.values import UNIT, ErrorValue
from ..effect_builtins import EFFECT_BUILTINS
from ..secrecy import SECRET_OUTCOME, secret_outcome, secret_variable
from .step import AWAIT, IO, LLM, MCP, STATE, TOOL, Step


def args_hash(arguments: Any) -> str:
    """SHA-256 (hex) of the arguments' canonical JSON: sorted keys, no whitespace, UTF-8."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def encode_value(step: Step, value: Any, secret_names: frozenset[str] = frozenset()) -> Any:
    """The JSON the journal records for the step's outcome: the outcome itself (wire data already), except a
    `state` read's or update's value, which the field's type converts (it never leaves the process), and the
    value of a variable whose name is secret (`secret_names`: those grove.toml names), wrapped so that no
    one is shown it (sagepy.secrecy)."""
    if step.kind == STATE and _field_value(step):
        from ..core.convert import to_json
        return to_json(value)
    if step.kind == IO and step.arguments and _reads_variable(step.target) \
            and secret_variable(step.arguments[0], secret_names):
        return {SECRET_OUTCOME: value}
    return value


def _reads_variable(target: str) -> bool:
    builtin = EFFECT_BUILTINS.get(target)
    return builtin is not None and builtin.variable


def decode_value(step: Step, data: Any) -> Any:
    """The outcome the layers below the journal would have returned, from its recorded JSON."""
    if step.kind != STATE:
        return data[SECRET_OUTCOME] if secret_outcome(step.kind, step.target, data) else data
    if not _field_value(step):
        return UNIT
    from ..core.convert import from_json
    return from_json(data, step.agent.agent.persistent_types[step.target.rsplit(".", 1)[0]])


def _field_value(step: Step) -> bool:
    return step.target.endswith(".get") or step.target.endswith(".update")


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
