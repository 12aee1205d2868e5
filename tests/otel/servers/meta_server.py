"""A stdio MCP server that writes the `_meta` of every `tools/call` it receives, one JSON object a line, to
the file named by META_LOG: the tests read the `traceparent` sagepy sent. `lookup` answers; `explode` is a
tool error."""
from __future__ import annotations

import json
import os
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("meta-recorder")


def _record(ctx: Context) -> None:
    meta: Any = ctx.request_context.meta
    if meta is not None and hasattr(meta, "model_dump"):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    with open(os.environ["META_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(meta if isinstance(meta, dict) else {}, default=str) + "\n")


@server.tool()
async def lookup(key: str, ctx: Context) -> str:
    _record(ctx)
    return f"value of {key}"


@server.tool()
async def explode(reason: str, ctx: Context) -> str:
    _record(ctx)
    raise ValueError(f"exploded: {reason}")


if __name__ == "__main__":
    server.run()
