"""Sage values and MCP wire data, the one place where they meet on the effects path (DESIGN.md "The
effects boundary"): the arguments of typed tool calls (SPEC §8.4), typed results (§8.4 rules 1-4), the
prelude records of dynamic MCP (§8.5), and MCP failures as Sage errors. The real layer calls the
`*_objects` and `typed_result` functions: the layers and the MCP package see JSON and `McpFailure` only, and
a typed result the real layer had to convert to choose it travels up as the step's `read`, so that the
boundary (effects/boundary.py), which calls the others on the way up, converts only what no one has.
The effects layers load this module on first use: a program that never calls an MCP tool never imports it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.convert import VALUE_LIMIT, ConversionError, fitted_json, from_json, to_json
from ..core.errors import SageRaise
from ..core.json_text import compact_json, parse_json
from ..core.values import NONE, UNIT, ErrorValue, Record, Variant, some
from ..core.types import STRING, UNIT as UNIT_TYPE, MapT, RecordT, Type, type_name
from ..effect_builtins import EFFECT_BUILTINS
from ..mcp.failures import McpFailure
from ..mcp.results import text_items, text_of
from .step import UNREAD

if TYPE_CHECKING:
    from ..check.symbols import ToolRef


def mcp_error(failure: McpFailure) -> SageRaise:
    """The Sage error of an MCP failure: kind Mcp; a typed call's message without its prefix, displayed
    `MCP <sub-kind>: …`; a dynamic builtin's message as it is (SPEC §8.10)."""
    if failure.sub_kind == "dynamic":
        return SageRaise(ErrorValue("Mcp", failure.message))
    return SageRaise(ErrorValue("Mcp", failure.message, display_text=failure.display()))


class mcp_errors:
    """`with mcp_errors():` around a call into the MCP package: its failures leave as Sage errors."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if isinstance(exc, McpFailure):
            raise mcp_error(exc) from None
        return False


def tool_arguments(info: ToolRef, args: list) -> dict:
    """The arguments object of a typed call: keyed by the declared parameter names, None left out."""
    arguments = {}
    for name, value in zip(info.params, args):
        if type(value) is Variant and value.enum == "Option" and value.name == "None":
            continue
        arguments[name] = to_json(value)
    return arguments


def _render(data: Any) -> str:
    text = data if isinstance(data, str) else compact_json(data)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def _unconvertible(label: str, remote: str, return_type: Type, value: Any, reason: Any) -> McpFailure:
    return McpFailure("deserialisation error", f"{label} (remote '{remote}'): cannot convert {_render(value)} to "
                                               f"{type_name(return_type)}: {reason}")


def read(data: Any, return_type: Type, model: bool) -> Any:
    """Wire data of type `return_type` in the form its consumer takes: the Sage value for the program, the
    fitted JSON (checked and written as the value's, in one walk) for a call a model asked for, whose result
    goes back to the model as JSON text (SPEC §4.12; a Float that is not finite is kept, as in a Sage value:
    the text it has none of says so). Raises ConversionError."""
    if return_type == UNIT_TYPE:
        return None if model else UNIT
    return fitted_json(data, return_type, finite=False) if model else from_json(data, return_type)


def typed_result(result: dict, return_type: Type, label: str, remote: str, model: bool = False) -> tuple[Any, Any]:
    """(the JSON of a successful typed call's value, its `read` form or UNREAD), from the MCP result
    (§8.4 rules 1-4): structuredContent when it converts to the return type, else the text (a String) or the
    one text item's JSON. A candidate that another one could follow is read to decide, and that reading is
    the one the caller keeps; the last candidate is left to `typed_value`, which words its failure the same
    way. Raises McpFailure."""
    if return_type == UNIT_TYPE:
        return None, UNREAD
    failure: tuple[Any, ConversionError | str] | None = None
    texts = None
    if "structuredContent" in result:
        candidate = result["structuredContent"]
        if (not isinstance(return_type, (RecordT, MapT)) and isinstance(candidate, dict)
                and len(candidate) == 1 and "result" in candidate):
            candidate = candidate["result"]
        if return_type != STRING:
            texts = text_items(result)
            if len(texts) != 1:   # no fallback: the boundary's conversion decides
                return candidate, UNREAD
        try:
            return candidate, read(candidate, return_type, model)
        except ConversionError as exc:
            failure = (candidate, exc)
    if return_type == STRING:
        return text_of(result, ""), UNREAD
    texts = text_items(result) if texts is None else texts
    if len(texts) == 1:
        try:
            return parse_json(texts[0]), UNREAD
        except ValueError as exc:
            failure = (texts[0], f"the text is not JSON: {exc}")
    if failure is None:
        count = "no text item" if not texts else f"{len(texts)} text items"
        failure = (result.get("content") or [], f"no structuredContent and {count}")
    raise _unconvertible(label, remote, return_type, *failure)


def typed_value(data: Any, return_type: Type, label: str, remote: str, model: bool = False) -> Any:
    """The `read` form of a typed call's outcome (`typed_result`'s JSON, its journal or cassette record).
    Raises McpFailure (a deserialisation error)."""
    try:
        return read(data, return_type, model)
    except ConversionError as exc:
        raise _unconvertible(label, remote, return_type, data, exc) from None


def tool_objects(listing: Any) -> list[dict]:
    """The `McpTool` objects (JSON) of a listing: the objects of `mcp_list_tools`, or a mock value of the
    same shape.

    Raises ValueError when the listing is not an array of objects with a string `name`.
    """
    if not isinstance(listing, list):
        raise ValueError("expected a JSON array of tool objects")
    objects = []
    for i, item in enumerate(listing):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"element {i} is not a tool object with a string name")
        description = item.get("description")
        safety = item.get("safety")
        schema = item.get("inputSchema")
        objects.append({
            "name": item["name"],
            "description": description if isinstance(description, str) else "",
            "input_schema": compact_json(schema) if schema is not None else "{}",
            "safety": safety if isinstance(safety, str) else "destructive",
        })
    return objects


def _text(item: dict, key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def resources_objects(listing: list[dict]) -> list[dict]:
    """The `McpResource` objects of `mcp_resources`, from the listing (wire spelling; absent fields `""`)."""
    return [{"uri": _text(item, "uri"), "name": _text(item, "name"),
                                   "description": _text(item, "description"),
                                   "mime_type": _text(item, "mimeType")} for item in listing]


def resource_templates_objects(listing: list[dict]) -> list[dict]:
    """The `McpResourceTemplate` objects of `mcp_resource_templates`, from the listing."""
    return [{"uri_template": _text(item, "uriTemplate"), "name": _text(item, "name"),
                                           "description": _text(item, "description"),
                                           "mime_type": _text(item, "mimeType")} for item in listing]


def prompts_objects(listing: list[dict]) -> list[dict]:
    """The `McpPrompt` objects of `mcp_prompts`, from the listing: argument names, and the required ones."""
    records = []
    for item in listing:
        arguments = [a for a in item.get("arguments") or [] if isinstance(a, dict) and isinstance(a.get("name"), str)]
        records.append({
            "name": _text(item, "name"), "description": _text(item, "description"),
            "arguments": [a["name"] for a in arguments],
            "required": [a["name"] for a in arguments if a.get("required") is True]})
    return records


def server_info_object(info: dict) -> dict:
    """The `McpServerInfo` object of `mcp_server_info`, from the server's `name` and `version`."""
    return {"name": info["name"], "version": info["version"]}


# The fields of the prelude records (stdlib/mcp.sg) in declaration order: what `records` builds from JSON.
RECORD_FIELDS = {
    "McpTool": ("name", "description", "input_schema", "safety"),
    "McpServerInfo": ("name", "version"),
    "McpResource": ("uri", "name", "description", "mime_type"),
    "McpResourceTemplate": ("uri_template", "name", "description", "mime_type"),
    "McpPrompt": ("name", "description", "arguments", "required"),
}


def record(name: str, data: dict) -> Record:
    """A prelude record from its JSON object (every field present: the `*_objects` functions, a mock
    checked against the record's type, or the journal's record of one of them)."""
    return Record(name, {field: data[field] for field in RECORD_FIELDS[name]})


def builtin_value(name: str, data: Any) -> Any:
    """The Sage value of a dynamic MCP builtin's outcome: its prelude record (`mcp_server_info`), or a list of
    them (`mcp_tools` and the listings of §8.11), as sagepy.effect_builtins says; the String itself otherwise."""
    builtin = EFFECT_BUILTINS[name]
    if builtin.record is None:
        return data
    if builtin.listed:
        return [record(builtin.record, item) for item in data]
    return record(builtin.record, data)


def connection_record(n: int | None) -> Variant:
    """`mcp_connection`: Some(McpConnection { id: n }) for an open connection, else None."""
    return NONE if n is None else some(Record("McpConnection", {"id": n}))
