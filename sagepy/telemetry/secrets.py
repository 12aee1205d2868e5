"""The secrets sagepy knows of in a project (SPEC §18.1: never recorded on a span): the model API's key,
and for every MCP server its bearer token and the values of the variables its `env`, `headers` and `url`
refer to with `$NAME` / `${NAME}`."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from ..grove.servers import ServerConfig
    from ..variables import Overrides


class _ModelKey(Protocol):
    @property
    def api_key(self) -> str | None: ...


class _Servers(Protocol):
    @property
    def servers(self) -> Mapping[str, ServerConfig]: ...


class SecretSettings(Protocol):
    """What finding the secrets reads of a command's settings (a sagepy.settings.Settings)."""

    overrides: Overrides

    @property
    def tools(self) -> _Servers: ...

    @property
    def llm(self) -> _ModelKey: ...


_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def known_secrets(settings: SecretSettings) -> list[str]:
    env = settings.overrides
    found: list[str] = []
    key = settings.llm.api_key
    if key:
        found.append(key)
    for config in settings.tools.servers.values():
        names: list[str] = [n for n in (getattr(config, "token_env", None),
                                        getattr(config, "client_id_env", None)) if n]
        texts: list[Any] = [*config.env.values(), *config.headers.values(), getattr(config, "url", None) or ""]
        for text in texts:
            if isinstance(text, str):
                names.extend(a or b for a, b in _REFERENCE.findall(text))
        found.extend(env[name] for name in names if env.get(name))
    return found
