"""The loop of sagepy/llm/tool_loop.py with its callbacks replaced: cancellation, concurrent calls and what
escapes them, in-process (the end-to-end behaviour is in test_tool_loop.py)."""
from __future__ import annotations

import threading
import time

import pytest

from sagepy.core import types as T
from sagepy.core.convert import from_json
from sagepy.check.symbols import ToolRef
from sagepy.llm.offer import Offer, OfferedFunction
from sagepy.llm.parse import extract_json
from sagepy.llm.tool_loop import Callbacks, LoopSettings, result_text, run_tool_loop


class Cancelled(Exception):
    pass


def offer() -> Offer:
    info = ToolRef("Fs", "exists", "exists", ["path"], [T.STRING], T.BOOL, True)
    return Offer([OfferedFunction.typed(info, [T.STRING], None)], [], lambda h: [], lambda t, r: None)


def calls(*paths: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "Fs__exists", "arguments": f'{{"path": "{p}"}}'}}
        for i, p in enumerate(paths)]}


class StepText(str):
    """A step of these tests: the call's text, which the loop tags with the model's call id."""
    call_id = None


def callbacks(answers: list, perform, *, cancel_after: int | None = None, concurrent: bool = True) -> Callbacks:
    asked = []

    def ask(messages: list, turn: int) -> dict:
        asked.append(messages)
        return answers.pop(0)

    checks = [0]

    def checkpoint() -> None:
        checks[0] += 1
        if cancel_after is not None and checks[0] > cancel_after:
            raise Cancelled()

    def run_in_thread(target):
        thread = threading.Thread(target=target)
        thread.start()
        return thread

    return Callbacks(ask, lambda function, arguments: StepText(arguments[0]), perform, lambda step: "read_only", checkpoint,
                     concurrent, run_in_thread, lambda text, t: from_json(extract_json(text), t))


def test_a_cancelled_agent_stops_between_calls() -> None:
    performed = []
    cb = callbacks([calls("a", "b", "c"), {"role": "assistant", "content": "never"}], lambda step: performed.append(step) or True,
                   cancel_after=2, concurrent=False)
    with pytest.raises(Cancelled):
        run_tool_loop([{"role": "user", "content": "go"}], offer(), T.STRING, LoopSettings(10, 1000, 1), cb)
    assert performed == ["a"]


def test_concurrent_calls_overlap_and_keep_their_order() -> None:
    started = threading.Barrier(3, timeout=5)   # the three calls are running at the same time

    def perform(step: str) -> bool:
        started.wait()
        time.sleep(0.01 * (3 - ord(step[0]) + ord("a")))   # later calls finish first
        return step == "b"

    answers = [calls("a", "b", "c"), {"role": "assistant", "content": "done"}]
    cb = callbacks(answers, perform)
    messages = [{"role": "user", "content": "go"}]
    assert run_tool_loop(messages, offer(), T.STRING, LoopSettings(10, 1000, 1), cb) == "done"
    assert [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"] == \
        [("c0", "false"), ("c1", "true"), ("c2", "false")]


def test_what_a_concurrent_call_raises_beyond_sage_errors_reaches_the_loop() -> None:
    def perform(step: str) -> bool:
        if step == "b":
            raise Cancelled()
        return True

    with pytest.raises(Cancelled):
        run_tool_loop([{"role": "user", "content": "go"}], offer(), T.STRING, LoopSettings(10, 1000, 1),
                      callbacks([calls("a", "b"), {"role": "assistant", "content": "done"}], perform))


def test_a_result_goes_back_as_compact_json_and_one_with_no_json_form_as_an_error() -> None:
    info = ToolRef("Calc", "ratios", "ratios", [], [], T.ListT(T.FLOAT), False)
    function = OfferedFunction.typed(info, [], None)
    assert result_text(function, [1.0, 0.5]) == ("[1.0,0.5]", False)
    assert result_text(function, [1.0, float("nan")]) == (
        "error: the result of Calc.ratios has no JSON form: expected a finite Float at $[1], got NaN: "
        "NaN and infinities have no JSON form", True)
    text = ToolRef("Calc", "name", "name", [], [], T.STRING, False)
    assert result_text(OfferedFunction.typed(text, [], None), "error: as text") == ("error: as text", False)
