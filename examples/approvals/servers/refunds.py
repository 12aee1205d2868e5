"""A refunds MCP server for the approvals example (stdio). `issue_refund` is annotated as destructive, so the
example's `[approvals]` policy makes every call of it wait for a person; `lookup_order` only reads. Every
refund issued is appended to refunds.log in the working directory, so you can see what really went out."""
from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("refunds", version="1.0.0")

ORDERS = {"A-1017": "delivered to ada on 2026-11-28, paid 25", "A-1018": "in transit to grace, paid 40"}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_order(order: str) -> str:
    """What is known about an order."""
    return ORDERS.get(order, "no such order")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=True))
def issue_refund(order: str, amount: int) -> str:
    """Refund `amount` of an order to the customer; returns the refund's number."""
    with open("refunds.log", "a+", encoding="utf-8") as log:
        log.seek(0)
        number = sum(1 for _ in log) + 1
        log.write(f"refund {number}: {amount} for {order}\n")
    return f"R-{number:04d}"


if __name__ == "__main__":
    server.run()
