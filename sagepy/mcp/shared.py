"""Connections shared between runs (SPEC §20, §21): under `sage serve`, the servers of `[tools.X]` tables with
`shared = true` (the default for `http`) are connected once per process, and every run reaches them through
that one pool; each run keeps a pool of its own for the other servers and its dynamic connections.

`RoutedPool` is what a run's world uses then: requests naming a shared server go to the shared pool, all else
to the run's own, which alone is closed when the run ends.
"""
from __future__ import annotations

from typing import Any, Callable

# ConnectionPool methods whose first argument is a configured server's name.
_BY_SERVER = frozenset({"call_typed", "safety", "listed", "describe", "call_tool", "resources",
                        "resource_templates", "prompts", "read_resource", "get_prompt", "wire_facts"})


class RoutedPool:
    def __init__(self, own: Any, shared: Any, names: frozenset[str]) -> None:
        self.own = own
        self.shared = shared
        self.names = names

    def prestart(self, names: list[str]) -> None:
        self.shared.prestart([n for n in names if n in self.names])
        self.own.prestart([n for n in names if n not in self.names])

    def close_all(self) -> None:
        self.own.close_all()

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self.own, attr)
        if attr not in _BY_SERVER:
            return method

        def routed(server: Any = None, *args: Any, **kwargs: Any) -> Any:
            target = self.shared if server in self.names else self.own
            return getattr(target, attr)(server, *args, **kwargs)
        return routed


def shareable(servers: dict[str, Any]) -> dict[str, Any]:
    """The server configurations whose connection runs may share."""
    return {name: config for name, config in servers.items() if config.shareable}


def shared_pool(root: str, servers: dict[str, Any], settings: Any, checkpoint: Callable[[], None] | None) -> Any:
    """One pool for the shareable servers of a process, or None when there are none. Servers reached through
    it answer no elicitation or sampling (no single run's caller is theirs to ask)."""
    configs = shareable(servers)
    if not configs:
        return None
    from .pool import ConnectionPool
    return ConnectionPool(root, configs, settings, checkpoint=checkpoint)
