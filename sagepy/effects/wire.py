"""Sage values and MCP wire data, the one place where they meet on the effects path (DESIGN.md "The
effects boundary"): the arguments of typed tool calls (SPEC §8.4), typed results (§8.4 rules 1-4) and the
prelude records of dynamic MCP (§8.5). Below this module, the MCP package handles JSON only. The effects
layers load this module on first use: a program that never calls an MCP tool never imports it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.convert import VALUE_LIMIT, ConversionError, from_json, to_json
from ..core.json_text import compact_json, parse_json
from ..mcp.failures import McpFailure, typed_error
from ..mcp.results import text_items, text_of
from ..core.values import NONE, UNIT, Record, Variant, some
from ..core.types import STRING, UNIT as UNIT_TYPE, MapT, RecordT, Type, type_name

if TYPE_CHECKING:
    from ..check.symbols import ToolRef


def tool_arguments(info: ToolRef, args: list) -> dict:
    """The arguments object of a typed call: keyed by the declared parameter names, None left out."""
    arguments = {}
    for name, value in zip(info.params, args):
        if type(value) is Variant and value.enum == "Option" and value.name == "None":
            continue
        arguments[name] = to_json(value)
    return arguments


def typed_result(result: dict, info: ToolRef) -> Any:
    """The Sage value of a typed call's successful result, or SageRaise with an `Mcp` error."""
    try:
        return typed_value(result, info.ret, info.label, info.remote)
    except McpFailure as failure:
        raise typed_error(failure) from None


def _render(data: Any) -> str:
    text = data if isinstance(data, str) else compact_json(data)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def typed_value(result: dict, return_type: Type, label: str, remote: str) -> Any:
    """The Sage value of a successful typed call (§8.4 rules 1-4). Raises McpFailure on failure."""
    if return_type == UNIT_TYPE:
        return UNIT
    failure: tuple[Any, ConversionError | str] | None = None
    if "structuredContent" in result:
        candidate = result["structuredContent"]
        if (not isinstance(return_type, (RecordT, MapT)) and isinstance(candidate, dict)
                and len(candidate) == 1 and "result" in candidate):
            candidate = candidate["result"]
        try:
            return from_json(candidate, return_type)
        except ConversionError as exc:
            failure = (candidate, exc)
    if return_type == STRING:
        return text_of(result, "")
    texts = text_items(result)
    if len(texts) == 1:
        try:
            data = parse_json(texts[0])
        except ValueError as exc:
            failure = (texts[0], f"the text is not JSON: {exc}")
        else:
            try:
                return from_json(data, return_type)
            except ConversionError as exc:
                failure = (data, exc)
    if failure is None:
        count = "no text item" if not texts else f"{len(texts)} text items"
        failure = (result.get("content") or [], f"no structuredContent and {count}")
    value, reason = failure
    raise McpFailure("deserialisation error",
                     f"{label} (remote '{remote}'): cannot convert {_render(value)} to "
                     f"{type_name(return_type)}: {reason}")


def tool_records(listing: Any) -> list[Record]:
    """`List<McpTool>` from a listing: the objects of `mcp_list_tools`, or a mock value of the same shape.

    Raises ValueError when the listing is not an array of objects with a string `name`.
    """
    if not isinstance(listing, list):
        raise ValueError("expected a JSON array of tool objects")
    records = []
    for i, item in enumerate(listing):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"element {i} is not a tool object with a string name")
        description = item.get("description")
        safety = item.get("safety")
        schema = item.get("inputSchema")
        records.append(Record("McpTool", {
            "name": item["name"],
            "description": description if isinstance(description, str) else "",
            "input_schema": compact_json(schema) if schema is not None else "{}",
            "safety": safety if isinstance(safety, str) else "destructive",
        }))
    return records


def _text(item: dict, key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def resources_records(listing: list[dict]) -> list[Record]:
    """`mcp_resources` from the resource objects of the listing (wire spelling; absent fields `""`)."""
    return [Record("McpResource", {"uri": _text(item, "uri"), "name": _text(item, "name"),
                                   "description": _text(item, "description"),
                                   "mime_type": _text(item, "mimeType")}) for item in listing]


def resource_templates_records(listing: list[dict]) -> list[Record]:
    """`mcp_resource_templates` from the template objects of the listing."""
    return [Record("McpResourceTemplate", {"uri_template": _text(item, "uriTemplate"), "name": _text(item, "name"),
                                           "description": _text(item, "description"),
                                           "mime_type": _text(item, "mimeType")}) for item in listing]


def prompts_records(listing: list[dict]) -> list[Record]:
    """`mcp_prompts` from the prompt objects of the listing: argument names, and the required ones."""
    records = []
    for item in listing:
        arguments = [a for a in item.get("arguments") or [] if isinstance(a, dict) and isinstance(a.get("name"), str)]
        records.append(Record("McpPrompt", {
            "name": _text(item, "name"), "description": _text(item, "description"),
            "arguments": [a["name"] for a in arguments],
            "required": [a["name"] for a in arguments if a.get("required") is True]}))
    return records


def server_info_record(info: dict) -> Record:
    """`mcp_server_info` from the server's `name` and `version`."""
    return Record("McpServerInfo", {"name": info["name"], "version": info["version"]})


def connection_record(n: int | None) -> Variant:
    """`mcp_connection`: Some(McpConnection { id: n }) for an open connection, else None."""
    return NONE if n is None else some(Record("McpConnection", {"id": n}))
