"""An in-process MCP server whose schemas use what the generator must map: nested models ($defs/$ref),
a recursive model, string enums, maps, nullable and optional parameters, and typed results."""
from enum import Enum

from pydantic import BaseModel

from mcp.server import MCPServer

server = MCPServer("rich-server", version="0.9")


class Color(str, Enum):
    red = "red"
    green = "green"


class Tag(BaseModel):
    name: str
    weight: float = 1.0


class Node(BaseModel):
    label: str
    children: list["Node"] = []


class Query(BaseModel):
    text: str
    tags: list[Tag]
    color: Color | None = None
    limits: dict[str, int] = {}


@server.tool()
def search(query: Query, page: int = 1, exact: bool | None = None) -> list[Tag]:
    """Search by tags.

    More text that the generator leaves out."""
    return [Tag(name=f"{query.text}:{t.name}", weight=t.weight * page) for t in query.tags]


@server.tool()
def tree(depth: int) -> Node:
    node = Node(label="leaf")
    for i in range(depth):
        node = Node(label=f"level{i}", children=[node])
    return node


@server.tool()
def paint(color: Color, shade: float) -> Color:
    return Color.green if color == Color.red else Color.red


@server.tool(name="count-words")
def count_words(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


@server.tool()
def greet(who: str | None, punctuation: str = "!") -> str:
    return f"hello {who}{punctuation}"


@server.tool()
def maybe(flag: bool) -> int | None:
    return 7 if flag else None
