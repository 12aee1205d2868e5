"""The Messages server of the anthropic tests refuses what the hosted Messages API refuses: a validator that
accepts everything would let the client's mistakes through."""
from __future__ import annotations

import httpx
import pytest
from messages_server import KEY, VERSION, HttpError, MessagesServer, ToolCall, check_headers, input_schema_problem, \
    request_problem

HEADERS = {"x-api-key": KEY, "anthropic-version": VERSION, "content-type": "application/json"}
TOOL = {"name": "Fs__read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def body(messages: list, **more) -> dict:
    return {"model": "claude-test", "max_tokens": 100, "messages": messages, **more}


def use(call_id: str = "toolu_1", name: str = "Fs__read") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "a"}}


def result(call_id: str = "toolu_1", **more) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "A", **more}


def refused(request: dict) -> str:
    problem = request_problem(request)
    assert problem is not None, "accepted"
    assert problem.body["type"] == "error" and problem.body["error"]["type"] == "invalid_request_error"
    return problem.body["error"]["message"]


def test_valid_requests_pass():
    assert request_problem(body([{"role": "user", "content": "hi"}])) is None
    conversation = [{"role": "user", "content": "read a"},
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}, use()]},
                    {"role": "user", "content": [result(is_error=True), {"type": "text", "text": "and?"}]}]
    assert request_problem(body(conversation, tools=[TOOL], tool_choice={"type": "auto"}, system="s",
                                temperature=0)) is None


@pytest.mark.parametrize("request_body,message", [
    ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens: Field required"),
    (body([{"role": "user", "content": "hi"}], response_format={"type": "json_object"}),
     "response_format: Extra inputs are not permitted"),
    (body([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]), 'Unexpected role "system"'),
    (body([{"role": "assistant", "content": "hi"}]), 'first message must use the "user" role'),
    (body([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]), "roles must alternate"),
    (body([{"role": "user", "content": ""}]), "text content blocks must be non-empty"),
    (body([{"role": "user", "content": "a"}], temperature=2), "temperature"),
    (body([{"role": "user", "content": "a"}], tool_choice={"type": "auto"}), "tool_choice may only be specified"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]}], tools=[TOOL]),
     "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "user", "content": "forgot"}], tools=[TOOL]), "without `tool_result` blocks"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "user", "content": [{"type": "text", "text": "x"}, result()]}], tools=[TOOL]),
     "Did not find 1 tool_result block(s) at the beginning"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "user", "content": [result("toolu_9")]}], tools=[TOOL]), "unexpected `tool_use_id`"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "user", "content": [result()]}]), "must define tools"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "tool", "content": "A"}], tools=[TOOL]), "Input should be 'user' or 'assistant'"),
    (body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use()]},
           {"role": "user", "content": [result(is_error="yes")]}], tools=[TOOL]), "is_error"),
    (body([{"role": "user", "content": "a", "tool_call_id": "x"}]), "Extra inputs are not permitted"),
    (body([{"role": "user", "content": "a"}], tools=[dict(TOOL, name="Fs.read")]), "String should match pattern"),
    (body([{"role": "user", "content": "a"}], tools=[TOOL, TOOL]), "Tool names must be unique"),
    (body([{"role": "user", "content": "a"}], tools=[{"name": "f"}]), "input_schema: Field required"),
    (body([{"role": "user", "content": "a"}], tools=[{"type": "function", "function": TOOL}]),
     "Extra inputs are not permitted"),
])
def test_refusals(request_body, message):
    assert message in refused(request_body)


@pytest.mark.parametrize("schema,problem", [
    ({"type": "object"}, None),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}, None),
    ({"type": "array", "items": {}}, ".type: Input should be 'object'"),
    ({"properties": {}}, ".type: Input should be 'object'"),
    ({"type": "object", "properties": {"a": {"type": "strng"}}}, "JSON schema is invalid"),
    ({"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}},
     "JSON schema is invalid"),
    ({"type": "object", "required": "a"}, "JSON schema is invalid"),
    ({"type": "object", "properties": {"a b": {"type": "string"}}}, "Property keys should match pattern"),
])
def test_input_schema_rules(schema, problem):
    found = input_schema_problem(schema)
    assert (found is None) if problem is None else (problem in found)


def test_header_refusals():
    assert check_headers(HEADERS, KEY) is None
    missing = check_headers({k: v for k, v in HEADERS.items() if k != "x-api-key"}, KEY)
    assert (missing.status, missing.body["error"]) == (401, {"type": "authentication_error",
                                                             "message": "x-api-key header is required"})
    assert check_headers(dict(HEADERS, **{"x-api-key": "other"}), KEY).body["error"]["message"] == "invalid x-api-key"
    no_version = check_headers({k: v for k, v in HEADERS.items() if k != "anthropic-version"}, KEY)
    assert (no_version.status, no_version.body["error"]["message"]) == (400, "anthropic-version: header is required")
    assert check_headers(dict(HEADERS, **{"content-type": "text/plain"}), KEY).status == 400


def test_over_http_script_and_bearer_keys_are_refused():
    with MessagesServer([["thinking", ToolCall("Fs__read", {"path": "a"})], HttpError(529, "", {"retry-after": "1"}),
                         "bye"]) as srv:
        with httpx.Client() as http:
            ok = http.post(srv.url + "/messages", headers=HEADERS, json=body([{"role": "user", "content": "a"}],
                                                                            tools=[TOOL]))
            assert ok.status_code == 200 and ok.json()["stop_reason"] == "tool_use"
            assert [b["type"] for b in ok.json()["content"]] == ["text", "tool_use"]
            overloaded = http.post(srv.url + "/messages", headers=HEADERS,
                                   json=body([{"role": "user", "content": "a"}]))
            assert overloaded.status_code == 529 and overloaded.headers["retry-after"] == "1"
            bearer = http.post(srv.url + "/messages", headers={"authorization": f"Bearer {KEY}",
                                                               "anthropic-version": VERSION},
                               json=body([{"role": "user", "content": "a"}]))
            assert bearer.status_code == 401
            wrong_path = http.post(srv.url + "/chat/completions", headers=HEADERS, json={})
            assert wrong_path.status_code == 404 and wrong_path.json()["error"]["type"] == "not_found_error"
            final = http.post(srv.url + "/messages", headers=HEADERS, json=body([{"role": "user", "content": "a"}]))
            assert final.json()["content"] == [{"type": "text", "text": "bye"}]
            assert final.json()["usage"]["input_tokens"] >= 1
        assert [e["status"] for e in srv.errors] == [401]
