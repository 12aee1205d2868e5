"""Configuration (SPEC §8.2, §11), binding (§8.1), `$` references, safety classes (§8.6) and the result
rules of §8.4. No server is involved: these are the pure parts of the MCP layer."""
from __future__ import annotations

import pytest

from sagepy.core.json_text import compact_json
from sagepy.effects import wire
from sagepy.binding import AmbiguousBinding, bound_key
from sagepy.grove.servers import parse_mcp_settings, parse_tools_config
from sagepy.mcp.references import resolve_args, resolve_env, unset_references
from sagepy.mcp.failures import McpFailure
from sagepy.mcp.results import dynamic_text, error_text
from sagepy.mcp.safety import safety_of
from sagepy.core.values import NONE, UNIT, Record, some
from sagepy.core.types import INT, STRING, UNIT as UNIT_TYPE, ListT, MapT

from mcp_helpers import PERSON, POINT

GROVE = """\
[project]
name = "demo"

[mcp]
client_name = "probe"
elicitaton = "decline"

[tools.Calendar]
comand = "calendar-server"

[tools.Git]
command = "mcp-server-git"
timeout_ms = "5000"
safety = { git_reset = "risky" }

[tools.Web]
url = "http://127.0.0.1:1/mcp"
auth = "bearer"

[tools.Time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
protocol = "legacy"
"""


def _parse(tmp_path, text: str = GROVE):
    import tomllib
    path = tmp_path / "grove.toml"
    path.write_text(text)
    data = tomllib.loads(text)
    servers, diagnostics = parse_tools_config(data, str(path))
    settings, more = parse_mcp_settings(data, str(path))
    return servers, settings, diagnostics + more


def test_valid_entries_are_kept_and_errors_reported(tmp_path):
    servers, settings, diagnostics = _parse(tmp_path)
    assert list(servers) == ["Time"]
    time = servers["Time"]
    assert (time.transport, time.args, time.protocol, time.timeout_ms) == ("stdio", ["--local-timezone", "UTC"],
                                                                         "legacy", 30000)
    assert settings.client_name == "probe" and settings.elicitation == "auto"
    messages = sorted(d.message for d in diagnostics)
    assert all(d.code == "E090" for d in diagnostics)
    assert messages == [
        "grove.toml: [tools.Git] safety must be a table of \"read_only\", \"idempotent\" or \"destructive\", "
        "found an invalid entry `git_reset`",
        "grove.toml: [tools.Git] timeout_ms must be a positive integer, found a string",
        "grove.toml: [tools.Web] with auth = \"bearer\" needs `token_env`",
        "grove.toml: unknown key `comand` in [tools.Calendar]",
        "grove.toml: unknown key `elicitaton` in [mcp]",
    ]


def test_unknown_key_has_did_you_mean_and_position(tmp_path):
    _, _, diagnostics = _parse(tmp_path)
    unknown = next(d for d in diagnostics if "comand" in d.message)
    assert unknown.hint == "did you mean `command`?"
    assert unknown.span[:2] == (9, 1)
    assert unknown.file.endswith("grove.toml")


def test_required_keys_per_transport(tmp_path):
    text = '[tools.A]\ntransport = "http"\ncommand = "x"\n\n[tools.B]\nargs = []\n\n[tools.C]\nmodule = "srv.py"\n'
    servers, _, diagnostics = _parse(tmp_path, text)
    assert list(servers) == ["C"] and servers["C"].transport == "inprocess" and servers["C"].object == "server"
    assert sorted(d.message for d in diagnostics) == [
        "grove.toml: [tools.A] with transport \"http\" needs `url`",
        "grove.toml: [tools.B] needs `command` (stdio), `url` (http) or `module` (inprocess)",
    ]


def test_binding_exact_then_case_insensitive(tmp_path):
    servers, _, _ = _parse(tmp_path, '[tools.calendar]\ncommand = "a"\n\n[tools.Fs]\ncommand = "b"\n')
    assert servers[bound_key("Calendar", servers)].name == "calendar"
    assert servers[bound_key("calendar", servers)].name == "calendar"
    assert servers[bound_key("Fs", servers)].name == "Fs"
    assert bound_key("Nothing", servers) is None
    servers, _, _ = _parse(tmp_path, '[tools.fs]\ncommand = "a"\n')
    assert bound_key("Fs", servers) is None  # built-in names bind by exact key only
    servers, _, _ = _parse(tmp_path, '[tools.git]\ncommand = "a"\n\n[tools.GIT]\ncommand = "b"\n')
    with pytest.raises(AmbiguousBinding, match=r"\[tools.GIT\], \[tools.git\]"):
        bound_key("Git", servers)


def test_dollar_references():
    env = {"TOKEN": "s3cret", "EMPTY": ""}
    values = {"A": "$TOKEN", "B": "$$TOKEN", "C": "plain $$TOKEN", "D": "$EMPTY"}
    assert resolve_env(values, "[tools.X.env]", env) == {"A": "s3cret", "B": "$TOKEN", "C": "plain $TOKEN", "D": ""}
    with pytest.raises(McpFailure) as caught:
        resolve_env({"CAL_TOKEN": "$CAL_TOKEN"}, "[tools.Calendar.env]", env)
    assert caught.value.display() == ("MCP config error: [tools.Calendar.env] CAL_TOKEN refers to unset "
                                      "environment variable 'CAL_TOKEN'")


def test_dollar_references_anywhere_in_a_value():
    env = {"TOKEN": "s3cret", "HOME": "/home/u"}
    values = {"A": "Bearer $TOKEN", "B": "${HOME}/data", "C": "$TOKEN-${TOKEN}$$", "D": "costs $5 or $"}
    assert resolve_env(values, "[tools.X.headers]", env) == {
        "A": "Bearer s3cret", "B": "/home/u/data", "C": "s3cret-s3cret$", "D": "costs $5 or $"}
    for bad in ("${env:TOKEN}", "${TOKEN", "${}", "x ${1A} y"):
        with pytest.raises(McpFailure, match=r"\[tools.X.env\] K has an invalid variable reference"):
            resolve_env({"K": bad}, "[tools.X.env]", env)
    with pytest.raises(McpFailure) as caught:
        resolve_env({"Authorization": "Bearer ${CAL_TOKEN}"}, "[tools.Calendar.headers]", env)
    assert caught.value.display() == ("MCP config error: [tools.Calendar.headers] Authorization refers to unset "
                                      "environment variable 'CAL_TOKEN'")


def test_dollar_references_in_args(tmp_path):
    servers, _, _ = _parse(tmp_path, '[tools.X]\ncommand = "a"\nargs = ["--root=${ROOT}/x", "$$HOME", "$NOPE"]\n')
    with pytest.raises(McpFailure, match=r"\[tools.X\] args\[2\] refers to unset environment variable 'NOPE'"):
        resolve_args(servers["X"], {"ROOT": "/r"})
    assert resolve_args(servers["X"], {"ROOT": "/r", "NOPE": "n"}) == ["--root=/r/x", "$HOME", "n"]
    assert unset_references(servers["X"], {}) == [
        "[tools.X] args[0] refers to unset environment variable 'ROOT'",
        "[tools.X] args[2] refers to unset environment variable 'NOPE'"]


def test_unset_references_never_show_values(tmp_path):
    text = ('[tools.X]\ncommand = "a"\nenv = { A = "$NOPE_1", B = "$HOME_SECRET" }\n'
            'headers = { H = "$NOPE_2" }\n')
    servers, _, _ = _parse(tmp_path, text)
    problems = unset_references(servers["X"], {"HOME_SECRET": "hunter2"})
    assert problems == ["[tools.X.env] A refers to unset environment variable 'NOPE_1'",
                        "[tools.X.headers] H refers to unset environment variable 'NOPE_2'"]
    assert not any("hunter2" in p for p in problems)


@pytest.mark.parametrize("annotations, trust, override, expected", [
    ({"readOnlyHint": True, "destructiveHint": True}, True, None, "read_only"),
    ({"readOnlyHint": False, "idempotentHint": True}, True, None, "idempotent"),
    ({"destructiveHint": False}, True, None, "destructive"),
    (None, True, None, "destructive"),
    ({"readOnlyHint": True}, False, None, "destructive"),
    ({"readOnlyHint": True}, True, "destructive", "destructive"),
    (None, False, "read_only", "read_only"),
])
def test_safety_classes(annotations, trust, override, expected):
    assert safety_of(annotations, trust, override) == expected


def typed_value(result: dict, return_type, label: str, remote: str):
    """A typed result's Sage value as the real layer (the JSON it sends up) and the boundary make it."""
    data, read = wire.typed_result(result, return_type, label, remote)
    return read if read is not wire.UNREAD else wire.typed_value(data, return_type, label, remote)


def _text(*texts: str) -> list[dict]:
    return [{"type": "text", "text": t} for t in texts]


def test_result_rule_1_structured_content():
    assert typed_value({"structuredContent": {"x": 1, "y": 2}, "content": _text("{}")}, POINT, "T.f", "f") \
        == Record("Point", {"x": 1, "y": 2})
    assert typed_value({"structuredContent": {"result": [1, 2]}}, ListT(INT), "T.f", "f") == [1, 2]
    # A Map keeps the `result` wrapper: only non-record, non-Map types unwrap it.
    assert typed_value({"structuredContent": {"result": 1}}, MapT(STRING, INT), "T.f", "f") == {"result": 1}
    people = typed_value({"structuredContent": {"result": [{"name": "a", "age": 3}]}}, ListT(PERSON), "T.f", "f")
    assert people == [Record("Person", {"name": "a", "age": 3, "email": NONE})]


def test_result_rule_2_strings():
    assert typed_value({"content": _text("a", "b")}, STRING, "T.f", "f") == "a\nb"
    assert typed_value({"structuredContent": {"k": [1]}, "content": []}, STRING, "T.f", "f") == '{"k":[1]}'
    assert typed_value({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]}, STRING, "T.f", "f") == ""
    assert typed_value({"structuredContent": {"result": "hi"}}, STRING, "T.f", "f") == "hi"


def test_result_rule_3_single_text_as_json():
    assert typed_value({"content": _text('{"x": 3, "y": 4}')}, POINT, "T.f", "f") == Record("Point", {"x": 3, "y": 4})
    assert typed_value({"content": _text("null")}, PERSON.fields()[2][1], "T.f", "f") == NONE
    assert typed_value({"content": _text('"x"')}, PERSON.fields()[2][1], "T.f", "f") == some("x")


def test_result_rule_4_failure_message():
    with pytest.raises(McpFailure) as caught:
        typed_value({"content": _text("a", "b")}, ListT(INT), "Cal.find", "events.find")
    failure = caught.value
    assert failure.sub_kind == "deserialisation error"
    assert failure.message.startswith("Cal.find (remote 'events.find'): cannot convert ")
    assert "to List<Int>: no structuredContent and 2 text items" in failure.message
    with pytest.raises(McpFailure, match=r"cannot convert \{\"x\":\"a\"\} to Point: expected Int at \$\.x"):
        typed_value({"structuredContent": {"x": "a"}}, POINT, "T.f", "f")


def test_unit_accepts_anything_and_error_texts():
    assert typed_value({"content": _text("whatever")}, UNIT_TYPE, "T.f", "f") is UNIT
    assert error_text({"content": _text("bad", "worse")}) == "bad\nworse"
    assert error_text({"structuredContent": {"e": 1}}) == '{"e":1}'
    assert error_text({"content": []}) == "(no message)"
    assert dynamic_text({"structuredContent": {"a": 1}}) == compact_json({"a": 1})
    assert dynamic_text({}) == ""


def test_grove_toml_example_is_valid_and_complete():
    import os
    import tomllib
    from sagepy.grove.servers import _SERVER_KEYS
    path = os.path.join(os.path.dirname(__file__), "..", "..", "grove.toml.example")
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    servers, diagnostics = parse_tools_config(data, path)
    _, more = parse_mcp_settings(data, path)
    assert diagnostics + more == []
    assert {s.transport for s in servers.values()} == {"stdio", "http", "inprocess"}
    keys = set()
    for table in data["tools"].values():
        keys |= set(table)
    assert keys == set(_SERVER_KEYS)
    assert set(data) == {"project", "test", "mcp", "llm", "tools", "persistence", "supervision", "extern",
                         "approvals", "observability", "serve"}


def test_elicitation_answers_from_resolver_values():
    from sagepy.mcp.elicitation import ElicitationAnswer, answer_from
    assert answer_from("decline").action == "decline" and answer_from("cancel").action == "cancel"
    assert answer_from('{"ok": true}').content == {"ok": True}
    assert answer_from(Record("Approval", {"ok": False, "note": NONE})).content == {"ok": False}
    assert answer_from({"n": 1}).content == {"n": 1}
    assert answer_from(ElicitationAnswer("accept", {})).action == "accept"
    with pytest.raises(ValueError):
        answer_from("maybe")


def test_unset_references_in_args_are_e091_at_the_args_key(tmp_path, monkeypatch):
    from sagepy.mcptools.verify import unset_variable_diagnostics
    monkeypatch.delenv("SAGE_CFG_TEST_ROOT", raising=False)
    monkeypatch.setenv("SAGE_CFG_TEST_SET", "x")
    servers, _, _ = _parse(tmp_path, '[tools.X]\ncommand = "a"\n'
                                     'args = ["--root=${SAGE_CFG_TEST_ROOT}/x", "$SAGE_CFG_TEST_SET", "$$HOME"]\n'
                                     'headers = { H = "Bearer $SAGE_CFG_TEST_ROOT" }\n')
    found = unset_variable_diagnostics(servers["X"], str(tmp_path / "grove.toml"))
    assert [(d.code, d.message, d.span[0]) for d in found] == [
        ("E091", "MCP config error: [tools.X] args[0] refers to unset environment variable 'SAGE_CFG_TEST_ROOT'", 3),
        ("E091", "MCP config error: [tools.X.headers] H refers to unset environment variable 'SAGE_CFG_TEST_ROOT'", 4),
    ]


def test_unattended_oauth_keys(tmp_path):
    text = ('[tools.A]\nurl = "http://x/mcp"\ngrant = "client_credentials"\n\n'
            '[tools.B]\nurl = "http://x/mcp"\nauth = "oauth"\ngrant = "client_credentials"\n'
            'client_secret_env = "S"\n\n'
            '[tools.C]\nurl = "http://x/mcp"\nauth = "oauth"\ngrant = "client_credentials"\nclient_id_env = "I"\n\n'
            '[tools.D]\nurl = "http://x/mcp"\nauth = "oauth"\ngrant = "client_credentials"\nclient_id_env = "I"\n'
            'client_secret_env = "S"\nprivate_key_file = "k.pem"\n\n'
            '[tools.E]\nurl = "http://x/mcp"\nauth = "oauth"\ngrant = "client_credentials"\nclient_id_env = "I"\n'
            'private_key_file = "$KEY"\nsigning_algorithm = "RS256"\n\n'
            '[tools.F]\nurl = "http://x/mcp"\nauth = "bearer"\ntoken_env = "T"\nclient_metadata_url = "https://a/b"\n\n'
            '[tools.G]\nurl = "http://x/mcp"\nauth = "oauth"\ngrant = "password"\n\n'
            '[tools.H]\nurl = "http://x/mcp"\nauth = "oauth"\nclient_id_env = "I"\nclient_secret_env = "S"\n'
            'elicitation = "defaults"\n')
    servers, _, diagnostics = _parse(tmp_path, text)
    assert sorted(servers) == ["E", "H"]
    assert servers["E"].private_key_file == "$KEY" and servers["E"].signing_algorithm == "RS256"
    assert servers["H"].grant == "authorization_code" and servers["H"].elicitation == "defaults"
    assert sorted(d.message for d in diagnostics) == [
        'grove.toml: [tools.A] grant needs auth = "oauth"',
        'grove.toml: [tools.B] with grant = "client_credentials" needs `client_id_env`',
        'grove.toml: [tools.C] with grant = "client_credentials" needs exactly one of `client_secret_env` and '
        '`private_key_file`',
        'grove.toml: [tools.D] with grant = "client_credentials" needs exactly one of `client_secret_env` and '
        '`private_key_file`',
        'grove.toml: [tools.F] client_metadata_url needs auth = "oauth"',
        'grove.toml: [tools.G] grant must be one of "authorization_code", "client_credentials", found "password"',
    ]
    assert all(d.code == "E090" for d in diagnostics)


def test_elicitation_defaults_answer():
    from sagepy.mcp.elicitation import ElicitationRequest, TerminalElicitation

    def answer(schema, mode="form"):
        request = ElicitationRequest("S", mode, "m", schema, "https://x" if mode == "url" else None, "defaults")
        return TerminalElicitation(interactive=True)("S", request)
    schema = {"type": "object", "properties": {"name": {"type": "string", "default": "Ann"},
                                               "age": {"type": "integer", "default": 30},
                                               "note": {"type": "string"}}, "required": ["name"]}
    accepted = answer(schema)
    assert accepted.action == "accept" and accepted.content == {"name": "Ann", "age": 30}
    assert answer({**schema, "required": ["name", "note"]}).action == "decline"
    assert answer({"type": "object", "properties": {}}).content == {}
    assert answer(None, mode="url").action == "decline"


def test_private_key_references(tmp_path, monkeypatch):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from sagepy.grove.servers import parse_server
    from sagepy.mcp.oauth_unattended import private_key

    def config(path, algorithm="ES256"):
        table = {"url": "http://x/mcp", "auth": "oauth", "grant": "client_credentials", "client_id_env": "I",
                 "private_key_file": path, "signing_algorithm": algorithm}
        return parse_server("R", table, "tools.R", lambda *a: pytest.fail(str(a)))
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    (tmp_path / "key.pem").write_text(pem)
    assert private_key(config("key.pem"), str(tmp_path)) == pem
    monkeypatch.setenv("R_KEY", pem)
    assert private_key(config("${R_KEY}"), str(tmp_path)) == pem
    monkeypatch.delenv("R_KEY")
    with pytest.raises(McpFailure) as caught:
        private_key(config("$R_KEY"), str(tmp_path))
    assert caught.value.display() == \
        "MCP config error: [tools.R.private_key_file] R_KEY refers to unset environment variable 'R_KEY'"
    with pytest.raises(McpFailure) as caught:
        private_key(config("key.pem", "RS256"), str(tmp_path))
    assert caught.value.display() == ("MCP auth error: [tools.R] private_key_file: key.pem does not hold a RS256 "
                                      "private key in PEM form (InvalidKeyError)")
    assert pem.splitlines()[1] not in caught.value.display()
    with pytest.raises(McpFailure) as caught:
        private_key(config("missing.pem"), str(tmp_path))
    assert caught.value.display() == "MCP auth error: [tools.R] private_key_file missing.pem: No such file or directory"
