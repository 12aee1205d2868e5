"""The strict-schema dialectizer (SPEC §4.12) over tricky schemas: ours from §5 and servers' inputSchemas.

Every dialectized schema that claims `strict` must pass the strict server's validator, and every one that
does not must fail it: the flag is exactly "the hosted API would accept this with strict: true".
"""
from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel
from strict_server import strict_schema_problem

from sagepy.core.convert import json_schema
from sagepy.llm.dialect import EMPTY_PARAMETERS, Dialected, dialectize, undo_nulls
from sagepy.core.types import (
    BOOL,
    ERROR,
    FLOAT,
    INT,
    STRING,
    EnumInfo,
    EnumT,
    ListT,
    MapT,
    OptionT,
    RecordInfo,
    RecordT,
    ResultT,
    TupleT,
)

POINT = RecordT(RecordInfo("Point", [], [("x", INT), ("y", INT)]))
ITEM = RecordT(RecordInfo("Item", [], [("id", INT), ("note", OptionT(STRING)), ("tags", ListT(STRING))]))
ORDER = RecordT(RecordInfo("Order", [], [("items", ListT(ITEM)), ("owner", OptionT(POINT))]))
COLOR = EnumT(EnumInfo("Color", [], [("Red", None), ("Green", None)]))
EVENT = EnumT(EnumInfo("Event", [], [("Ping", None), ("Move", POINT), ("Say", STRING)]))
SHAPE = EnumT(EnumInfo("Shape", [], [("Empty", None), ("Rect", TupleT([FLOAT, FLOAT]))]))


def _linked() -> RecordT:
    # record Node { value: Int, next: Option<Node> }: a recursive record, written with $defs/$ref by §5.
    info = RecordInfo("Node", [], [])
    node = RecordT(info)
    info.fields = [("value", INT), ("next", OptionT(node))]
    return node


def params(**types) -> dict:
    """The parameter object of a Sage function with these parameters, as §4.12 builds it from §5."""
    return {"type": "object", "properties": {n: json_schema(t) for n, t in types.items()},
            "required": [n for n, t in types.items() if not isinstance(t, OptionT)]}


# Captured from a real MCP server: the Python SDK's MCPServer (`await server.list_tools()`) serving
# tests/tools_cli/servers/rich.py; SEARCH is its `search` tool (nested pydantic models under $defs, an enum,
# a map, defaults, nullable optionals), PLANT a tool `plant(root: Node, note: str | None = None)` registered
# on the same server with `class Node(BaseModel): label: str; children: list["Node"] = []` (recursive $ref).
SEARCH = {
    "$defs": {
        "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
        "Query": {"properties": {
            "text": {"title": "Text", "type": "string"},
            "tags": {"items": {"$ref": "#/$defs/Tag"}, "title": "Tags", "type": "array"},
            "color": {"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}], "default": None},
            "limits": {"additionalProperties": {"type": "integer"}, "default": {}, "title": "Limits",
                       "type": "object"}},
            "required": ["text", "tags"], "title": "Query", "type": "object"},
        "Tag": {"properties": {"name": {"title": "Name", "type": "string"},
                               "weight": {"default": 1.0, "title": "Weight", "type": "number"}},
                "required": ["name"], "title": "Tag", "type": "object"}},
    "properties": {"query": {"$ref": "#/$defs/Query"},
                   "page": {"default": 1, "title": "Page", "type": "integer"},
                   "exact": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None, "title": "Exact"}},
    "required": ["query"], "title": "searchArguments", "type": "object"}
PLANT = {
    "$defs": {"Node": {"properties": {
        "label": {"title": "Label", "type": "string"},
        "children": {"default": [], "items": {"$ref": "#/$defs/Node"}, "title": "Children", "type": "array"}},
        "required": ["label"], "title": "Node", "type": "object"}},
    "properties": {"root": {"$ref": "#/$defs/Node"},
                   "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Note"}},
    "required": ["root"], "title": "plantArguments", "type": "object"}
SEARCH_WITHOUT_MAP = copy.deepcopy(SEARCH)
del SEARCH_WITHOUT_MAP["$defs"]["Query"]["properties"]["limits"]


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Window(BaseModel):
    start: str
    days: int = 7


def _nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


def _chain(n: int) -> dict:
    """n distinct types under $defs, each holding the next: deep, but not recursive."""
    defs = {f"D{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/D{i + 1}"}}, "required": ["next"]}
            for i in range(n - 1)}
    defs[f"D{n - 1}"] = {"type": "string"}
    return {"$defs": defs, "type": "object", "properties": {"d": {"$ref": "#/$defs/D0"}}, "required": ["d"]}


# (id, schema, from_server, strict, hint, a fragment `loose` must mention)
TABLE = [
    ("no parameters", None, False, True, "", ""),
    ("no properties", {"type": "object"}, True, True, "", ""),
    ("scalars", params(a=INT, b=FLOAT, c=BOOL, d=STRING), False, True, "", ""),
    ("nested records", params(order=ORDER), False, True, "", ""),
    ("Option inside a list", params(points=ListT(OptionT(POINT))), False, True, "", ""),
    ("Option parameter", params(note=OptionT(STRING), n=INT), False, True, "", ""),
    ("payload-free enum", params(c=COLOR), False, True, "", ""),
    ("enum with payloads", params(e=EVENT), False, True, "", ""),
    ("Result", params(r=ResultT(INT, STRING)), False, True, "", ""),
    ("Error", params(e=ERROR), False, True, "", ""),
    ("free-form Map", params(m=MapT(STRING, INT)), False, False, "", "free-form map"),
    ("tuple payload", params(s=SHAPE), False, False, "Constraints: s.Rect: minItems 2, maxItems 2.", "tuple"),
    ("recursive record", params(n=_linked()), False, False, "", "recursion cut after 8 levels"),
    ("server search ($defs, map)", SEARCH, True, False,
     "Constraints: query.tags[].weight: default 1.0; query.limits: default {}; page: default 1.",
     "query.limits: a free-form map"),
    ("server search without the map", SEARCH_WITHOUT_MAP, True, True,
     "Constraints: query.tags[].weight: default 1.0; page: default 1.", ""),
    ("server recursive $ref", PLANT, True, False, "Constraints: root.children: default [].",
     "recursion cut after 8 levels"),
    ("server format/pattern/range", {
        "type": "object",
        "properties": {"due": {"type": "string", "format": "date-time"},
                       "title": {"type": "string", "maxLength": 80, "pattern": "^[A-Z]"},
                       "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100, "multipleOf": 2},
                       "tags": {"type": "array", "items": {"type": "string", "minLength": 1},
                                "minItems": 1, "uniqueItems": True}},
        "required": ["due", "title", "count", "tags"]}, True, True,
     "Constraints: due: format date-time; title: maxLength 80, pattern ^[A-Z]; count: minimum 1, "
     "exclusiveMaximum 100, multipleOf 2; tags: minItems 1, uniqueItems true; tags[]: minLength 1.", ""),
    ("server optional properties", {
        "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "default": "Text"}},
        "required": ["a"]}, True, True, 'Constraints: b: default "Text".', ""),
    ("server property without a type", {
        "type": "object", "properties": {"x": {"description": "anything"}}, "required": ["x"]}, True, False, "",
     "x: a schema without a type"),
    ("server root anyOf", {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                                     {"type": "object", "properties": {"b": {"type": "string"}}}]},
     True, False, "", "a union at the root"),
    ("server oneOf and allOf", {
        "type": "object", "properties": {
            "target": {"oneOf": [{"type": "string", "const": "all"},
                                 {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}]},
            "range": {"allOf": [{"type": "object", "properties": {"from": {"type": "integer"}}, "required": ["from"]},
                                {"properties": {"to": {"type": "integer"}}}]}},
        "required": ["target", "range"]}, True, True, "", ""),
    ("server type-less enum", {"type": "object", "properties": {"mode": {"enum": ["fast", "slow"]}},
                               "required": ["mode"]}, True, True, "", ""),
    ("server nested free-form object", {
        "type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}, True, False, "",
     "meta: a free-form map"),
    ("server open object", {
        "type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True}, True, False, "",
     "arguments: a free-form map"),
    ("objects 10 deep", _nested(9), True, True, "", ""),
    ("objects 11 deep", _nested(11), True, False, "", "nested more than 10 deep"),
    ("server nullable type list", {
        "type": "object", "properties": {"u": {"type": ["string", "null"], "enum": ["F", "C", None]}}},
     True, True, "", ""),
    ("draft-7 definitions, $ref with a description", {
        "definitions": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
        "type": "object", "properties": {"p": {"$ref": "#/definitions/P", "description": "the point"}},
        "required": ["p"]}, True, True, "", ""),
    ("a chain of 10 distinct $refs is not recursion", _chain(10), True, True, "", ""),
    ("metadata dropped", {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                          "properties": {"a": {"type": "string", "readOnly": True, "x-internal": 1}},
                          "required": ["a"]}, True, True, "", ""),
]


@pytest.mark.parametrize("schema, from_server, strict, hint, loose",
                         [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_dialect_table(schema, from_server, strict, hint, loose):
    before = copy.deepcopy(schema)
    d = dialectize(schema, from_server=from_server)
    assert schema == before, "the input schema was mutated"
    assert d.strict is strict, d.loose
    assert d.hint == hint
    assert loose in " / ".join(d.loose)
    problem = strict_schema_problem(d.parameters)
    if strict:
        assert problem is None, problem
    else:
        assert problem is not None, "a schema that is not strict passes the strict validator"
    assert dialectize(schema, from_server=from_server) == d, "not deterministic"
    json.dumps(d.parameters)  # plain JSON, no shared Python objects that JSON cannot express


def _walk(schema):
    yield schema
    if isinstance(schema, dict):
        for value in schema.values():
            yield from _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk(value)


@pytest.mark.parametrize("schema, from_server", [(row[1], row[2]) for row in TABLE], ids=[row[0] for row in TABLE])
def test_every_closed_object_requires_all_its_properties(schema, from_server):
    d = dialectize(schema, from_server=from_server)
    for node in _walk(d.parameters):
        if isinstance(node, dict) and node.get("additionalProperties") is False:
            assert node["required"] == list(node["properties"])
        assert not (isinstance(node, dict) and ("$ref" in node or "oneOf" in node or "$defs" in node))


def test_ref_siblings_refine_the_inlined_target():
    d = dialectize(TABLE[[r[0] for r in TABLE].index("draft-7 definitions, $ref with a description")][1], from_server=True)
    assert d.parameters["properties"]["p"] == {"type": "object", "properties": {"x": {"type": "integer"}},
                                               "required": ["x"], "additionalProperties": False,
                                               "description": "the point"}


def test_no_parameters_is_the_empty_strict_object():
    for schema in (None, {}, {"type": "object"}, {"type": "object", "properties": {}}):
        assert dialectize(schema) == Dialected(EMPTY_PARAMETERS, True)
    dialectize(None).parameters["required"].append("x")  # callers may change their copy
    assert EMPTY_PARAMETERS["required"] == []


def test_output_shares_nothing_with_the_input():
    schema = {"type": "object", "properties": {"e": {"type": ["string", "null"], "enum": ["a", None]}}}
    d = dialectize(schema, from_server=True)
    d.parameters["properties"]["e"]["enum"].append("b")
    d.parameters["properties"]["e"]["type"].append("integer")
    assert schema == {"type": "object", "properties": {"e": {"type": ["string", "null"], "enum": ["a", None]}}}


def test_option_field_is_nullable_and_required():
    d = dialectize(params(order=ORDER))
    item = d.parameters["properties"]["order"]["properties"]["items"]["items"]
    assert item["required"] == ["id", "note", "tags"]
    assert item["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert d.omissions is None  # our own schemas read null as None: nothing to undo


def test_enum_with_payloads_becomes_any_of_of_constants_and_tagged_objects():
    d = dialectize(params(e=EVENT))
    assert d.parameters["properties"]["e"] == {"anyOf": [
        {"type": "string", "const": "Ping"},
        {"type": "object", "properties": {"Move": {
            "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"], "additionalProperties": False}},
         "required": ["Move"], "additionalProperties": False},
        {"type": "object", "properties": {"Say": {"type": "string"}}, "required": ["Say"],
         "additionalProperties": False}]}


def test_recursion_is_cut_with_an_empty_schema_after_8_levels():
    # §5 writes the recursive root as a copy of its definition, then 8 `$ref`s are inlined
    d = dialectize(params(n=_linked()))
    node, levels = d.parameters["properties"]["n"], 0
    while node != {}:
        levels += 1
        node = node["properties"]["next"]["anyOf"][0]
    assert levels == 1 + 8
    # a server's schema refers to its root type through `$ref` from the start
    d = dialectize(PLANT, from_server=True)
    node, levels = d.parameters["properties"]["root"], 0
    while node != {}:
        levels += 1
        node = node["properties"]["children"]["anyOf"][0]["items"]
    assert levels == 8


def test_server_optional_property_is_required_nullable_and_its_null_is_left_out():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 3}},
              "required": ["a"]}
    d = dialectize(schema, from_server=True)
    assert d.parameters == {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": ["a", "b"], "additionalProperties": False}
    assert d.nullable_omitted == frozenset({"b"})
    assert undo_nulls({"a": "x", "b": None}, d) == {"a": "x"}
    assert undo_nulls({"a": "x", "b": 4}, d) == {"a": "x", "b": 4}
    # the same schema of ours: null is a value there (None), nothing is left out
    assert dialectize(schema).nullable_omitted == frozenset()


def test_undo_nulls_reaches_nested_objects_lists_and_union_branches():
    d = dialectize(SEARCH, from_server=True)
    arguments = {"query": {"text": "t", "tags": [{"name": "a", "weight": None}, {"name": "b", "weight": 2.0}],
                           "color": None, "limits": None},
                 "page": None, "exact": None}
    before = copy.deepcopy(arguments)
    assert undo_nulls(arguments, d) == {
        "query": {"text": "t", "tags": [{"name": "a"}, {"name": "b", "weight": 2.0}], "color": None},
        "exact": None}  # `color` and `exact` admitted null already: the server gets the null it allows
    assert arguments == before
    union = {"type": "object", "properties": {"f": {"anyOf": [
        {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x"]},
        {"type": "array", "items": {"type": "object", "properties": {"z": {"type": "string"}}}}]}},
        "required": ["f"]}
    d = dialectize(union, from_server=True)
    assert undo_nulls({"f": {"x": 1, "y": None}}, d) == {"f": {"x": 1}}
    assert undo_nulls({"f": [{"z": None}, {"z": "s"}]}, d) == {"f": [{}, {"z": "s"}]}


def test_hint_is_cut_when_long():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": "x" * 100} for i in range(30)}}
    hint = dialectize(schema, from_server=True).hint
    assert len(hint) == 1000 and hint.endswith("…") and hint.startswith("Constraints: p0: pattern xxx")


def test_too_many_enum_values_is_not_strict():
    schema = {"type": "object", "properties": {"e": {"type": "string", "enum": [str(i) for i in range(1001)]}}}
    d = dialectize(schema, from_server=True)
    assert not d.strict and strict_schema_problem(d.parameters) is not None


def test_key_order_follows_the_input():
    d = dialectize({"required": ["b"], "properties": {"b": {"description": "B", "type": "string"}},
                    "type": "object"}, from_server=True)
    assert list(d.parameters) == ["required", "properties", "type", "additionalProperties"]
    assert list(d.parameters["properties"]["b"]) == ["description", "type"]


def test_every_tool_of_a_live_python_sdk_server_dialectizes_to_what_the_validator_says():
    """The schemas the MCP Python SDK writes today (not a stored copy): strict exactly when valid."""
    from mcp.server import MCPServer

    server = MCPServer("dialect-probe")

    @server.tool()
    def plant(root: Node, note: str | None = None) -> int:
        return 1

    @server.tool()
    def report(window: Window, labels: list[str] | None = None, verbose: bool = False) -> str:
        return ""

    @server.tool()
    def ping() -> str:
        return "pong"

    tools = asyncio.run(server.list_tools())
    seen = {}
    for tool in tools:
        d = dialectize(tool.input_schema, from_server=True)
        assert (strict_schema_problem(d.parameters) is None) is d.strict, (tool.name, d.loose)
        seen[tool.name] = d
    assert [seen["plant"].strict, seen["report"].strict, seen["ping"].strict] == [False, True, True]
    assert seen["report"].nullable_omitted == {"verbose"}
    assert "window.days: default 7" in seen["report"].hint


async def _all_tools(command: str, *args: str) -> list:
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=list(args))
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if cursor is None:
                    return tools


EVERYTHING = Path(__file__).resolve().parent.parent / "mcp" / "node" / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.mark.usefixtures("node_servers")
@pytest.mark.parametrize("command", [
    [str(EVERYTHING)],
    [sys.executable, "-m", "mcp_server_time"],
    [sys.executable, "-m", "mcp_server_git"],
], ids=["server-everything", "mcp-server-time", "mcp-server-git"])
def test_every_tool_of_a_real_server_is_strict_exactly_when_the_validator_accepts_it(command):
    tools = asyncio.run(_all_tools(*command))
    assert tools
    for tool in tools:
        before = copy.deepcopy(tool.input_schema)
        d = dialectize(tool.input_schema, from_server=True)
        assert tool.input_schema == before
        assert (strict_schema_problem(d.parameters) is None) is d.strict, (tool.name, d.loose)
        for name in d.nullable_omitted:
            assert name not in (tool.input_schema.get("required") or ())
    assert any(dialectize(t.input_schema, from_server=True).strict for t in tools)
