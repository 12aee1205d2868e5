"""`divine` and sampling with `provider = "anthropic"` against the Messages server on 127.0.0.1
(tests/llm/messages_server.py), which refuses what the hosted Messages API refuses (SPEC §4.13). Every test
that expects success also checks that no request was refused (`srv.errors == []`)."""
from __future__ import annotations

import json

import pytest
from messages_server import KEY, VERSION, HttpError, MessagesServer, error_body

from sagepy.core.errors import SageRaise
from sagepy.core.types import INT, STRING, ListT, RecordInfo, RecordT
from sagepy.core.values import Record
from sagepy.llm import LlmClient, LlmConfig

POINT = RecordT(RecordInfo("Point", [], [("x", INT), ("y", INT)]))
_OPEN: list[LlmClient] = []


def client(srv: MessagesServer | None, section: dict | None = None, env: dict | None = None) -> tuple[LlmClient, list]:
    base = {"provider": "anthropic", "model": "claude-test", "timeout_ms": 5000, "retries": 2}
    if srv is not None:
        base["url"] = srv.url
    events: list = []
    env = {"ANTHROPIC_API_KEY": KEY} if env is None else env
    c = LlmClient(LlmConfig.resolve({**base, **(section or {})}, env), trace=lambda k, d: events.append((k, d)))
    _OPEN.append(c)
    return c, events


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while _OPEN:
        _OPEN.pop().close()


def failure(c: LlmClient, prompt: str = "p", target=STRING) -> str:
    with pytest.raises(SageRaise) as info:
        c.divine(prompt, target)
    assert info.value.error.kind == "Llm"
    return info.value.error.message


def test_plain_divine_request_shape_headers_and_usage():
    with MessagesServer(["Paris"]) as srv:
        c, events = client(srv)
        assert c.divine("Capital of France?", STRING) == "Paris"
        assert srv.errors == []
        [body] = srv.requests
        assert body == {"model": "claude-test", "max_tokens": 4096,
                        "messages": [{"role": "user", "content": "Capital of France?"}]}
        headers = srv.headers[0]
        assert (headers["x-api-key"], headers["anthropic-version"]) == (KEY, VERSION)
        assert headers["content-type"] == "application/json" and "authorization" not in headers
    request = next(d for k, d in events if k == "llm.request")
    assert request == {"model": "claude-test", "prompt_chars": 18, "typed": False, "provider": "anthropic"}
    response = next(d for k, d in events if k == "llm.response")
    assert response["prompt_tokens"] >= 1 and response["completion_tokens"] >= 1 and response["attempts"] == 1


def test_settings_reach_the_body_and_text_blocks_are_joined():
    with MessagesServer(["fine"]) as srv:
        c, _ = client(srv, {"temperature": 0.2, "max_tokens": 300})
        assert c.divine("hi", STRING, temperature=0.5, max_tokens=77) == "fine"
        assert srv.errors == []
        assert srv.requests[0]["temperature"] == 0.5 and srv.requests[0]["max_tokens"] == 77
    from sagepy.llm.anthropic import AnthropicMessages
    provider = AnthropicMessages(LlmConfig.resolve({"provider": "anthropic"}, {}))
    data = {"content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "x"},
                        {"type": "text", "text": "b"}], "usage": {"input_tokens": 3, "output_tokens": 4}}
    counts = provider.usage(data)
    assert provider.text(data) == "ab" and (counts.input, counts.output, counts.cached) == (3, 4, None)
    # what the prompt cache read or wrote is input too; what it read is the cached input (SPEC §23)
    cached = provider.usage({"usage": {"input_tokens": 3, "cache_read_input_tokens": 100,
                                       "cache_creation_input_tokens": 20, "output_tokens": 4}})
    assert (cached.input, cached.output, cached.cached) == (123, 4, 100)


def test_typed_divine_uses_system_and_retries_with_the_error():
    with MessagesServer(["not json at all", 'Here: {"x": 1, "y": 2}']) as srv:
        c, events = client(srv)
        assert c.divine("Where?", POINT) == Record("Point", {"x": 1, "y": 2})
        assert srv.errors == []
        first, second = srv.requests
        assert "response_format" not in first and "JSON Schema" in first["system"]
        assert first["messages"] == [{"role": "user", "content": "Where?"}]
        assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
        assert second["messages"][1]["content"] == "not json at all"
        assert "could not be used" in second["messages"][2]["content"]
    assert next(d for k, d in events if k == "llm.response")["attempts"] == 2


def test_typed_retry_after_an_empty_reply_keeps_roles_alternating():
    with MessagesServer(["", "[1, 2]"]) as srv:
        c, _ = client(srv)
        assert c.divine("Numbers", ListT(INT)) == [1, 2]
        assert srv.errors == []
        retry = srv.requests[1]["messages"]
        assert [m["role"] for m in retry] == ["user"]
        assert [b["text"] for b in retry[0]["content"]][0] == "Numbers"


@pytest.mark.parametrize("status,kind", [(429, "rate_limit_error"), (529, "overloaded_error")])
def test_429_and_529_are_retried_honouring_retry_after(status, kind):
    script = [HttpError(status, error_body(kind, "slow down"), {"retry-after": "0"}), "ok"]
    with MessagesServer(script) as srv:
        c, events = client(srv)
        assert c.divine("p", STRING) == "ok"
        assert len(srv.requests) == 2
    assert next(d for k, d in events if k == "llm.response")["attempts"] == 2


def test_overload_exhausted_names_the_error_type():
    with MessagesServer([HttpError(529, error_body("overloaded_error", "Overloaded"))] * 2) as srv:
        c, _ = client(srv, {"retries": 1})
        assert failure(c) == "API error 529: overloaded_error: Overloaded"


def test_401_names_the_variable_the_key_came_from():
    with MessagesServer([]) as srv:
        c, events = client(srv, env={"ANTHROPIC_API_KEY": "sk-ant-wrong-secret"})
        message = failure(c)
        assert message == ("API error 401: authentication_error: invalid x-api-key "
                           "(the key in ANTHROPIC_API_KEY was refused)")
        assert len(srv.requests) == 1   # not retried
        assert "sk-ant-wrong-secret" not in json.dumps(events)
        c, _ = client(srv, {"api_key_env": "MY_CLAUDE_KEY"}, env={"MY_CLAUDE_KEY": "sk-other"})
        assert failure(c).endswith("(the key in MY_CLAUDE_KEY was refused)")
        c, _ = client(srv, env={})
        assert failure(c) == ("API error 401: authentication_error: x-api-key header is required "
                              "(no key was sent: SAGE_API_KEY is not set)")
        assert "x-api-key" not in srv.headers[-1]


def test_403_and_other_errors_quote_type_and_message():
    script = [HttpError(403, error_body("permission_error", "not allowed")),
              HttpError(404, error_body("not_found_error", "model: claude-nope"))]
    with MessagesServer(script) as srv:
        c, _ = client(srv)
        assert failure(c) == ("API error 403: permission_error: not allowed "
                              "(the key in ANTHROPIC_API_KEY was refused)")
        assert failure(c) == "API error 404: not_found_error: model: claude-nope"


def test_a_refused_request_reports_the_api_message():
    with MessagesServer(["unused"]) as srv:
        c, _ = client(srv, {"temperature": 1.5})
        assert failure(c) == ("API error 400: invalid_request_error: temperature: Input should be less than or "
                              "equal to 1")


def test_sampling_sends_system_top_level_and_merges_same_roles():
    with MessagesServer(["sampled"]) as srv:
        c, events = client(srv)
        messages = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
        assert c.chat(messages, system="Be brief.", max_tokens=64, server="Docs") == "sampled"
        assert srv.errors == []
        assert srv.requests[0] == {"model": "claude-test", "max_tokens": 64, "system": "Be brief.", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]}
    request = next(d for k, d in events if k == "llm.request")
    assert request["source"] == "sampling" and request["provider"] == "anthropic"


def test_no_default_model_for_anthropic():
    c = LlmClient(LlmConfig.resolve({"provider": "anthropic"}, {"ANTHROPIC_API_KEY": KEY}))
    _OPEN.append(c)
    assert failure(c) == "no model configured for provider anthropic; set SAGE_MODEL or [llm] model"
    echo = LlmClient(LlmConfig.resolve({}, {"SAGE_LLM_PROVIDER": "anthropic", "SAGE_MODEL": "echo"}))
    assert echo.divine("hi", STRING) == "echo: hi"
    mock = LlmClient(LlmConfig.resolve({}, {"SAGE_LLM_PROVIDER": "anthropic", "SAGE_API_KEY": "mock"}))
    assert mock.divine("hi", STRING) == "[Mock LLM response for: hi]"


def test_provider_configuration():
    c = LlmConfig.resolve({}, {"SAGE_LLM_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": "o",
                               "OPENAI_BASE_URL": "http://openai.local/v1"})
    assert (c.provider, c.url, c.model, c.api_key, c.key_env) == (
        "anthropic", "https://api.anthropic.com/v1", None, KEY, "ANTHROPIC_API_KEY")
    c = LlmConfig.resolve({"provider": "anthropic"}, {"SAGE_API_KEY": "s", "ANTHROPIC_API_KEY": KEY})
    assert (c.api_key, c.key_env) == ("s", "SAGE_API_KEY")
    c = LlmConfig.resolve({"provider": "anthropic"}, {"SAGE_LLM_PROVIDER": "openai", "ANTHROPIC_API_KEY": KEY})
    assert (c.provider, c.api_key, c.model) == ("openai", None, "gpt-4o-mini")
    assert LlmConfig.resolve({}, {"SAGE_LLM_PROVIDER": "claude"}).error == \
        "invalid SAGE_LLM_PROVIDER 'claude': expected one of openai, anthropic"
