"""Lenient reading of JSON in a model's reply (SPEC §4.10): whole text, first fence, first balanced span."""
from __future__ import annotations

import pytest

from sagepy.llm.parse import extract_json


@pytest.mark.parametrize("text, data", [
    ('{"a": 1}', {"a": 1}),
    ('  [1, 2]\n', [1, 2]),
    ('"Red"', "Red"),
    ("42", 42),
    ("null", None),
    ('Here you go:\n```json\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
    ('```\n[true]\n```', [True]),
    ('Sure! The answer is {"name": "Ada", "tags": ["x]", "{y"]} as requested.', {"name": "Ada", "tags": ["x]", "{y"]}),
    ('Result: [1, [2, 3]] done', [1, [2, 3]]),
    ('See [note] first, then {"ok": true}', {"ok": True}),
    ('an unclosed [ bracket and then {"k": "v"}', {"k": "v"}),
    ('{"s": "quote \\" and } brace"} trailing', {"s": 'quote " and } brace'}),
])
def test_extracts(text, data):
    assert extract_json(text) == data


def test_fence_wins_over_a_later_span():
    assert extract_json('{"not": json} ```json\n{"a": 1}\n```') == {"a": 1}


@pytest.mark.parametrize("text, message", [
    ("", "the reply is empty"),
    ("   \n", "the reply is empty"),
    ("no json here", "the reply is not JSON: Expecting value at line 1 column 1"),
    ("```json\n{oops}\n```", "the fenced block is not valid JSON: "),
    ("try {a: 1} please", "the reply holds no valid JSON object or array: "),
    ('{"a": NaN}', "the reply holds no valid JSON object or array: NaN is not allowed in JSON"),
])
def test_failures_say_why(text, message):
    with pytest.raises(ValueError) as info:
        extract_json(text)
    assert str(info.value).startswith(message)
