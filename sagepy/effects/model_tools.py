"""`divine(p, tools: [...])` on the effects path (SPEC §4.12): the tool loop of sagepy/llm/tool_loop.py, with
each model turn one `llm` step and each call the model asks for one step built as the program's own call
would be (`Effects.wire_tool_step`, `Effects.mcp_call_step`), so every layer of the chain sees both alike.
A call the model asks for stays JSON: its arguments are checked and fitted to the parameter types without
becoming Sage values, and its result goes back to the model as fitted JSON (SPEC §4.12).

A model turn's step has the conversation so far and the offered tool names as its arguments
(`{"messages": […], "tools": […]}`, in the provider-neutral form of sagepy.llm.provider, so a run journaled
with one provider resumes with another), no `ret` (its outcome is the model's answer, a neutral assistant
message, as JSON data, which needs no conversion), and a `ModelTurn` as its detail.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from ..core import types as T
from ..check.symbols import ToolRef
from ..core.convert import from_json
from ..llm.parse import extract_json
from ..core.json_text import compact_json
from ..llm.client import opening_messages
from ..llm.offer import Offer, OfferedFunction
from ..llm.providers import provider_for
from ..llm.tool_loop import Callbacks, LoopSettings, ModelTurn, run_tool_loop
from .step import UNREAD, CallStep, ModelStep, next_number, set_current_context


def divine_with_tools(effects: Any, ctx: Any, prompt: str, target: T.Type, infer: bool, overrides: dict | None,
                      offered: list, max_steps: int | None) -> Any:
    """`offered`: the checker's `ToolRef` of each typed or built-in function, and the handle (a `str`) of each
    dynamic connection, in offer order."""
    config = effects.settings.llm
    static = [OfferedFunction.typed(entry, entry.param_types, entry.doc) for entry in offered
              if isinstance(entry, ToolRef)]
    handles = [entry for entry in offered if isinstance(entry, str)]
    servers = {entry.tool: entry.server for entry in offered if isinstance(entry, ToolRef)}

    def remote_description(tool: str, remote: str) -> str | None:
        return effects.world.remote_description(servers[tool], remote)
    # a handle from a mocked `mcp_connect` has no server behind it: its facts list nothing
    offer = Offer(static, handles, effects.facts.listing, remote_description,
                  provider_for(config).dialect)
    settings = LoopSettings(max_steps if max_steps is not None else config.max_tool_steps,
                            config.max_tool_result_chars, config.infer_retries)
    target_name = "infer" if infer else "divine"

    asked: list[ModelStep] = []   # the last model turn's step

    def ask(messages: list[dict], turn: int) -> dict:
        step = ModelStep(target=target_name, arguments={"messages": messages, "tools": offer.names}, agent=ctx,
                         turn=ModelTurn(offer, target, overrides, turn), number=next_number(ctx))
        asked[:] = [step]
        return effects.perform(step)

    def value(text: str, target: T.Type) -> Any:
        """A typed final answer's value: the one a mock's answer was converted to, else its text's."""
        if asked and asked[0].read is not UNREAD:
            return asked[0].read
        return from_json(extract_json(text), target)

    def call_step(function: OfferedFunction, arguments: Any) -> CallStep:
        # the calls of one answer are built, and their approvals decided, in the model's order before any of
        # them is made: each approval, and each approved call, takes the next step number (SPEC §17.1)
        if function.info is not None:
            step = effects.wire_tool_step(ctx, function.info, arguments, "model")
        else:
            caller = ToolRef.dynamic(function.server, function.remote, T.STRING)
            step = effects.mcp_call_step(ctx, [function.handle, function.remote, compact_json(arguments)], caller)
        effects.decide(step)
        return step

    callbacks = Callbacks(ask, call_step, effects.value, lambda step: step.safety, ctx.check,
                          concurrent=effects.facts.concurrent_calls, run_in_thread=_thread_of(ctx), value=value)
    return run_tool_loop(opening_messages(prompt, target), offer, target, settings, callbacks)


def _thread_of(ctx: Any) -> Callable[[Callable[[], None]], threading.Thread]:
    def run_in_thread(target: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            set_current_context(ctx)   # the layers below find the calling agent (cancellation, trace)
            target()
        thread = threading.Thread(target=run, name="model-tool-call", daemon=True)
        thread.start()
        return thread
    return run_in_thread
