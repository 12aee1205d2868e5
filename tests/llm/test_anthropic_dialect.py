"""The Anthropic dialect of parameter schemas (SPEC §4.13), checked against the Messages server's `input_schema`
rules (JSON Schema draft 2020-12, object root, property names)."""
from __future__ import annotations

import pytest
from messages_server import input_schema_problem

from sagepy.core import types as T
from sagepy.core.convert import json_schema
from sagepy.llm import anthropic_dialect
from sagepy.llm.offer import OfferedFunction

TAG = T.RecordT(T.RecordInfo("Tag", [], [("name", T.STRING), ("weight", T.OptionT(T.INT))]))
NODE_INFO = T.RecordInfo("Node", [], [])
NODE = T.RecordT(NODE_INFO)
NODE_INFO.fields = [("label", T.STRING), ("children", T.ListT(NODE))]
COLOUR = T.EnumT(T.EnumInfo("Colour", [], [("Red", None), ("Rgb", T.ListT(T.INT))]))


def ours(*params: tuple[str, T.Type]) -> dict:
    record = T.RecordT(T.RecordInfo("f", [], list(params)))
    return anthropic_dialect.dialectize(json_schema(record), from_server=False).parameters


def objects(schema, found=None) -> list[dict]:
    found = [] if found is None else found
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append(schema)
        for value in schema.values():
            objects(value, found)
    elif isinstance(schema, list):
        for value in schema:
            objects(value, found)
    return found


@pytest.mark.parametrize("params", [
    (),
    (("title", T.STRING), ("tags", T.ListT(TAG)), ("due", T.OptionT(T.STRING))),
    (("tree", NODE),),
    (("colour", COLOUR), ("extra", T.MapT(T.STRING, T.INT))),
])
def test_program_schemas_are_accepted_and_closed(params):
    schema = ours(*params)
    assert input_schema_problem(schema) is None
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert all(o.get("additionalProperties") is False for o in objects(schema))


def test_refs_stay_and_optional_fields_stay_optional():
    schema = ours(("tree", NODE), ("due", T.OptionT(T.STRING)))
    text = repr(schema)
    assert "$ref" in text and "$defs" in text   # recursion is expressed, not inlined
    assert schema["required"] == ["tree"]


SERVER = {"type": "object", "properties": {
    "query": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$", "description": "what"},
    "limit": {"type": "integer", "minimum": 1, "exclusiveMinimum": True, "default": 10},
    "cap": {"type": "number", "maximum": 5, "exclusiveMaximum": False},
    "when": {"type": "string", "format": "date-time"},
    "free": {}},
    "required": ["query"], "$schema": "http://json-schema.org/draft-07/schema#"}


def test_server_schemas_are_sent_as_listed_but_valid():
    dialected = anthropic_dialect.dialectize(SERVER, from_server=True)
    schema = dialected.parameters
    assert input_schema_problem(SERVER) is not None   # a draft-04 boolean bound: the API would refuse it
    assert input_schema_problem(schema) is None
    assert schema["properties"]["query"] == SERVER["properties"]["query"]   # nothing moved into a description
    assert schema["properties"]["limit"] == {"type": "integer", "exclusiveMinimum": 1, "default": 10}
    assert schema["properties"]["cap"] == {"type": "number", "maximum": 5}
    assert schema["properties"]["when"]["format"] == "date-time" and schema["properties"]["free"] == {}
    assert schema["required"] == ["query"] and "additionalProperties" not in schema
    assert dialected.omissions is None and dialected.hint == ""
    assert SERVER["properties"]["limit"]["exclusiveMinimum"] is True   # the listing itself is not changed


@pytest.mark.parametrize("listed,sent", [(None, {"type": "object", "properties": {}}), ({}, {"type": "object"}),
                                         ({"type": "array", "items": {}}, {"type": "object", "properties": {}}),
                                         ("nonsense", {"type": "object", "properties": {}})])
def test_missing_or_non_object_server_schema_becomes_an_object(listed, sent):
    schema = anthropic_dialect.dialectize(listed, from_server=True).parameters
    assert schema == sent and input_schema_problem(schema) is None


def test_tool_shape_and_descriptions_without_hints():
    function = OfferedFunction.dynamic("mcp:1", "docs", {"name": "search", "description": "Find docs.",
                                                         "inputSchema": SERVER})
    dialected = function.dialected(anthropic_dialect)
    tool = function.definition("docs__search", anthropic_dialect, dialected, lambda tool, fn: None)
    assert tool == {"name": "docs__search", "description": "Find docs.", "input_schema": dialected.parameters}
    bare = anthropic_dialect.tool("x", None, dialected)
    assert set(bare) == {"name", "input_schema"}
