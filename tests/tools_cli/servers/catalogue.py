"""An in-process MCP server with everything `sage tools inspect` lists besides tools — instructions, prompts,
resources and a resource template — and a tool whose parameters carry constraints (enum, default, range,
length, format) and a nested object."""
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp.server import MCPServer

server = MCPServer("catalogue-server", version="4.5.6", instructions="Book rooms here.\nAsk before booking.")


class Contact(BaseModel):
    email: Annotated[str, Field(json_schema_extra={"format": "email"})]
    phone: str | None = None


class Booking(BaseModel):
    room: str
    contact: Contact


@server.tool()
def book(booking: Booking, nights: Annotated[int, Field(ge=1, le=14)] = 1,
         code: Annotated[str, Field(min_length=3)] = "abc", view: Literal["sea", "city"] = "sea") -> str:
    """Book a room."""
    return f"{booking.room} for {nights} nights ({view}, {booking.contact.email})"


@server.prompt()
def greeting(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Hello {name}"


@server.resource("notes://readme", mime_type="text/plain")
def readme() -> str:
    """The read-me."""
    return "read me"


@server.resource("notes://day/{day}")
def day_notes(day: str) -> str:
    """Notes of one day."""
    return f"notes of {day}"
