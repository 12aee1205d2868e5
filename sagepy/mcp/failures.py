"""MCP failures inside the client layer (SPEC §8.5, §8.10): wire failures, which know nothing of Sage values.

Everything in the MCP package raises `McpFailure(sub_kind, message)`; a dynamic builtin's failure
(`mcp_call`, `mcp_connect`, …) is a `DynamicFailure` whose text is the whole message the program sees
(`mcp_call 'x' failed: MCP timeout: …`). The effects boundary turns either into a Sage error, in one place
(sagepy.effects.wire.mcp_error).
"""
from __future__ import annotations

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


class DynamicFailure(McpFailure):
    """The failure of a dynamic `mcp_*` builtin: `message` is all the program sees (its display too)."""

    def __init__(self, message: str) -> None:
        super().__init__("dynamic", message)

    def display(self) -> str:
        return self.message
