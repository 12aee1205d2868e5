"""sagepy's MCP client (SPEC §8): configuration, connections on the shared event loop, typed and dynamic
calls, safety classes and elicitation.

This package is imported only when a program uses MCP, and even then `import sagepy.mcp` stays cheap: the
SDK (`import mcp` costs about a second) is imported by `connection`, `stdio` and `transports` only, which
`manager` pulls in. `config`, `safety`, `failures` and `results` never import it.
"""
