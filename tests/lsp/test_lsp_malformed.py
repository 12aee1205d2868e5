"""`sage lsp` on what a broken or hostile client sends (SPEC §19.2: errors never end the server): frames
whose length cannot be honoured, requests whose params do not fit, names that cannot be renamed to, and
documents that are not files of a project. Every request gets an answer — a result or an error with a plain
message, never a Python traceback — and the server keeps serving."""
from __future__ import annotations

import json

import pytest

from .raw import RawServer

MAIN = "/// Adds.\nfn add(a: Int, b: Int) -> Int {\n    return a + b;\n}\n\nagent Main {\n    on start {\n" \
       "        print(str(add(1, 2)));\n    }\n}\n\nrun Main;\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> RawServer:
    root = tmp_path_factory.mktemp("project")
    (root / "grove.toml").write_text('[project]\nname = "demo"\nentry = "main.sg"\n')
    (root / "main.sg").write_text(MAIN)
    raw = RawServer(root)
    raw.uri = (root / "main.sg").as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": raw.uri, "languageId": "sage", "version": 1,
                                                         "text": MAIN}})
    raw.notified("textDocument/publishDiagnostics")
    yield raw
    raw.close()


def hover_of_add(server: RawServer) -> dict:
    return server.request("textDocument/hover", {"textDocument": {"uri": server.uri},
                                                 "position": {"line": 7, "character": 19}})


def plain(error: dict) -> None:
    """An error answer a person can read: no traceback, in the message or in `data`."""
    text = json.dumps(error)
    assert "Traceback" not in text and "traceback" not in text and 'File "' not in text, error
    assert "internal error" not in error["message"], error


def still_serving(server: RawServer) -> None:
    assert "add(a: Int, b: Int)" in hover_of_add(server)["result"]["contents"]["value"]
    assert server.proc.poll() is None


@pytest.mark.parametrize("header", [b"Content-Length: 1099511627776", b"Content-Length: " + b"9" * 400,
                                    b"Content-Length: 99999999999999999999"], ids=["1 TiB", "400 digits", "20 digits"])
def test_a_frame_length_that_cannot_be_read_is_skipped(server: RawServer, header: bytes) -> None:
    server.send_bytes(header + b"\r\n\r\n")
    still_serving(server)
    assert any("Content-Length" in m for m in server.logged())


@pytest.mark.parametrize("params", [
    {"textDocument": {"uri": "file:///x.sg"}, "position": {"line": -1, "character": 0}},
    {}, None, [], {"textDocument": {"uri": "file:///x.sg"}, "position": {"line": "one", "character": 0}}],
    ids=["line -1", "empty", "null", "list", "line text"])
def test_hover_with_invalid_params_is_answered_invalid_params(server: RawServer, params: object) -> None:
    answer = server.request("textDocument/hover", params)
    assert answer["error"]["code"] == -32602, answer
    assert "textDocument/hover" in answer["error"]["message"]
    plain(answer["error"])
    still_serving(server)


@pytest.mark.parametrize("new", ["match", "a b", "", "2x"])
def test_rename_to_a_keyword_or_an_invalid_name_is_invalid_params(server: RawServer, new: str) -> None:
    answer = server.request("textDocument/rename", {"textDocument": {"uri": server.uri},
                                                    "position": {"line": 1, "character": 4}, "newName": new})
    assert answer["error"]["code"] == -32602, answer
    assert "data" not in answer["error"] or answer["error"]["data"] is None
    plain(answer["error"])
    still_serving(server)


@pytest.mark.parametrize("uri", ["file:///nonexistent/x.sg", "http://example.com/x.sg", "untitled:Untitled-1"])
@pytest.mark.parametrize("method", ["textDocument/hover", "textDocument/documentSymbol",
                                    "textDocument/definition", "textDocument/completion"])
def test_a_document_outside_any_project_gets_an_empty_answer(server: RawServer, uri: str, method: str) -> None:
    params = {"textDocument": {"uri": uri}}
    if method != "textDocument/documentSymbol":
        params["position"] = {"line": 0, "character": 0}
    answer = server.request(method, params)
    assert "error" not in answer, answer
    assert answer["result"] in (None, [], {"isIncomplete": False, "items": []}) or \
        method == "textDocument/completion", answer
    still_serving(server)
