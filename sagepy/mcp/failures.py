"""MCP failures inside the client layer, and their Sage error values (SPEC §8.5, §8.10).

Everything below the manager raises `McpFailure(sub_kind, message)`; the manager turns it into the Sage
error the caller sees: for a typed call `MCP <sub-kind>: <message>` (kind `Mcp`, `e.message` without the
prefix), for a dynamic builtin a message that embeds that display (`mcp_call 'x' failed: MCP timeout: …`).
"""
from __future__ import annotations

from ..core.errors import SageRaise
from ..core.values import ErrorValue

SUB_KINDS = (
    "connection failed", "protocol error", "tool not found", "tool error", "deserialisation error",
    "auth error", "timeout", "server exited", "result too large", "config error", "HTTP error", "I/O error",
)


class McpFailure(Exception):
    """One MCP failure: a sub-kind of §8.10 and a message without the `MCP <sub-kind>: ` prefix.

    `during_handshake` marks a connect that reached the server but failed to negotiate, which
    `mcp_connect` reports as `MCP initialization failed` rather than `MCP connection failed`.
    """

    def __init__(self, sub_kind: str, message: str, during_handshake: bool = False) -> None:
        super().__init__(message)
        self.sub_kind = sub_kind
        self.message = message
        self.during_handshake = during_handshake

    def display(self) -> str:
        return f"MCP {self.sub_kind}: {self.message}"


def typed_error(failure: McpFailure) -> SageRaise:
    """The error of a typed tool call: kind Mcp, message without prefix, display `MCP <sub-kind>: …`."""
    return SageRaise(ErrorValue("Mcp", failure.message, display_text=failure.display()))


def dynamic_error(message: str) -> SageRaise:
    """The error of a dynamic `mcp_*` builtin: kind Mcp, display = message."""
    return SageRaise(ErrorValue("Mcp", message))
