"""Developer tooling on top of the MCP client (SPEC §10.2-§10.4, §8.1): describing live servers for `sage tools
inspect|verify` (`inspect`), writing Sage tool blocks from a server's listing (`generate`), checking a program's
tool blocks against their servers for `sage check --verify-tools` (`verify`), and reading other MCP hosts'
configuration files for `sage tools import` (`host_configs`).

These are clients of `syntax`, `check` and `settings` as much as of sagepy.mcp, which is why they live here and
not in the client package, which a program run imports and which knows wire data and grove.toml's server
configurations only.
"""
