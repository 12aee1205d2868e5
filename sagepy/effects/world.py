"""The real resources of one run (or one test): the LLM client, the MCP connection pool and the tool bindings, each
created on first use so that a program that never calls a model or a server never imports httpx or mcp."""
from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

from .step import current_context
from .trace import Tracer

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from ..settings import Settings


class World:
    def __init__(self, settings: Settings, tracer: Tracer, elicit: Callable, sample: Callable,
                 runtime: Any = None) -> None:
        self.settings = settings
        self.runtime = runtime
        self.tracer = tracer
        self._elicit = elicit
        self._sample = sample
        self.observe_llm: Callable[[Any], None] | None = None   # the span exporter's hook, when export is on
        self._llm: Any = None
        self._mcp: Any = None
        self.shared_mcp: Any = None   # connections shared with other runs (a Host's `mcp`, SPEC §20)
        self.on_mcp: Callable[[], None] | None = None   # told once, when the run first needs an MCP server
        self.model: Any = None        # where model requests go instead of [llm] (a Host's `model`)
        self._safety: dict[str, str] = {}   # `T.f` of a typed MCP tool -> its class, once its server is listed
        self._descriptions: dict[str, dict[str, str]] = {}   # server key -> remote tool -> its description
        self._lock = threading.Lock()
        self._usage: Any = None
        self._tools: Any = None   # the built-in tools' resources of this run (sagepy.tools.ToolResources)

    # ---------------------------------------------------------------- LLM
    @property
    def usage_started(self) -> bool:
        return self._usage is not None

    @property
    def usage(self) -> Any:
        """The run's model usage (sagepy.llm.usage.RunUsage), made on first use."""
        if self._usage is None:
            with self._lock:
                if self._usage is None:
                    self._usage = self.settings.llm.usage.run_usage()
        return self._usage

    def llm(self) -> Any:
        usage = self.usage
        with self._lock:
            if self._llm is None:
                from ..llm import LlmClient
                tracer = self.tracer   # tracing is decided once per run: without it the client traces nothing
                self._llm = LlmClient(self.settings.llm, trace=(lambda kind, data: tracer.emit(None, kind, data))
                                      if tracer.on else None, observe=self.observe_llm, usage=usage,
                                      limiter=self._limiter(), transport=self.model)
            return self._llm

    def _limiter(self) -> Any:
        """The project's limits on model requests (SPEC §23), with their buckets in the run's durable store
        (shared by every process using it), else in this process; None when none is configured."""
        config = self.settings.llm.usage
        if not config.limited:
            return None
        from ..llm.limits import Limiter
        from ..store.buckets import process_buckets
        project = str(self.settings.root)
        store = getattr(getattr(self.runtime, "store", None), "backend", None)
        buckets = store if getattr(store, "durable", False) and hasattr(store, "take_from_bucket") \
            else process_buckets(project)
        return Limiter(project, config, buckets)

    # ---------------------------------------------------------------- built-in tools
    def tool_resources(self) -> Any:
        """What the built-in tools keep for this run between calls (its in-memory database)."""
        with self._lock:
            if self._tools is None:
                from ..tools import ToolResources
                self._tools = ToolResources()
            return self._tools

    # ---------------------------------------------------------------- MCP
    @property
    def mcp_started(self) -> Any:
        """The MCP connection pool if some call created it, else None."""
        return self._mcp

    def mcp(self) -> Any:
        if self._mcp is not None:
            return self._mcp
        with self._lock:
            if self._mcp is None:
                if self.on_mcp is not None:
                    self.on_mcp()
                from ..mcp.pool import ConnectionPool
                settings = self.settings
                pool = ConnectionPool(settings.root, settings.tools.servers, settings.mcp, elicitation=self._elicit,
                                      sampling=self._sample, checkpoint=stop_point, trace=self._mcp_event)
                shared = self.shared_mcp
                if shared is not None:
                    from ..mcp.shared import RoutedPool
                    pool = RoutedPool(pool, shared, frozenset(shared.server_names))
                self._mcp = pool
            return self._mcp

    def _mcp_event(self, kind: str, data: dict) -> None:
        if kind == "mcp.tools_changed":   # annotations and descriptions may have changed with the listing
            self._safety.clear()
            self._descriptions.clear()
        self.tracer.emit(None, kind, data)

    def prestart(self, tools: set[str]) -> None:
        """Start, in the background, the servers of the tool blocks that some agent `use`s (SPEC §8.3)."""
        configured = self.settings.tools
        if not tools or not configured:
            return
        # the bindings the checker will record: it has not run yet, and the servers start meanwhile
        keys = sorted({configured.binding(t)[0] for t in tools} & set(configured))
        if keys:
            from ..deepstack import start_thread
            # importing the MCP SDK alone takes about a second: do it off the main thread too
            start_thread(lambda: self.mcp().prestart(keys), "mcp-prestart")

    # ---------------------------------------------------------------- safety classes (SPEC §7, §8.6)
    def tool_safety(self, info: ToolRef) -> str:
        if info.builtin:
            from ..tools import SAFETY
            return SAFETY.get((info.tool, info.fn), "destructive")
        known = self._safety.get(info.label)
        if known is not None:
            return known
        manager = self.mcp()
        server = info.server
        safety = manager.safety(server, info.remote)   # connects and lists the tools when needed
        if manager.listed(server):   # a failed connect is not remembered: the next call tries again
            self._safety[info.label] = safety
        return safety

    def known_safety(self, label: str) -> str | None:
        """The class of typed MCP tool function `T.f` if its server's current listing gave it already."""
        return self._safety.get(label)

    def remote_description(self, server: str, remote: str) -> str | None:
        """The description by the server of `[tools.<server>]` of a typed tool function (SPEC §4.12), from
        its tool listing, fetched once per connection; None when the server has none or cannot be listed
        (the call will say why)."""
        known = self._descriptions.get(server)
        if known is None:
            from ..mcp.failures import McpFailure
            try:
                tools = self.mcp().describe(server)["tools"]
            except (McpFailure, KeyError):
                return None
            known = self._descriptions[server] = {t["name"]: t["description"] for t in tools
                                                  if isinstance(t.get("description"), str)}
        return known.get(remote) or None

    def dynamic_safety(self, handle: str, tool: str) -> str:
        """The class of a tool of a dynamic connection: as listed; `destructive` when unknown."""
        return self.mcp().dynamic_safety(handle, tool)

    # ---------------------------------------------------------------- shutdown
    def interrupt_form(self) -> bool:
        """Ctrl-C: if an elicitation form is open, it answers *cancel* and the program goes on (§8.7)."""
        elicitation = sys.modules.get("sagepy.mcp.elicitation")   # not loaded: no form was ever shown
        return elicitation is not None and elicitation.interrupt_open_form()

    def close(self) -> None:
        if self._mcp is not None:
            self._mcp.close_all()
        if self._tools is not None:
            self._tools.close()


def stop_point() -> None:
    """Called while an MCP request waits: a stopped agent or an ended test cancels the request."""
    ctx = current_context()
    if ctx is not None:
        ctx.check()
