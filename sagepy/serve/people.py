"""People through the calling client (SPEC §21): in a served run, an approval (§17.1) and `ask` (§17.2) go to
the client that made the call as a form elicitation, when it declared the elicitation capability — on the
handshake era as `elicitation/create` on the call's own stream, on the 2026-07-28 era as an input-required
result whose retry continues the run (sagepy.serve.live). A decline or cancel is a denial; for `ask`, the
catchable error of no answer. Without elicitation, no one can be asked here, and §17.3 applies: a durable run
pauses, a plain one is denied.

The questions of the MCP servers a served run calls (§8.7) go to the calling client the same way, unless their
`elicitation` setting says `decline` or `defaults`; a client without elicitation declines them.
"""
from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import mcp_types as types

from ..core.errors import SageRaise
from ..core.values import ErrorValue
from ..decisions import now_utc

if TYPE_CHECKING:
    from .live import CallPorts

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
        self.by = ports.client

    @property
    def available(self) -> bool:
        capabilities = self.ports.capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)

    def approve(self, ctx: Any, label: str, arguments_json: str, source: str) -> dict:
        message = f"approve {label} {arguments_json} (asked by the {source})?"
        result = self._elicit(message, APPROVAL_SCHEMA)
        action = getattr(result, "action", "cancel")
        content = getattr(result, "content", None) or {}
        if action == "accept" and content.get("approve") is True:
            return {"approved": True, "by": self.by, "at": now_utc()}
        reason = str(content.get("reason") or "").strip() if action == "accept" else ""
        return {"approved": False, "by": self.by, "at": now_utc(),
                "reason": reason or ("denied" if action == "accept" else f"the client answered {action}")}

    def ask(self, ctx: Any, question: str) -> str:
        result = self._elicit(question, ASK_SCHEMA)
        action = getattr(result, "action", "cancel")
        answer = (getattr(result, "content", None) or {}).get("answer")
        if action != "accept" or not isinstance(answer, str):
            raise SageRaise(ErrorValue("Agent", f"no answer: the client answered {action}"))
        return answer

    def elicit(self, server: str, request: Any) -> Any:
        """A question of MCP server `server` (a sagepy.mcp.elicitation.ElicitationRequest), answered by the
        calling client: an ElicitationAnswer."""
        from ..mcp.elicitation import DECLINE, ElicitationAnswer, defaults_answer
        if request.setting == "defaults":
            return defaults_answer(request)
        capabilities = self.ports.capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if request.setting == "decline" or elicitation is None:
            return DECLINE
        if request.mode == "url":
            if elicitation.url is None:
                return DECLINE
            params: Any = types.ElicitRequestURLParams(message=request.message, url=request.url or "",
                                                       elicitation_id=secrets.token_hex(8))
        else:
            if not self.available:
                return DECLINE
            params = types.ElicitRequestFormParams(message=request.message, requested_schema=request.schema or {
                "type": "object", "properties": {}})
        self.ports.log(f"call of {self.ports.tool}: passing a question of MCP server '{server}' to the client")
        result = self._input(types.ElicitRequest(params=params))
        action = getattr(result, "action", "cancel")
        return ElicitationAnswer(action, getattr(result, "content", None) or {})

    def _elicit(self, message: str, schema: dict) -> Any:
        ports = self.ports
        ports.log(f"call of {ports.tool}: asking the client: {message}")
        return self._input(types.ElicitRequest(params=types.ElicitRequestFormParams(message=message,
                                                                                requested_schema=schema)))

    def _input(self, request: types.ElicitRequest) -> Any:
        """The client's ElicitResult, or None when it answered with an error (counted as a cancel)."""
        try:
            return self.ports.input(request)
        except Exception as exc:   # the client refused the request: no answer
            self.ports.log(f"call of {self.ports.tool}: the client refused the question ({exc})")
            return None
