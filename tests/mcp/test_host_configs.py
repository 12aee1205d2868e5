"""Other hosts' MCP configs as `[tools.<Name>]` tables (SPEC §10.2 `sage tools import`): the pure parts."""
from __future__ import annotations

import tomllib

import pytest

from sagepy.mcptools.host_configs import HostConfigError, appended, convert, read_servers, toml_table


def test_variables_become_dollar_references():
    entry = {"command": "run", "args": ["${env:A}", "${B}/x", "$C", "${input:api-key}", "${workspaceFolder}/s",
                                        "${userHome}", "$$", "${weird thing}"]}
    converted = convert("my-server", entry, "/proj")
    assert converted.name == "MyServer"
    assert converted.table["args"] == ["$A", "$B/x", "$C", "$API_KEY", "/proj/s", "$HOME", "$$", "${weird thing}"]
    assert converted.inputs == ["API_KEY"]
    assert convert("shell", {"command": "x"}, "/proj").name == "ShellServer"
    assert convert("git", {"command": "x"}, "/proj").name == "Git"


@pytest.mark.parametrize("entry, reason", [
    ({"url": "https://h/sse"}, "it uses the SSE transport, which sagepy does not support"),
    ({"type": "sse", "url": "https://h/events"}, "it uses the SSE transport, which sagepy does not support"),
    ({"command": "x", "disabled": True}, "it is disabled"),
    ({"type": "http"}, "it has neither a command nor a URL sagepy can use"),
    ("npx srv", "its entry is not an object"),
])
def test_entries_that_cannot_be_imported(entry, reason):
    converted = convert("s", entry, "/proj")
    assert converted.table is None and converted.reason == reason


def test_json_with_comments_and_trailing_commas(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{ // a comment\n "servers": {"a": {"url": "https://h//x", /* block */ "type": "http",},},}')
    assert read_servers(str(path)) == {"a": {"url": "https://h//x", "type": "http"}}
    path.write_text('{"other": {}}')
    with pytest.raises(HostConfigError, match='has neither an "mcpServers" nor a "servers" object'):
        read_servers(str(path))


def test_rendered_tables_are_toml_and_append_without_touching_the_text():
    table = {"command": 'c "q" \\ é', "args": ["a b", "\n"], "env": {"K-1": "$V", "with space": "x"}}
    text = toml_table("Weird", table)
    assert tomllib.loads(text) == {"tools": {"Weird": table}}
    before = "# keep\n[project]\nname = 'x'  # trailing"
    after = appended(before, [text, toml_table("B", {"url": "http://h/"})])
    assert after.startswith(before + "\n\n[tools.Weird]\n")
    assert tomllib.loads(after)["tools"]["B"] == {"url": "http://h/"}
    assert appended("", [text]) == text and appended(before, []) == before
