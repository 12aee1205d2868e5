"""A stdio MCP server that asks its questions the common way, with `ctx.elicit(...)` (a server-initiated
request): it works on the legacy handshake era only. `book` asks for a name of at least 3 characters, an email
address and a number of guests from 1 to 4, and reports what it got."""
from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

server = MCPServer("booking")


class Booking(BaseModel):
    name: str = Field(min_length=3, description="Who the table is for")
    email: str = Field(json_schema_extra={"format": "email"})
    guests: int = Field(default=2, ge=1, le=4)


@server.tool()
async def book(day: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Book a table on {day}?", Booking)
    if answer.action != "accept":
        return answer.action
    data = answer.data
    return f"booked {data.name} <{data.email}> for {data.guests}"


if __name__ == "__main__":
    server.run()
