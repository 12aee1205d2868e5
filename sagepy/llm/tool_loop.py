"""The function-calling loop of `divine(p, tools: [...])` (SPEC §4.12).

The loop sits above the effects chain: each model turn is one step (`ask`), and each call the model asks for
is one step built exactly as the program's own call would be (`call_step`), so mocks, tracing, the journal,
timeouts, safety classes and the built-in tools' sandbox apply to both alike. The loop itself only keeps the
conversation: it appends the model's answer and one tool message per call, sends every failure of a call back
to the model as `error: <display>`, and ends with the first answer that calls no tool (parsed and converted to
the target type by the boundary for a typed `divine`, with the retries of §4.10). A call's arguments and its
result stay JSON: they are checked and fitted to the function's types (`fitted_json`), never made Sage
values.

Calls of one answer run concurrently when every one of them is `read_only` (and `concurrent` allows it);
their tool messages keep the order of the model's calls either way.
"""
from __future__ import annotations

from typing import Any, Callable

from ..core import types as T
from ..core.convert import ConversionError, compact_json, fitted_json
from ..core.json_text import parse_json
from ..core.errors import SageRaise
from ..core.values import ErrorValue
from .client import retry_instructions
from .dialect import undo_nulls
from .offer import Offer, OfferedFunction

REPLY_LIMIT = 200


class LoopSettings:
    """The limits of one loop: model answers with tool calls (`max_steps`), the longest tool message
    (`result_limit`), attempts in total for a typed answer (`attempts`)."""

    __slots__ = ("max_steps", "result_limit", "attempts")

    def __init__(self, max_steps: int, result_limit: int, attempts: int) -> None:
        self.max_steps = max_steps
        self.result_limit = result_limit
        self.attempts = max(1, attempts)


class Callbacks:
    """What the loop needs from the effects boundary.

    - ask(messages, turn) -> the model's answer (`choices[0].message`) for the conversation so far;
    - call_step(function, arguments) -> a step ready to perform (arguments: the wire arguments, checked and
      fitted: an object for a typed function, the positional Strings of a built-in one, the JSON object for a
      dynamic one);
    - perform(step) -> its outcome as the model reads it: a String, or the fitted JSON of the result;
      safety(step) -> its class;
    - checkpoint() raises when the agent has been cancelled;
    - concurrent: whether calls of one answer may run at once; run_in_thread(fn) -> a started thread running
      fn for the calling agent;
    - value(text, target) -> the Sage value of a typed final answer's text, raising ValueError when it is not
      JSON and ConversionError when it does not fit.
    """

    __slots__ = ("ask", "call_step", "perform", "safety", "checkpoint", "concurrent", "run_in_thread", "value")

    def __init__(self, ask: Callable, call_step: Callable, perform: Callable, safety: Callable,
                 checkpoint: Callable, concurrent: bool, run_in_thread: Callable, value: Callable) -> None:
        self.ask = ask
        self.call_step = call_step
        self.perform = perform
        self.safety = safety
        self.checkpoint = checkpoint
        self.concurrent = concurrent
        self.run_in_thread = run_in_thread
        self.value = value


def llm_error(message: str) -> SageRaise:
    return SageRaise(ErrorValue("Llm", message))


def run_tool_loop(messages: list[dict], offer: Offer, target: T.Type, settings: LoopSettings,
                  callbacks: Callbacks) -> Any:
    """The value of the `divine`: the content of the model's first answer without tool calls, as a `String`
    or converted to `target`."""
    tool_turns = 0
    failed_parses = 0
    turn = 0
    while True:
        callbacks.checkpoint()
        turn += 1
        if turn > 1:
            offer.refresh()
        reply = callbacks.ask(list(messages), turn)
        calls = reply.get("tool_calls") if isinstance(reply, dict) else None
        content = reply.get("content") if isinstance(reply, dict) else None
        if isinstance(calls, list) and calls:
            tool_turns += 1
            if tool_turns > settings.max_steps:
                raise llm_error(f"tool loop exceeded {settings.max_steps} steps")
            calls = _normalized_calls(calls, turn)
            messages.append({"role": "assistant", "content": content if isinstance(content, str) else None,
                             "tool_calls": calls})
            for call, (text, failed) in zip(calls, _perform_calls(calls, offer, settings, callbacks)):
                message = {"role": "tool", "tool_call_id": call["id"], "content": text}
                if failed:   # the neutral form's mark of an `error: …` answer (sagepy.llm.provider)
                    message["is_error"] = True
                messages.append(message)
            continue
        text = content if isinstance(content, str) else ""
        if target == T.STRING:
            return text
        try:
            return callbacks.value(text, target)
        except (ValueError, ConversionError) as exc:
            error = str(exc)
        failed_parses += 1
        if failed_parses >= settings.attempts:
            raise llm_error(f"failed to parse structured response after {settings.attempts} attempts: {error}; "
                            f"last reply: {text[:REPLY_LIMIT]}")
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user", "content": retry_instructions(error)})


class ModelTurn:
    """The `detail` of a model turn's step: what the mocks and real layers need beyond the messages (the
    offer, the `divine`'s target type, the effect handler's overrides, the turn's number in the loop)."""

    __slots__ = ("offer", "target", "overrides", "turn")

    def __init__(self, offer: Offer, target: T.Type, overrides: dict | None, turn: int) -> None:
        self.offer = offer
        self.target = target
        self.overrides = overrides
        self.turn = turn


class _Prepared:
    """One call of the model's answer: its step, or the error message it already earned; `escaped` is what
    a concurrent call raised that is not a Sage error (a test's abort, the agent's cancellation)."""

    __slots__ = ("function", "step", "text", "failed", "escaped")

    def __init__(self, function: OfferedFunction | None, step: Any = None, text: str | None = None) -> None:
        self.function = function
        self.step = step
        self.text = text
        self.failed = text is not None   # an answer known before the call runs is an error
        self.escaped: BaseException | None = None


def _normalized_calls(calls: list, turn: int) -> list[dict]:
    """The calls of an answer in the form hosted APIs accept back in the history: a string `id`, unique in
    the answer (generated when the model gave none), a string name and `arguments` text. A name that no
    offered function has is kept: its call is answered with the unknown-tool error like any failed call."""
    normalized: list[dict] = []
    ids: set[str] = set()
    for k, call in enumerate(calls, 1):
        spec = call.get("function") if isinstance(call, dict) else None
        spec = spec if isinstance(spec, dict) else {}
        name = spec.get("name")
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id or call_id in ids:
            call_id = f"call_{turn}_{k}"
        ids.add(call_id)
        raw = spec.get("arguments")
        arguments = raw if isinstance(raw, str) else compact_json(raw if raw is not None else {})
        normalized.append({"id": call_id, "type": "function",
                           "function": {"name": name if isinstance(name, str) else "", "arguments": arguments}})
    return normalized


def _perform_calls(calls: list, offer: Offer, settings: LoopSettings,
                   callbacks: Callbacks) -> list[tuple[str, bool]]:
    """(tool message, whether it is an error) per call, in the order of the calls."""
    prepared = [_prepare(call, offer, callbacks) for call in calls]
    runnable = [p for p in prepared if p.step is not None]
    if (callbacks.concurrent and len(runnable) > 1
            and all(callbacks.safety(p.step) == "read_only" for p in runnable)):
        threads = [callbacks.run_in_thread(lambda p=p: _run_caught(p, callbacks)) for p in runnable]
        for thread in threads:
            thread.join()
        for p in runnable:
            if p.escaped is not None:
                raise p.escaped
        callbacks.checkpoint()
    else:
        for p in runnable:
            callbacks.checkpoint()
            _run(p, callbacks)
    return [_limited(p.text or "", p.failed, settings.result_limit) for p in prepared]


def _prepare(call: Any, offer: Offer, callbacks: Callbacks) -> _Prepared:
    spec = call["function"]
    name = spec["name"]
    function = offer.get(name)
    if function is None:
        return _Prepared(None, text=f"error: unknown tool '{name}'; the tools are: {', '.join(offer.names)}")
    raw = spec["arguments"]
    try:
        data = parse_json(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        if function.info is not None:
            arguments: Any = _wire_arguments(function, data)
        else:   # a `null` for a property the server does not require means: leave the argument out
            arguments = undo_nulls(data, offer.dialected(function))
        step = callbacks.call_step(function, arguments)
        step.call_id = call["id"]
        return _Prepared(function, step=step)
    except (ValueError, ConversionError) as exc:
        return _Prepared(function, text=f"error: invalid arguments for '{name}': {exc}")
    except SageRaise as exc:
        return _Prepared(function, text=f"error: {exc.error.display()}")


def _wire_arguments(function: OfferedFunction, data: dict) -> Any:
    """The wire arguments of a typed or built-in call, checked against the parameter types and written as the
    program's own call would send them (SPEC §5): the arguments object, keyed by parameter name, with the
    model's `null` for an `Option` (None) left out; a built-in tool's positional Strings."""
    info = function.info
    unknown = [key for key in data if key not in info.params]
    if unknown:
        raise ValueError(f"unknown argument '{unknown[0]}' (the parameters are: {', '.join(info.params)})")
    arguments = {}
    for pname, ptype in zip(info.params, function.param_types):
        optional = isinstance(ptype, T.OptionT)
        if pname in data:
            given = data[pname]
            if given is None and optional:
                continue
            try:
                arguments[pname] = fitted_json(given, ptype)
            except ConversionError as exc:
                raise ValueError(f"argument '{pname}': {exc}") from None
        elif not optional:
            raise ValueError(f"missing argument '{pname}'")
    return list(arguments.values()) if info.builtin else arguments


def _run(prepared: _Prepared, callbacks: Callbacks) -> None:
    try:
        value = callbacks.perform(prepared.step)
    except SageRaise as exc:
        prepared.text = f"error: {exc.error.display()}"
        prepared.failed = True
        return
    prepared.text, prepared.failed = result_text(prepared.function, value)


def _run_caught(prepared: _Prepared, callbacks: Callbacks) -> None:
    try:
        _run(prepared, callbacks)
    except BaseException as exc:   # handed to the loop's thread, which raises it
        prepared.escaped = exc


def result_text(function: OfferedFunction, value: Any) -> tuple[str, bool]:
    """What the model reads back, and whether it is an error: a String result (a dynamic tool's, or of a
    function that returns String) as it is, anything else (its fitted JSON) as compact JSON (SPEC §5)."""
    info = function.info
    if info is None or info.ret == T.STRING:
        return value, False
    try:
        return compact_json(value, finite=True), False
    except ValueError:   # NaN or an infinity: worded as the conversion to JSON words it, with its path
        try:
            fitted_json(value, info.ret)
        except ConversionError as exc:
            return f"error: the result of {function.label} has no JSON form: {exc}", True
        raise


def _limited(text: str, failed: bool, limit: int) -> tuple[str, bool]:
    if len(text) > limit:
        return f"error: result too large ({len(text)} characters, limit {limit}); ask for less", True
    return text, failed


def scripted_answer(calls: list[tuple[str, str, dict]], offer: Offer, turn: int) -> dict:
    """The assistant message of a scripted turn `mock divine -> call T.f(…), …` (SPEC §9.3): (tool, fn,
    arguments object) per call, named as offered; a function the `divine` did not offer keeps the name
    `<Tool>__<fn>`, which the loop then answers as an unknown tool, as a real model's mistake would be."""
    tool_calls = []
    for k, (tool, fn, arguments) in enumerate(calls, 1):
        name = offer.name_of(tool, fn) or f"{tool}__{fn}"
        tool_calls.append({"id": f"call_{turn}_{k}", "type": "function",
                           "function": {"name": name, "arguments": compact_json(arguments)}})
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def final_answer(data: Any, target: T.Type) -> dict:
    """The assistant message of a scripted final answer `mock divine -> v;` (`data`: v's JSON for a typed
    `divine`, whose answer is that JSON's text)."""
    return {"role": "assistant", "content": data if target == T.STRING else compact_json(data)}

