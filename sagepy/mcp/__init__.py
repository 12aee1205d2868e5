"""sagepy's MCP client (SPEC §8): connections to the servers of grove.toml on the shared event loop, typed and
dynamic calls, safety classes and elicitation. It knows wire data and server configurations only; the tooling
built on it (`sage tools`, `sage check --verify-tools`) is sagepy.mcptools.

This package is imported only when a program uses MCP, and even then `import sagepy.mcp` stays cheap: the
SDK (`import mcp` costs over a second) is imported by `connection`, which `pool` pulls in only after it
has started a stdio server's process (`transports.start_stdio`), so the server starts up during the import.
`stdio` loads the SDK's message types when the first message arrives; `safety`, `failures`, `results` and
`transports` never import it.
"""
