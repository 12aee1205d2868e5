"""The strict chat-completions server refuses what the hosted APIs refuse, with their error body, and plays
a scripted multi-turn tool conversation (driven here with httpx, as the LLM client does)."""
from __future__ import annotations

import json

import httpx
import pytest
from strict_server import HttpError, StrictChatServer, ToolCall, request_problem, strict_schema_problem, tool_results

CLOSED = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
          "required": ["a", "b"], "additionalProperties": False}


def tool(name: str, parameters: dict | None = None, strict: bool = True) -> dict:
    function: dict = {"name": name, "description": f"the {name} tool", "strict": strict}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def body(messages: list, tools: list | None = None, **extra) -> dict:
    data = {"model": "gpt-test", "messages": messages, **extra}
    if tools is not None:
        data["tools"] = tools
    return data


def post(srv: StrictChatServer, data: dict) -> httpx.Response:
    return httpx.post(srv.url + "/chat/completions", json=data, timeout=10)


def with_changes(schema: dict, **changes) -> dict:
    out = json.loads(json.dumps(schema))
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------- strict schemas

@pytest.mark.parametrize("schema, reason", [
    (with_changes(CLOSED, additionalProperties=None),
     "In context=(), 'additionalProperties' is required to be supplied and to be false."),
    (with_changes(CLOSED, additionalProperties=True),
     "In context=(), 'additionalProperties' is required to be supplied and to be false."),
    (with_changes(CLOSED, required=["a"]),
     "In context=(), 'required' is required to be supplied and to be an array including every key in properties. "
     "Missing 'b'."),
    (with_changes(CLOSED, required=None),
     "In context=(), 'required' is required to be supplied and to be an array including every key in properties. "
     "Missing 'a'."),
    (with_changes(CLOSED, required=["a", "b", "c"]), "In context=(), Extra required key 'c' supplied."),
    (with_changes(CLOSED, properties={"a": {"type": "string", "format": "date-time"}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), 'format' is not permitted."),
    (with_changes(CLOSED, properties={"a": {"type": "string", "pattern": "x"}, "b": {"type": "integer", "minimum": 0}}),
     "In context=('properties', 'a'), 'pattern' is not permitted."),
    (with_changes(CLOSED, properties={"a": {"type": "integer", "default": 1}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), 'default' is not permitted."),
    (with_changes(CLOSED, properties={"a": {"oneOf": [{"type": "integer"}, {"type": "null"}]}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), 'oneOf' is not permitted."),
    (with_changes(CLOSED, properties={"a": {}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), schema must have a 'type' key."),
    (with_changes(CLOSED, properties={"a": {"type": "object", "properties": {"x": {"type": "string"}},
                                            "required": ["x"]}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), 'additionalProperties' is required to be supplied and to be false."),
    (with_changes(CLOSED, properties={"a": {"type": "array", "items": {"type": "object"}}, "b": {"type": "string"}}),
     "In context=('properties', 'a', 'items'), 'additionalProperties' is required to be supplied and to be false."),
    (with_changes(CLOSED, properties={"a": {"type": "array", "prefixItems": [{"type": "integer"}]},
                                      "b": {"type": "string"}}),
     "In context=('properties', 'a'), 'prefixItems' is not permitted."),
    ({"anyOf": [CLOSED]}, "In context=(), schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."),
    (with_changes(CLOSED, properties={"a": {"$ref": "#/$defs/Missing"}, "b": {"type": "string"}}),
     "In context=('properties', 'a'), reference to component '#/$defs/Missing' which was not found in the schema."),
])
def test_invalid_strict_schema_is_refused_with_openai_error_body(schema, reason):
    assert strict_schema_problem(schema) == reason
    with StrictChatServer(["never used"]) as srv:
        response = post(srv, body([{"role": "user", "content": "hi"}], [tool("ok", CLOSED), tool("add", schema)]))
        assert response.status_code == 400
        assert response.json() == {"error": {
            "message": f"Invalid schema for function 'add': {reason}", "type": "invalid_request_error",
            "param": "tools[1].function.parameters", "code": "invalid_function_parameters"}}
        assert srv.errors == [{"request": 0, "status": 400, "error": response.json()["error"]}]
        assert srv.remaining == 1  # a refused request takes no turn


def test_the_same_schemas_pass_without_strict():
    loose = with_changes(CLOSED, additionalProperties=None, required=["a"])
    with StrictChatServer(["fine"]) as srv:
        response = post(srv, body([{"role": "user", "content": "hi"}], [tool("add", loose, strict=False)]))
        assert response.status_code == 200, response.text
        assert srv.errors == []


def test_valid_strict_schemas_pass():
    schemas = [
        CLOSED,
        {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
        {"type": "object", "properties": {"u": {"type": ["string", "null"], "enum": ["F", "C", None]},
                                          "v": {"anyOf": [{"type": "string", "const": "x"}, {"type": "null"}]},
                                          "w": {"$ref": "#/$defs/W"}},
         "required": ["u", "v", "w"], "additionalProperties": False,
         "$defs": {"W": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                         "additionalProperties": False}}},
    ]
    for schema in schemas:
        assert strict_schema_problem(schema) is None


def test_strict_response_format_is_checked_too():
    fmt = {"type": "json_schema", "json_schema": {"name": "Plan", "strict": True,
                                                  "schema": with_changes(CLOSED, additionalProperties=None)}}
    with StrictChatServer(["{}"]) as srv:
        response = post(srv, body([{"role": "user", "content": "hi"}], response_format=fmt))
        assert response.status_code == 400
        assert response.json()["error"]["param"] == "response_format"
        assert response.json()["error"]["code"] == "invalid_json_schema"
        fmt["json_schema"]["strict"] = False
        assert post(srv, body([{"role": "user", "content": "hi"}], response_format=fmt)).status_code == 200


# ---------------------------------------------------------------- conversations

ASKED = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}},
    {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": "{}"}}]}


def answer(call_id: str, content: str = "3") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


USER = {"role": "user", "content": "hi"}


@pytest.mark.parametrize("messages, message, param", [
    ([USER, ASKED, answer("call_1")],
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
     "The following tool_call_ids did not have response messages: call_2", "messages.[1].role"),
    ([USER, ASKED, answer("call_1"), USER, answer("call_2")],
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
     "The following tool_call_ids did not have response messages: call_2", "messages.[1].role"),
    ([USER, ASKED, answer("call_1"), answer("call_9")],
     "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
     "messages.[3].tool_call_id"),
    ([USER, ASKED, answer("call_1"), answer("call_2"), answer("call_2")],
     "Invalid parameter: 'tool_call_id' of 'call_2' not found in 'tool_calls' of previous message.",
     "messages.[4].tool_call_id"),
    ([USER, answer("call_1")],
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
     "messages.[1].role"),
    ([USER, {**ASKED, "tool_calls": [{**ASKED["tool_calls"][0], "function": {"name": "mul", "arguments": "{}"}}]},
      answer("call_1")],
     "Invalid value for 'messages.[1].tool_calls.[0].function.name': no tool named 'mul' is in 'tools'.",
     "messages.[1].tool_calls.[0].function.name"),
])
def test_broken_conversation_is_refused(messages, message, param):
    problem = request_problem(body(messages, [tool("add", CLOSED)]))
    assert problem is not None
    assert problem.body["error"]["message"] == message
    assert problem.body["error"]["param"] == param
    assert problem.body["error"]["type"] == "invalid_request_error"


def test_answers_in_any_order_are_accepted():
    assert request_problem(body([USER, ASKED, answer("call_2"), answer("call_1")], [tool("add", CLOSED)])) is None


@pytest.mark.parametrize("extra, tools, message", [
    ({"tool_choice": "auto"}, None, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
                                    "are specified."),
    ({"tool_choice": "sometimes"}, [tool("add", CLOSED)], "Invalid value for 'tool_choice': expected 'none', "
                                                          "'auto', 'required' or a named function."),
    ({"tool_choice": {"type": "function", "function": {"name": "mul"}}}, [tool("add", CLOSED)],
     "Invalid value for 'tool_choice': no function named 'mul' was specified in the 'tools' parameter."),
    ({}, [tool("add", CLOSED), tool("add", CLOSED)], "Duplicate tool name 'add' in 'tools'."),
    ({}, [tool("Tracker.search", CLOSED)], "Invalid 'tools[0].function.name': string does not match pattern. "
                                           "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' of at "
                                           "most 64 characters."),
    ({}, [tool("x" * 65, CLOSED)], "Invalid 'tools[0].function.name': string does not match pattern. Expected a "
                                   "string that matches the pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters."),
])
def test_bad_tools_and_tool_choice_are_refused(extra, tools, message):
    problem = request_problem(body([USER], tools, **extra))
    assert problem is not None and problem.body["error"]["message"] == message


def test_scripted_multi_turn_conversation_over_http():
    tools = [tool("add", CLOSED), tool("now", None)]

    def total(request: dict) -> str:
        results = [json.loads(m["content"]) for m in tool_results(request)]
        return f"the sum is {sum(results)}"

    script = [
        [ToolCall("add", {"a": 1, "b": "x"}), ToolCall("now")],  # parallel calls
        ToolCall("add", '{"a": 2, "b":'),                           # malformed JSON, sent as is
        total,                                                     # computed from the last tool results
    ]
    with StrictChatServer(script) as srv:
        messages: list = [{"role": "user", "content": "add things"}]
        replies = []
        for _ in range(3):
            response = post(srv, body(messages, tools, tool_choice="auto"))
            assert response.status_code == 200, response.text
            data = response.json()
            assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
            message = data["choices"][0]["message"]
            replies.append(message)
            messages.append(message)
            for i, call in enumerate(message.get("tool_calls") or []):
                messages.append(answer(call["id"], str(10 * (i + 1))))
        assert [len(m.get("tool_calls") or []) for m in replies] == [2, 1, 0]
        assert replies[0]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1, "b": "x"}'}
        assert replies[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b":'
        ids = [c["id"] for m in replies[:2] for c in m["tool_calls"]]
        assert len(set(ids)) == 3 and all(i.startswith("call_") for i in ids)
        assert replies[2]["content"] == "the sum is 10"
        assert [len(r["messages"]) for r in srv.requests] == [1, 4, 6]
        assert srv.requests[0]["tools"] == tools
        assert srv.errors == [] and srv.remaining == 0
        # a request after the script ran out is answered 599 and recorded
        assert post(srv, body(messages, tools)).status_code == 599
        assert srv.errors[-1]["error"]["code"] == "script_exhausted"


def test_scripted_http_error_and_a_failing_callable():
    def broken(request: dict) -> str:
        raise KeyError("no tool result")

    with StrictChatServer([HttpError(429, {"error": {"message": "slow down"}}), broken]) as srv:
        first = post(srv, body([USER]))
        assert first.status_code == 429 and first.json() == {"error": {"message": "slow down"}}
        second = post(srv, body([USER]))
        assert second.status_code == 500
        assert "KeyError" in srv.errors[-1]["error"]["message"]


def test_unknown_path_is_404():
    with StrictChatServer(["x"]) as srv:
        assert httpx.post(srv.url + "/completions", json=body([USER])).status_code == 404
        assert srv.remaining == 1
