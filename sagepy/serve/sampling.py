"""The client's model (SPEC §21, `[serve] model = "client"`): `divine` in a served run is sent to the calling
client as `sampling/createMessage`, so that a served agent thinks with the host's model and needs no API key.

`ClientSampling` is the run's model transport (sagepy.llm.client.LlmClient's `transport`): it takes the OpenAI
chat bodies the LLM client builds and answers in their form, so typed `divine`, its JSON instructions and its
retries work as with any model. Sampling is a server-to-client request of the handshake era; a client that did
not declare the sampling capability, or speaks the 2026-07-28 era, gets `LLM error: the calling client does
not offer sampling`. `divine` with `tools:` is not sent through sampling.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..llm.transport import Answer, TransportError

if TYPE_CHECKING:
    from .server import CallPorts

NO_SAMPLING = "the calling client does not offer sampling"
DEFAULT_MAX_TOKENS = 1024


class ClientSampling:
    endpoint = "mcp-client-sampling"

    def __init__(self, ports: CallPorts) -> None:
        self.ports = ports

    def redact(self, text: str) -> str:
        return text

    def close(self) -> None:
        pass

    def post(self, body: dict, model: str | None = None) -> Answer:
        session = self.ports.ctx.session
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.sampling is None or \
                session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise TransportError(NO_SAMPLING)
        if body.get("tools"):
            raise TransportError("divine with tools cannot be sent to the calling client's sampling")
        system = "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
        messages = [(m["role"], m["content"]) for m in body["messages"] if m["role"] in ("user", "assistant")]
        try:
            result = self.ports.call_async(self._create, messages, system or None, body.get("max_tokens"),
                                           body.get("temperature"))
        except Exception as exc:   # the client refused or failed the request
            raise TransportError(f"the calling client's sampling failed: {exc}") from None
        content = result.content
        text = getattr(content, "text", None)
        if text is None:
            raise TransportError(f"the calling client's model answered no text ({getattr(content, 'type', '?')})")
        return Answer({"model": result.model, "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": text}}]}, 1)

    async def _create(self, messages: list, system: str | None, max_tokens: int | None,
                      temperature: float | None) -> Any:
        import mcp_types as types
        ctx = self.ports.ctx
        sampled = [types.SamplingMessage(role=role, content=types.TextContent(type="text", text=text))
                   for role, text in messages]
        return await ctx.session.create_message(sampled, max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
                                                system_prompt=system, temperature=temperature,
                                                related_request_id=ctx.request_id)
