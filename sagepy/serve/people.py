"""People through the calling client (SPEC §21): in a served run, an approval (§17.1) and `ask` (§17.2) go to
the client that made the call as a form elicitation, when it declared the elicitation capability on a
handshake-era connection (`elicitation/create` on the call's own stream). A decline or cancel is a denial;
for `ask`, the catchable error of no answer. Without elicitation, no one can be asked here, and §17.3 applies:
a durable run pauses, a plain one is denied. The 2026-07-28 era's input-required results (SEP-2322) are not
served yet: a client on that era counts as one without elicitation.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..core.errors import AgentCancelled, SageRaise
from ..core.values import ErrorValue
from ..decisions import now_utc

if TYPE_CHECKING:
    from .server import CallPorts

APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Let the call go ahead"},
        "reason": {"type": "string", "title": "Reason", "description": "Why (optional)"},
    },
    "required": ["approve"],
}
ASK_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer"}},
    "required": ["answer"],
}


class ClientPeople:
    """The `people` port of a served run's Host (sagepy.engine.host): the calling client answers."""

    def __init__(self, ports: CallPorts) -> None:
        self.ports = ports
        session = ports.ctx.session
        info = getattr(session.client_params, "client_info", None)
        self.by = f"mcp client {info.name}" if info is not None else "mcp client"

    @property
    def available(self) -> bool:
        session = self.ports.ctx.session
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return False
        return session.protocol_version not in MODERN_PROTOCOL_VERSIONS

    def approve(self, ctx: Any, label: str, arguments_json: str, source: str) -> dict:
        message = f"approve {label} {arguments_json} (asked by the {source})?"
        result = self._elicit(message, APPROVAL_SCHEMA)
        content = result.content or {}
        if result.action == "accept" and content.get("approve") is True:
            return {"approved": True, "by": self.by, "at": now_utc()}
        reason = str(content.get("reason") or "").strip() if result.action == "accept" else ""
        return {"approved": False, "by": self.by, "at": now_utc(),
                "reason": reason or ("denied" if result.action == "accept" else f"the client answered {result.action}")}

    def ask(self, ctx: Any, question: str) -> str:
        result = self._elicit(question, ASK_SCHEMA)
        answer = (result.content or {}).get("answer")
        if result.action != "accept" or not isinstance(answer, str):
            raise SageRaise(ErrorValue("Agent", f"no answer: the client answered {result.action}"))
        return answer

    def _elicit(self, message: str, schema: dict) -> Any:
        ports = self.ports
        ports.log(f"call of {ports.tool}: asking the client: {message}")
        return ports.call_async(self._elicit_until_stopped, message, schema)

    async def _elicit_until_stopped(self, message: str, schema: dict) -> Any:
        """The client's answer, unless the call is cancelled first (then the run stops here)."""
        ctx = self.ports.ctx
        answers: list = []
        async with anyio.create_task_group() as tg:
            async def ask() -> None:
                answers.append(await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id))
                tg.cancel_scope.cancel()

            async def watch() -> None:
                await self.ports.stopped.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(ask)
            tg.start_soon(watch)
        if not answers:
            raise AgentCancelled()
        return answers[0]
