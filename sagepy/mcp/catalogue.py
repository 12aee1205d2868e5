"""Resources and prompts (SPEC §8.11): the builtins `mcp_resources`, `mcp_resource_templates`,
`mcp_read_resource`, `mcp_prompts`, `mcp_get_prompt`, and `sage tools read|prompt`.

`server` is a handle from `mcp_connect` or the name of a `[tools.<Name>]` table, matched as a tool block is
(§8.1: the exact key, else the one key equal to it case-insensitively), whose shared connection is used.
Listings come back in wire spelling (the records are built in sagepy/effects/wire.py); a read resource and
a rendered prompt come back as their text. Errors are `Mcp` errors whose display is their message, in the
shapes of `mcp_call`'s.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.json_text import parse_json
from .dynamic import handle_id
from .failures import DynamicFailure, McpFailure

if TYPE_CHECKING:
    from .connection import Connection

_LISTS = {"resources": ("list_resources", "resources", "resources/list"),
          "resource_templates": ("list_resource_templates", "resource_templates", "resources/templates/list"),
          "prompts": ("list_prompts", "prompts", "prompts/list")}


class _Binary(Exception):
    """A resource whose contents are all binary; the message is the mime type."""


class Catalogue:
    """Mixin of ConnectionPool: the builtins of §8.11."""

    _servers: dict
    _dynamic: dict

    def _catalogue_slot(self, server: str) -> Any:
        n = handle_id(server)
        if n is not None:
            slot = self._dynamic.get(n)
        else:
            slot = self._servers.get(server)
            if slot is None:
                folded = [s for name, s in self._servers.items() if name.casefold() == server.casefold()]
                slot = folded[0] if len(folded) == 1 else None
        if slot is None:
            raise DynamicFailure(f"unknown MCP server or handle: {server}")
        return slot

    def _listing(self, server: str, kind: str) -> list[dict]:
        slot = self._catalogue_slot(server)
        try:
            return self._run(self._list_kind(slot, kind))  # type: ignore[attr-defined]
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_{kind} failed: {failure.display()}") from None

    async def _list_kind(self, slot: Any, kind: str) -> list[dict]:
        conn: Connection = await self._connection(slot)  # type: ignore[attr-defined]
        method, field, wire = _LISTS[kind]
        request = getattr(conn.client, method)
        items = await conn._bounded(lambda: conn._pages(request, field, wire), wire)
        return [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in items]

    def resources(self, server: str) -> list[dict]:
        """Every resource of the server (all pages), wire spelling."""
        return self._listing(server, "resources")

    def resource_templates(self, server: str) -> list[dict]:
        return self._listing(server, "resource_templates")

    def prompts(self, server: str) -> list[dict]:
        return self._listing(server, "prompts")

    def read_resource(self, server: str, uri: str) -> str:
        """The text of the resource's text contents, joined with newlines."""
        slot = self._catalogue_slot(server)
        try:
            return self._run(self._read(slot, uri))  # type: ignore[attr-defined]
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_read_resource '{uri}' failed: {failure.display()}") from None
        except _Binary as binary:
            raise DynamicFailure(f"mcp_read_resource '{uri}' failed: binary content ({binary})") from None

    async def _read(self, slot: Any, uri: str) -> str:
        conn: Connection = await self._connection(slot)  # type: ignore[attr-defined]
        result = await conn._bounded(lambda: conn.client.read_resource(uri), "resources/read")
        texts = [item.text for item in result.contents if getattr(item, "text", None) is not None]
        blobs = [item for item in result.contents if getattr(item, "blob", None) is not None]
        if texts or not blobs:
            return "\n".join(texts)
        mime = blobs[0].mime_type
        if not mime:
            listed = await self._list_kind(slot, "resources")
            mime = next((item.get("mimeType") for item in listed if item.get("uri") == uri), None)
        raise _Binary(mime or "application/octet-stream")

    def get_prompt(self, server: str, name: str, args_json: str) -> str:
        """The prompt's messages rendered with the arguments: each message's text, separated by blank lines
        (a message without text content is skipped)."""
        slot = self._catalogue_slot(server)
        try:
            arguments = prompt_arguments(args_json)
        except ValueError as exc:
            raise DynamicFailure(f"invalid arguments JSON: {exc}") from None
        try:
            return self._run(self._prompt(slot, name, arguments))  # type: ignore[attr-defined]
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_get_prompt '{name}' failed: {failure.display()}") from None

    async def _prompt(self, slot: Any, name: str, arguments: dict[str, str]) -> str:
        conn: Connection = await self._connection(slot)  # type: ignore[attr-defined]
        result = await conn._bounded(lambda: conn.client.get_prompt(name, arguments or None), "prompts/get")
        texts = []
        for message in result.messages:
            items = message.content if isinstance(message.content, list) else [message.content]
            text = "\n".join(item.text for item in items if getattr(item, "type", None) == "text")
            if any(getattr(item, "type", None) == "text" for item in items):
                texts.append(text)
        return "\n\n".join(texts)


def prompt_arguments(args_json: str) -> dict[str, str]:
    """The arguments of `mcp_get_prompt`: a JSON object of string values. Raises ValueError with the reason."""
    data = parse_json(args_json)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    bad = next((key for key, value in data.items() if not isinstance(value, str)), None)
    if bad is not None:
        raise ValueError(f"prompt arguments are strings; '{bad}' is not")
    return data
