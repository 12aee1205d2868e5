"""sagepy's own MCP test server (stdio, or Streamable HTTP with `--http PORT [--token T]`).

One MCPServer with a tool for every behaviour the client must handle: structured records, plain text,
JSON in text, tool errors, a slow tool that records its cancellation, a crash mid-call, a huge result, a
result that violates its own outputSchema, elicitation (resolver style, which works on both protocol eras),
a tool list that changes, and 23 tools served five per page.

Flags: `--pages-loop` makes tools/list repeat its cursor forever; `--marker-dir D` is where `slow` writes
`cancelled-<tag>` when the client cancels it.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import ListToolsResult, ToolAnnotations
from pydantic import BaseModel

PAGE_SIZE = 5

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int, default=None)
parser.add_argument("--token", default=None)
parser.add_argument("--pages-loop", action="store_true")
parser.add_argument("--marker-dir", default=os.getcwd())
OPTIONS, _ = parser.parse_known_args()


class PagedServer(MCPServer):
    """MCPServer never pages; this one serves its tools PAGE_SIZE at a time (cursor = offset)."""

    async def _handle_list_tools(self, ctx, params):  # type: ignore[override]
        tools = await self.list_tools()
        for tool in tools:
            if tool.name == "bad_output":
                # Claim an integer x; the tool returns a string: the client must refuse the result.
                tool.output_schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        if OPTIONS.pages_loop:
            return ListToolsResult(tools=tools[start:end], next_cursor=str(PAGE_SIZE))
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


server = PagedServer("sage-suite", version="1.2.3")


class Point(BaseModel):
    x: int
    y: int


class Person(BaseModel):
    name: str
    age: int
    email: str | None = None


class Approval(BaseModel):
    ok: bool
    reason: str = ""


READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=False)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, idempotent_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool(annotations=IDEMPOTENT)
def add(a: int, b: int) -> int:
    return a + b


@server.tool(annotations=DESTRUCTIVE)
def make_point(x: int, y: int) -> Point:
    return Point(x=x, y=y)


@server.tool()
def people(count: int) -> list[Person]:
    return [Person(name=f"p{i}", age=20 + i) for i in range(count)]


@server.tool(structured_output=False)
def json_text() -> str:
    """Unstructured: JSON in a text item."""
    return '{"x": 3, "y": 4}'


@server.tool(structured_output=False)
def two_texts() -> list[str]:
    return ["first", "second"]


@server.tool()
def refuse(reason: str) -> str:
    raise ToolError(reason)


@server.tool()
async def slow(seconds: float, tag: str = "slow") -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        with open(os.path.join(OPTIONS.marker_dir, f"cancelled-{tag}"), "w") as fh:
            fh.write("cancelled\n")
        raise
    return f"slept {seconds}"


@server.tool()
def crash(status: int = 7) -> str:
    sys.stderr.write("suite: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(status)


@server.tool()
def huge(size: int) -> str:
    return "x" * size


@server.tool()
def bad_output() -> dict:
    return {"x": "not an integer"}


@server.tool()
def env_value(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool()
def whoami() -> int:
    return os.getpid()


@server.tool()
def spawn_grandchild() -> int:
    """Start a long sleep in the server's process group; shutdown must not leave it behind."""
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    return child.pid


def _ask(question: str) -> Elicit[Approval]:
    return Elicit(question, Approval)


@server.tool()
def ask(question: str, answer: Annotated[ElicitationResult[Approval], Resolve(_ask)]) -> str:
    if isinstance(answer, AcceptedElicitation):
        return f"accepted ok={answer.data.ok} reason={answer.data.reason}"
    return answer.action


_grown = 0


@server.tool()
async def grow(ctx: Context) -> int:
    """Add a tool `extra_<n>` and announce the change on whichever era the session speaks."""
    global _grown
    _grown += 1
    n = _grown

    def extra() -> str:
        return f"extra {n}"

    server.add_tool(extra, name=f"extra_{n}")
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return n


# Fillers up to 23 tools, so that the listing spans five pages.
def _filler(i: int):
    def fill() -> int:
        return i
    return fill


for _i in range(23 - len(server._tool_manager.list_tools())):
    server.add_tool(_filler(_i), name=f"filler_{_i:02d}")


def _serve_http(port: int, token: str | None) -> None:
    import uvicorn
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import PlainTextResponse

    app = server.streamable_http_app()

    class Bearer(BaseHTTPMiddleware):
        async def dispatch(self, request, call_next):
            if token is not None and request.headers.get("authorization") != f"Bearer {token}":
                return PlainTextResponse("unauthorized", status_code=401)
            return await call_next(request)

    app.add_middleware(Bearer)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if OPTIONS.http is not None:
        _serve_http(OPTIONS.http, OPTIONS.token)
    else:
        server.run()
