"""`divine` and sampling against a real chat-completions server on 127.0.0.1 (SPEC §4.10, §4.11)."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from fake_openai import FakeOpenAI, drop, echo_auth, hang, reply, status

from sagepy.llm import LlmClient, LlmConfig
from sagepy.llm.client import NO_MODEL
from sagepy.core.errors import SageRaise
from sagepy.core.values import NONE, Record, Variant, some
from sagepy.core.types import (
    BOOL,
    FLOAT,
    INT,
    STRING,
    EnumInfo,
    EnumT,
    FnT,
    ListT,
    OptionT,
    RecordInfo,
    RecordT,
)

KEY = "sk-test-very-secret-key-4f2a9c"

PERSON = RecordT(RecordInfo("Person", [], [("name", STRING), ("age", INT), ("email", OptionT(STRING))]))
MOOD = EnumT(EnumInfo("Mood", [], [("Happy", None), ("Sad", None)]))
SHAPE = EnumT(EnumInfo("Shape", [], [("Dot", None), ("Circle", FLOAT)]))


_OPEN: list["Run"] = []


class Run:
    """A client wired to a fake server, recording every trace event; closed when the test ends."""

    def __init__(self, server: FakeOpenAI | None, section: dict | None = None, env: dict | None = None,
                 **settings) -> None:
        base = {"url": server.url, "timeout_ms": 5000} if server is not None else {}
        self.events: list[tuple[str, dict]] = []
        env = {"SAGE_API_KEY": KEY} if env is None else env
        self.config = LlmConfig.resolve({**base, **(section or {}), **settings}, env)
        self.client = LlmClient(self.config, trace=lambda kind, data: self.events.append((kind, data)))
        _OPEN.append(self)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]

    def event(self, kind: str) -> dict:
        return [data for k, data in self.events if k == kind][-1]

    def error(self, prompt: str = "p", target=STRING, **kwargs) -> str:
        with pytest.raises(SageRaise) as info:
            self.client.divine(prompt, target, **kwargs)
        error = info.value.error
        assert error.kind == "Llm" and error.code is None
        assert self.event("llm.error") == {"error": error.display()}
        assert KEY not in json.dumps(self.events)
        return error.message


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while _OPEN:
        _OPEN.pop().client.close()


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


# ---------------------------------------------------------------- plain calls

def test_plain_reply_and_request_shape(server):
    server.push(reply("Paris", usage={"prompt_tokens": 12, "completion_tokens": 3}))
    run = Run(server)
    assert run.client.divine("Capital of France?", STRING) == "Paris"
    [request] = server.requests
    assert request.path.endswith("/v1/chat/completions")
    assert request.body == {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Capital of France?"}]}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert run.kinds() == ["llm.request", "llm.response"]
    assert run.event("llm.request") == {"model": "gpt-4o-mini", "prompt_chars": 18, "typed": False,
                                       "provider": "openai"}
    response = run.event("llm.response")
    assert response["duration_ms"] >= 0
    del response["duration_ms"]
    assert response == {"chars": 5, "attempts": 1, "mocked": False, "prompt_tokens": 12, "completion_tokens": 3}


def test_missing_content_is_empty_string_and_tokens_are_optional(server):
    server.push(reply(None))
    run = Run(server)
    assert run.client.divine("p", STRING) == ""
    assert "prompt_tokens" not in run.event("llm.response")


def test_no_authorization_header_without_a_key(server):
    server.push(reply("ok"))
    run = Run(server, env={})
    assert run.config.configured
    assert run.client.divine("p", STRING) == "ok"
    assert "authorization" not in server.requests[0].headers


def test_settings_and_handler_overrides(server):
    server.push(reply("a"), reply("b"))
    run = Run(server, model="m-config", temperature=0.2, max_tokens=40)
    run.client.divine("p", STRING)
    run.client.divine("p", STRING, infer=True, model="m-handler", temperature=0.9, max_tokens=7)
    first, second = (r.body for r in server.requests)
    assert (first["model"], first["temperature"], first["max_tokens"]) == ("m-config", 0.2, 40)
    assert (second["model"], second["temperature"], second["max_tokens"]) == ("m-handler", 0.9, 7)
    assert run.event("llm.request")["model"] == "m-handler"


def test_environment_settings_reach_the_request(server):
    server.push(reply("a"))
    env = {"SAGE_LLM_URL": server.url, "SAGE_MODEL": "env-model", "SAGE_TEMPERATURE": "0.5",
           "SAGE_MAX_TOKENS": "11", "SAGE_API_KEY": KEY}
    run = Run(None, section={"url": "http://127.0.0.1:9/unused", "model": "toml-model"}, env=env)
    run.client.divine("p", STRING)
    body = server.requests[0].body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("env-model", 0.5, 11)


# ---------------------------------------------------------------- typed calls

def test_typed_record(server):
    server.push(reply('{"name": "Ada", "age": 36}'))
    run = Run(server)
    value = run.client.divine("Who?", PERSON)
    assert value == Record("Person", {"name": "Ada", "age": 36, "email": NONE})   # the boundary takes it as it is
    request = server.requests[0].body
    system, user = request["messages"]
    assert system["role"] == "system" and "JSON" in system["content"]
    schema = request["response_format"]["json_schema"]["schema"]
    assert json.dumps(schema, separators=(",", ":")) in system["content"]
    assert user == {"role": "user", "content": "Who?"}
    assert request["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Person", "schema": schema, "strict": False}}
    assert schema["required"] == ["name", "age"]
    assert run.event("llm.request")["typed"] is True


def test_typed_enum_list_and_option(server):
    server.push(reply('"Sad"'), reply("[1, 2, 3]"), reply("null"), reply('"hi"'), reply('{"Circle": 2.5}'))
    run = Run(server)
    assert run.client.divine("mood?", MOOD) == Variant("Mood", "Sad")
    assert run.client.divine("nums?", ListT(INT)) == [1, 2, 3]
    assert run.client.divine("maybe?", OptionT(STRING)) == NONE
    assert run.client.divine("maybe?", OptionT(STRING)) == some("hi")
    assert run.client.divine("shape?", SHAPE) == Variant("Shape", "Circle", 2.5)
    names = [r.body["response_format"]["json_schema"]["name"] for r in server.requests]
    assert names == ["Mood", "List_Int", "Option_String", "Option_String", "Shape"]
    assert server.requests[0].body["response_format"]["json_schema"]["schema"] == {
        "type": "string", "enum": ["Happy", "Sad"]}


def test_typed_answer_is_its_value(server):
    server.push(reply('{"email": null, "age": 36.0, "extra": 1, "name": "Ada"}'), reply("[1, 2.5]"))
    run = Run(server)
    answer = run.client.divine("Who?", PERSON)
    assert answer == Record("Person", {"name": "Ada", "age": 36, "email": NONE})
    assert list(answer.fields) == ["name", "age", "email"] and type(answer.fields["age"]) is int
    floats = run.client.divine("p", ListT(FLOAT))
    assert floats == [1.0, 2.5] and type(floats[0]) is float


def test_fenced_json_and_leading_prose(server):
    server.push(reply('Here it is:\n```json\n{"name": "Bo", "age": 3}\n```'),
                reply('Sure! {"name": "Cy", "age": 4, "email": "c@x"} Hope that helps.'),
                reply("The values are [true, false]."))
    run = Run(server)
    assert run.client.divine("p", PERSON).fields["name"] == "Bo"
    assert run.client.divine("p", PERSON).fields["email"] == some("c@x")
    assert run.client.divine("p", ListT(BOOL)) == [True, False]
    assert len(server.requests) == 3


def test_invalid_json_then_valid_on_retry(server):
    server.push(reply("I think it is Ada, 36."), reply('{"name": "Ada", "age": 36}'))
    run = Run(server)
    assert run.client.divine("Who?", PERSON).fields["age"] == 36
    retry = server.requests[1].messages
    assert retry[:2] == server.requests[0].messages
    assert retry[2] == {"role": "assistant", "content": "I think it is Ada, 36."}
    assert retry[3]["role"] == "user"
    assert "the reply is not JSON: Expecting value at line 1 column 1" in retry[3]["content"]
    assert run.event("llm.response")["attempts"] == 2


def test_conversion_failure_is_quoted_on_retry(server):
    server.push(reply('{"name": "Ada", "age": "old"}'), reply('{"name": "Ada", "age": 36}'))
    run = Run(server)
    run.client.divine("Who?", PERSON)
    assert 'expected Int at $.age, got "old"' in server.requests[1].messages[-1]["content"]


def test_exhausted_retries_message(server):
    long_reply = "nope " * 60
    server.push(reply("first"), reply(long_reply))
    run = Run(server, infer_retries=2)
    message = run.error("Who?", PERSON)
    assert message == ("failed to parse structured response after 2 attempts: the reply is not JSON: "
                       f"Expecting value at line 1 column 1; last reply: {long_reply[:200]}")
    assert len(server.requests) == 2


def test_default_infer_retries_is_three_attempts(server):
    server.push(reply('{"name": 1}'), reply('{"name": 2}'), reply('{"name": 3}'))
    run = Run(server)
    message = run.error("Who?", PERSON)
    assert message.startswith("failed to parse structured response after 3 attempts: expected String at $.name, got 3")
    assert message.endswith('; last reply: {"name": 3}')


def test_response_format_fallback_is_remembered(server):
    server.push(status(400, '{"error": {"message": "Unknown parameter: response_format"}}'),
                reply('{"name": "A", "age": 1}'), reply('"Happy"'))
    run = Run(server)
    assert run.client.divine("p", PERSON).fields["name"] == "A"
    first, second = (r.body for r in server.requests[:2])
    assert "response_format" in first and "response_format" not in second
    assert first["messages"] == second["messages"]
    again = Run(server)
    assert again.client.divine("p", MOOD) == Variant("Mood", "Happy")
    assert "response_format" not in server.requests[2].body
    assert run.event("llm.response")["attempts"] == 2


def test_response_format_fallback_on_422(server):
    server.push(status(422, "response_format json_schema is not supported"), reply("[1]"))
    assert Run(server).client.divine("p", ListT(INT)) == [1]
    assert len(server.requests) == 2


def test_other_400_is_final(server):
    server.push(status(400, "context length exceeded"))
    assert Run(server).error("p", PERSON) == "API error 400: context length exceeded"
    assert len(server.requests) == 1


def test_unconvertible_target_fails_before_any_request(server):
    message = Run(server).error("p", FnT([INT], INT))
    assert message.startswith("cannot ask for a value of type Fn(Int) -> Int: ")
    assert server.requests == []


# ---------------------------------------------------------------- transport failures

def test_429_with_retry_after_then_success(server):
    server.push(status(429, "slow down", {"Retry-After": "1"}), reply("ok"))
    run = Run(server)
    started = time.monotonic()
    assert run.client.divine("p", STRING) == "ok"
    assert time.monotonic() - started >= 0.95
    assert len(server.requests) == 2
    assert run.event("llm.response")["attempts"] == 2


def test_500_then_success(server):
    server.push(status(500, "boom"), reply("ok"))
    run = Run(server)
    assert run.client.divine("p", STRING) == "ok"
    assert len(server.requests) == 2


def test_5xx_retries_are_bounded(server):
    server.push(status(503, "down"), status(502, "still down"))
    run = Run(server, retries=1)
    assert run.error() == "API error 502: still down"
    assert len(server.requests) == 2


def test_429_exhausted(server):
    server.push(status(429, "slow", {"Retry-After": "0"}), status(429, "slower", {"Retry-After": "0"}),
                status(429, "slowest", {"Retry-After": "0"}))
    assert Run(server).error() == "API error 429: slowest"
    assert len(server.requests) == 3


def test_4xx_is_not_retried_and_body_is_cut_to_500_chars(server):
    body = "x" * 800
    server.push(status(404, body))
    assert Run(server).error() == "API error 404: " + "x" * 500
    assert len(server.requests) == 1


def test_hang_times_out_without_retry(server):
    server.push(hang(10), reply("never"))
    run = Run(server, timeout_ms=300)
    assert run.error() == "request failed: timed out after 300 ms"
    assert len(server.requests) == 1


def test_dropped_connection_is_retried(server):
    server.push(drop(), reply("ok"))
    assert Run(server).client.divine("p", STRING) == "ok"
    assert len(server.requests) == 2


def test_connection_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = Run(None, section={"url": f"http://127.0.0.1:{port}/v1", "retries": 0})
    assert run.error().startswith("request failed: ")


def test_auth_failure_does_not_leak_the_key(server):
    server.push(echo_auth(401))
    run = Run(server)
    message = run.error()
    assert message.startswith("API error 401: ")
    assert "Incorrect API key provided: Bearer [redacted]" in message
    assert KEY not in message


def test_non_json_success_body(server):
    server.push(lambda request: (200, {"Content-Type": "text/html"}, b"<html>"))
    assert Run(server).error().startswith("request failed: the answer is not JSON (")


def test_key_never_in_errors_or_traces(server):
    server.push(status(500, f"bad key {KEY}"), status(500, f"bad key {KEY}"),
                reply(f"my key is {KEY}"), reply(f"still {KEY}"), reply(f"and {KEY}"))
    run = Run(server, retries=1)
    assert KEY not in run.error()
    assert KEY not in run.error("p", PERSON)
    assert KEY not in json.dumps(run.events)


def test_malformed_setting_fails_the_call(server):
    run = Run(server, env={"SAGE_API_KEY": KEY, "SAGE_TEMPERATURE": "hot"})
    assert run.error() == "invalid SAGE_TEMPERATURE 'hot': expected a number"
    assert server.requests == []


# ---------------------------------------------------------------- offline answers

def test_echo_model_makes_no_request(server):
    run = Run(server, model="echo")
    long_prompt = "y" * 300
    assert run.client.divine("hello", STRING) == "echo: hello"
    assert run.client.divine(long_prompt, STRING) == "echo: " + "y" * 200
    assert run.client.divine("who", PERSON) == Record("Person", {"name": "", "age": 0, "email": NONE})
    assert run.client.divine("mood", MOOD) == Variant("Mood", "Happy")
    assert run.client.divine("list", ListT(INT)) == []
    assert server.requests == []
    assert run.event("llm.response")["mocked"] is True
    assert run.event("llm.request")["model"] == "echo"


def test_echo_model_needs_no_configuration_and_can_come_from_the_handler():
    run = Run(None, env={"SAGE_MODEL": "echo"})
    assert run.client.divine("x", STRING) == "echo: x"
    run = Run(None, env={})
    assert run.client.divine("x", STRING, model="echo") == "echo: x"


def test_no_model_configured():
    run = Run(None, env={})
    assert run.error() == NO_MODEL
    assert run.error("p", PERSON) == NO_MODEL
    assert NO_MODEL == ("no model configured; set SAGE_API_KEY (and SAGE_LLM_URL for a non-OpenAI endpoint) or "
                        "[llm] in grove.toml; use model \"echo\" to run offline")
    assert run.kinds()[:2] == ["llm.request", "llm.error"]


def test_mock_key(server):
    run = Run(server, env={"SAGE_API_KEY": "mock"})
    assert run.client.divine("hello there", STRING) == "[Mock LLM response for: hello there]"
    assert run.error("p", PERSON) == "mock client cannot produce structured output"
    assert server.requests == []


# ---------------------------------------------------------------- sampling

def test_chat_for_sampling(server):
    server.push(reply("sampled", usage={"prompt_tokens": 5, "completion_tokens": 1}))
    run = Run(server, model="m-sample", temperature=0.3)
    messages = [{"role": "user", "content": "Summarise this"}]
    assert run.client.chat(messages, system="Be brief.", max_tokens=64, server="Docs") == "sampled"
    body = server.requests[0].body
    assert body == {"model": "m-sample", "temperature": 0.3, "max_tokens": 64, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarise this"}]}
    assert run.event("llm.request") == {"model": "m-sample", "prompt_chars": 14, "typed": False,
                                        "source": "sampling", "server": "Docs", "provider": "openai"}
    assert run.event("llm.response")["completion_tokens"] == 1


def test_chat_errors_and_offline_models(server):
    server.push(status(401, "no"))
    run = Run(server)
    with pytest.raises(SageRaise) as info:
        run.client.chat([{"role": "user", "content": "x"}])
    assert info.value.error.message == "API error 401: no (the key in SAGE_API_KEY was refused)"
    assert Run(server, model="echo").client.chat([{"role": "user", "content": "hi"}]) == "echo: hi"
    with pytest.raises(SageRaise) as info:
        Run(None, env={}).client.chat([{"role": "user", "content": "x"}])
    assert info.value.error.message == NO_MODEL


def test_one_client_serves_concurrent_agents(server):
    server.push(*(reply(f"answer {i}") for i in range(6)))
    run = Run(server)
    results: list[str] = []
    lock = threading.Lock()

    def agent() -> None:
        value = run.client.divine("p", STRING)
        with lock:
            results.append(value)

    threads = [threading.Thread(target=agent) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(results) == [f"answer {i}" for i in range(6)]
    assert run.kinds().count("llm.response") == 6
