"""A billing MCP server for the durable-runs example (stdio). `send_invoice` is annotated as destructive: a
durable run never sends the same invoice twice without being told it is safe. Every invoice sent is appended
to outbox.log in the working directory, so you can see what really went out."""
from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("billing", version="1.0.0")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=True))
def send_invoice(customer: str, amount: int) -> str:
    """Send an invoice; returns its number."""
    with open("outbox.log", "a+", encoding="utf-8") as outbox:
        outbox.seek(0)
        number = sum(1 for _ in outbox) + 1
        outbox.write(f"invoice {number}: {amount} to {customer}\n")
    return f"INV-{number:04d}"


if __name__ == "__main__":
    server.run()
