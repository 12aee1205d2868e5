"""An MCP server over Streamable HTTP with TLS, for the trust-store tests.

    python tls_mcp_server.py PORT CERTFILE KEYFILE
"""
from __future__ import annotations

import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("sage-tls")


@server.tool()
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


if __name__ == "__main__":
    port, certfile, keyfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, ssl_certfile=certfile,
                ssl_keyfile=keyfile, log_level="warning")
