"""sagepy's MCP test server for resources, prompts, progress and log messages (SPEC §8.11), over stdio.

Resources: a text one with a description and a mime type, a plain one, a binary one (an image), and a
resource template; prompts: one with a required and an optional argument whose messages mix text and an
image, and two without arguments. Resources and prompts are served two per page (cursor = offset), which
MCPServer never does by itself. `count_rows` reports progress row by row; `chatty` sends log messages.
"""
from __future__ import annotations

import asyncio

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp_types import ImageContent, ListPromptsResult, ListResourcesResult, TextContent

PAGE_SIZE = 2


def _page(params, count: int) -> tuple[int, int]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    return start, min(start + PAGE_SIZE, count)


class PagedServer(MCPServer):
    async def _handle_list_resources(self, ctx, params):  # type: ignore[override]
        items = await self.list_resources()
        start, end = _page(params, len(items))
        return ListResourcesResult(resources=items[start:end], next_cursor=str(end) if end < len(items) else None)

    async def _handle_list_prompts(self, ctx, params):  # type: ignore[override]
        items = await self.list_prompts()
        start, end = _page(params, len(items))
        return ListPromptsResult(prompts=items[start:end], next_cursor=str(end) if end < len(items) else None)


server = PagedServer("sage-library", version="2.0.0")


@server.tool()
async def count_rows(rows: int, ctx: Context, pause: float = 0.0) -> str:
    """Report progress row by row, `pause` seconds apart."""
    for done in range(1, rows + 1):
        await ctx.report_progress(done, rows, f"{done} rows parsed")
        await asyncio.sleep(pause)
    return f"{rows} rows"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Send log messages at two levels."""
    await ctx.info("library: an info message")
    await ctx.warning("library: a warning message")
    return "logged"


@server.resource("library://notes/readme", name="readme", description="The readme.", mime_type="text/markdown")
def readme() -> str:
    return "# Library\nA test server."


@server.resource("library://notes/plain", name="plain")
def plain() -> str:
    return "plain text"


@server.resource("library://images/pixel", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return b"\x89PNG\r\n\x1a\n"


@server.resource("library://notes/{topic}", name="note", description="A note on a topic.", mime_type="text/plain")
def note(topic: str) -> str:
    return f"note on {topic}"


@server.prompt(description="Review some code.")
def review(code: str, language: str = "python") -> list:
    return [UserMessage(f"Review this {language} code:\n{code}"),
            UserMessage(ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")),
            AssistantMessage(TextContent(type="text", text="I will review it."))]


@server.prompt()
def hello() -> str:
    return "Say hello."


@server.prompt()
def goodbye() -> str:
    return "Say goodbye."


if __name__ == "__main__":
    server.run()
