"""Tool use by the model (SPEC §4.12) end to end: `sage run` programs whose `divine(p, tools: [...])` talks to
the strict chat-completions server on 127.0.0.1 (tests/llm/strict_server.py), which refuses what the hosted
APIs refuse. Every test also checks that no request was refused (`srv.errors == []`)."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from strict_server import StrictChatServer, ToolCall, tool_results

REPO = Path(__file__).resolve().parent.parent.parent
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"


def sage(root: Path, program: str, srv: StrictChatServer, *args: str, env: dict | None = None,
         toml: str = "") -> subprocess.CompletedProcess:
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n' + toml, encoding="utf-8")
    (root / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_LLM_URL=srv.url, SAGE_API_KEY="sk-test",
                SAGE_NO_CACHE="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "sagepy", *(args or ("run", ".")), ], cwd=root, env=full,
                          capture_output=True, text=True, timeout=120)


def run_ok(root: Path, program: str, srv: StrictChatServer, **kw) -> str:
    r = sage(root, program, srv, **kw)
    assert r.returncode == 0, r.stdout + r.stderr
    assert srv.errors == []
    return r.stdout


def tools_of(request: dict) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in request["tools"]}


def agent(uses: str, body: str) -> str:
    return f"agent Main {{\n    use {uses};\n    on start {{\n{textwrap.indent(textwrap.dedent(body), ' ' * 8)}" \
           f"    }}\n}}\nrun Main;\n"


# ---------------------------------------------------------------- built-in tools

def test_fs_single_call_and_what_the_model_sees(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk", encoding="utf-8")
    with StrictChatServer([ToolCall("Fs__read", {"path": "notes.txt"}), "You need milk."]) as srv:
        out = run_ok(tmp_path, agent("Fs", 'print(try divine("What do I need?", tools: [Fs.read]));\n'), srv)
        assert out == "You need milk.\n"
        first, second = srv.requests
        assert first["tool_choice"] == "auto"
        fn = tools_of(first)["Fs__read"]
        assert fn["strict"] is True
        assert fn["parameters"] == {"type": "object", "properties": {"path": {"type": "string"}},
                                    "required": ["path"], "additionalProperties": False}
        assert fn["description"].startswith("Read a text file")
        assert tool_results(second)[0]["content"] == "buy milk"


def test_fs_sandbox_refusal_goes_back_to_the_model(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with StrictChatServer([ToolCall("Fs__read", {"path": "../secret.txt"}), "I may not read it."]) as srv:
        out = run_ok(tmp_path, agent("Fs", 'print(try divine("Read it", tools: [Fs]));\n'), srv,
                     env={"SAGE_FS_ROOT": str(root)})
        assert out == "I may not read it.\n"
        content = tool_results(srv.requests[1])[0]["content"]
        assert content.startswith("error: Tool error: Fs.read:") and "leaves the root" in content


def test_parallel_read_only_calls_keep_the_order_of_the_model(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(name.upper(), encoding="utf-8")
    calls = [ToolCall("Fs__read", {"path": f"{n}.txt"}) for n in ("a", "b", "c")] + [ToolCall("Fs__exists",
                                                                                              {"path": "d.txt"})]
    with StrictChatServer([calls, "done"]) as srv:
        run_ok(tmp_path, agent("Fs", 'print(try divine("Read all", tools: [Fs]));\n'), srv,
               env={"SAGE_TRACE_FILE": str(tmp_path / "trace.jsonl")})
        results = tool_results(srv.requests[1])
        assert [m["content"] for m in results] == ["A", "B", "C", "false"]
        assert [m["tool_call_id"] for m in results] == [c["id"] for c in
                                                         srv.requests[1]["messages"][1]["tool_calls"]]
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["kind"] == "tool.call"]
    assert len(calls) == 4 and all(e["source"] == "model" and e["safety"] == "read_only" for e in calls)
    responses = [e for e in events if e["kind"] == "llm.response"]
    assert [(e["step"], e["tool_calls"]) for e in responses] == [(1, 4), (2, 0)]
    assert [e["step"] for e in events if e["kind"] == "llm.request"] == [1, 2]


def test_shell_sequential_calls(tmp_path: Path) -> None:
    script = [ToolCall("Shell__run", {"cmd": "echo one"}), ToolCall("Shell__run", {"cmd": "exit 3"}), "ran both"]
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, agent("Shell", 'print(try divine("Run", tools: [Shell]));\n'), srv) == "ran both\n"
        first = json.loads(tool_results(srv.requests[1])[0]["content"])
        assert first == {"exit_code": 0, "stdout": "one\n", "stderr": ""}
        assert json.loads(tool_results(srv.requests[2])[0]["content"])["exit_code"] == 3


def test_database_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table items (name text, price int)")
        conn.execute("insert into items values ('pen', 2), ('ink', 5)")
    script = [ToolCall("Database__query", {"sql": "select name, price from items order by price"}), "pen and ink"]
    with StrictChatServer(script) as srv:
        run_ok(tmp_path, agent("Database", 'print(try divine("Prices?", tools: [Database.query]));\n'), srv,
               env={"SAGE_DATABASE_URL": f"sqlite:{db}"})
        rows = json.loads(tool_results(srv.requests[1])[0]["content"])
        assert rows == [{"columns": ["name", "price"], "values": ["pen", "2"]},
                        {"columns": ["name", "price"], "values": ["ink", "5"]}]


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body = f"page {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_http_against_a_local_server(tmp_path: Path) -> None:
    pages = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{pages.server_address[1]}/hello"
    try:
        with StrictChatServer([ToolCall("Http__get", {"url": url}), "fetched"]) as srv:
            run_ok(tmp_path, agent("Http", 'print(try divine("Fetch", tools: [Http.get]));\n'), srv)
            response = json.loads(tool_results(srv.requests[1])[0]["content"])
            assert response["status"] == 200 and response["body"] == "page /hello"
    finally:
        pages.shutdown()


# ---------------------------------------------------------------- what goes wrong goes to the model

def test_unknown_names_and_malformed_arguments_reach_the_model(tmp_path: Path) -> None:
    script = [[ToolCall("Fs__open", {"path": "x"}), ToolCall("Fs__exists", '{"path": "x"')],
              ToolCall("Fs__exists", {"path": 3}), ToolCall("Fs__exists", {"path": "x", "mode": "r"}),
              "gave up"]
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, agent("Fs", 'print(try divine("Look", tools: [Fs.exists]));\n'), srv) == "gave up\n"
        second = srv.requests[1]["messages"]
        assert [c["function"]["name"] for c in second[1]["tool_calls"]] == ["Fs__exists"]
        assert second[2]["content"].startswith("error: invalid arguments for 'Fs__exists'")
        assert second[3] == {"role": "user", "content": "error: unknown tool 'Fs__open'; the tools are: Fs__exists"}
        assert "argument 'path'" in tool_results(srv.requests[2])[0]["content"]
        assert "unknown argument 'mode'" in tool_results(srv.requests[3])[0]["content"]


def test_oversized_result_is_refused_not_cut(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 500, encoding="utf-8")
    with StrictChatServer([ToolCall("Fs__read", {"path": "big.txt"}), "too big"]) as srv:
        run_ok(tmp_path, agent("Fs", 'print(try divine("Read", tools: [Fs]));\n'), srv,
               env={"SAGE_MAX_TOOL_RESULT_CHARS": "100"})
        assert tool_results(srv.requests[1])[0]["content"] == \
            "error: result too large (500 characters, limit 100); ask for less"


def test_looping_model_hits_max_steps(tmp_path: Path) -> None:
    script = [ToolCall("Fs__exists", {"path": "x"})] * 4
    body = 'let r = divine("Loop", tools: [Fs], max_steps: 3) catch(e) { "{e.kind}: {e.message}" };\nprint(r);\n'
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, agent("Fs", body), srv) == "Llm: tool loop exceeded 3 steps\n"
        assert len(srv.requests) == 4


def test_max_tool_steps_setting(tmp_path: Path) -> None:
    script = [ToolCall("Fs__exists", {"path": "x"})] * 3
    body = 'let r = divine("Loop", tools: [Fs]) catch(e) { e.message };\nprint(r);\n'
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, agent("Fs", body), srv, toml="[llm]\nmax_tool_steps = 2\n") == \
            "tool loop exceeded 2 steps\n"


def test_typed_answer_with_a_retry_keeps_the_tools(tmp_path: Path) -> None:
    (tmp_path / "todo.txt").write_text("ship\ntest", encoding="utf-8")
    program = """\
        record Checklist { items: List<String>, done: Option<Bool> }
        agent Main {
            use Fs;
            on start {
                let c = try divine("Plan" -> Checklist, tools: [Fs.read]);
                print("{c.items} {c.done}");
            }
        }
        run Main;
        """
    script = [ToolCall("Fs__read", {"path": "todo.txt"}), "here you go: not json",
              '{"items": ["ship", "test"], "done": null}']
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, program, srv) == '["ship", "test"] None\n'
        last = srv.requests[2]
        assert "tools" in last and last["response_format"]["type"] == "json_schema"
        assert last["messages"][0]["role"] == "system"
        assert last["messages"][-1]["role"] == "user" and "could not be used" in last["messages"][-1]["content"]


def test_model_request_failure_raises_from_divine(tmp_path: Path) -> None:
    from strict_server import HttpError
    body = 'let r = divine("Hi", tools: [Fs]) catch(e) { e.message };\nprint(r);\n'
    with StrictChatServer([HttpError(401, {"error": {"message": "bad key"}})]) as srv:
        r = sage(tmp_path, agent("Fs", body), srv)
        assert r.returncode == 0 and r.stdout.startswith("API error 401")


def test_echo_model_never_calls_tools(tmp_path: Path) -> None:
    with StrictChatServer([]) as srv:
        out = run_ok(tmp_path, agent("Fs", 'print(try divine("Hello there", tools: [Fs]));\n'), srv,
                     env={"SAGE_MODEL": "echo"})
        assert out == "echo: Hello there\n" and srv.requests == []


# ---------------------------------------------------------------- typed MCP tools and dynamic handles

SUITE_TOOLS = f"""
[tools.Suite]
command = "{sys.executable}"
args = ["{SUITE}"]
"""

SUITE_BLOCK = """\
    record Person { name: String, age: Int, email: Option<String> }
    tool Suite {
        /// Repeat the text back, word for word.
        fn echo(text: String) -> String
        fn people(count: Int) -> List<Person>
        fn refuse(reason: String) -> String
        fn add(a: Int, b: Int) -> Int
        fn json_text() -> String
    }
    """


def test_typed_mcp_tools(tmp_path: Path) -> None:
    program = SUITE_BLOCK + agent("Suite", 'print(try divine("Go", tools: [Suite]));\n')
    script = [[ToolCall("Suite__echo", {"text": "hi"}), ToolCall("Suite__people", {"count": 2})],
              ToolCall("Suite__refuse", {"reason": "not today"}), "finished"]
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, program, srv, toml=SUITE_TOOLS) == "finished\n"
        fns = tools_of(srv.requests[0])
        assert fns["Suite__echo"]["description"] == "Repeat the text back, word for word."
        assert fns["Suite__json_text"]["description"] == "Unstructured: JSON in a text item."   # the server's
        assert "description" not in fns["Suite__add"]
        assert fns["Suite__json_text"]["parameters"] == {"type": "object", "properties": {}, "required": [],
                                                         "additionalProperties": False}
        assert fns["Suite__people"]["strict"] is True
        echo, people = tool_results(srv.requests[1])
        assert echo["content"] == "hi"
        assert json.loads(people["content"]) == [{"name": "p0", "age": 20}, {"name": "p1", "age": 21}]
        assert tool_results(srv.requests[2])[0]["content"] == \
            "error: MCP tool error: Error executing tool refuse: not today"


@pytest.mark.usefixtures("node_servers")
def test_typed_tools_of_server_everything(tmp_path: Path) -> None:
    everything = REPO / "tests" / "mcp" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
    program = """\
        tool Everything {
            fn echo(message: String) -> String
            #[mcp_name = "get-sum"]
            fn add(a: Float, b: Float) -> String
        }
        """ + agent("Everything", 'print(try divine("Add", tools: [Everything]));\n')
    script = [[ToolCall("Everything__echo", {"message": "ping"}), ToolCall("Everything__add", {"a": 1, "b": 2})],
              "3"]
    with StrictChatServer(script) as srv:
        toml = f'[tools.Everything]\ncommand = "{everything}"\n'
        assert run_ok(tmp_path, program, srv, toml=toml) == "3\n"
        fns = tools_of(srv.requests[0])
        assert fns["Everything__echo"]["description"]   # the server's description of `echo`
        echo, add = tool_results(srv.requests[1])
        assert "ping" in echo["content"] and "3" in add["content"]


def test_dynamic_handle_offers_every_tool_of_the_server(tmp_path: Path) -> None:
    config = json.dumps({"transport": "stdio", "command": sys.executable, "args": [str(SUITE)], "name": "suite"})
    body = f"let h = try mcp_connect('{config}');\nprint(try divine(\"Go\", tools: [h, Fs.exists]));\n"

    def after_grow(request: dict) -> object:
        return ToolCall("suite__extra_1", {})

    script = [[ToolCall("suite__echo", {"text": "dyn"}), ToolCall("suite__slow", {"seconds": 0, "tag": None})],
              ToolCall("suite__grow", {}), after_grow, "done"]
    with StrictChatServer(script) as srv:
        trace = tmp_path / "trace.jsonl"
        assert run_ok(tmp_path, agent("Fs", body), srv, env={"SAGE_TRACE_FILE": str(trace)}) == "done\n"
        fns = tools_of(srv.requests[0])
        assert "Fs__exists" in fns and "suite__echo" in fns and len(fns) == 24   # all five pages
        assert fns["suite__slow"]["parameters"]["required"] == ["seconds", "tag"]
        echo, slow = tool_results(srv.requests[1])
        assert echo["content"] == "dyn" and slow["content"] == "slept 0.0"
        assert "suite__extra_1" in tools_of(srv.requests[2])   # the list changed between turns
        assert tool_results(srv.requests[3])[0]["content"] == "extra 1"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    called = [(e["tool"], e["fn"], e["safety"]) for e in events if e["kind"] == "tool.call"]
    assert called[:2] == [("suite", "echo", "read_only"), ("suite", "slow", "destructive")]
    assert all(e["source"] == "model" for e in events if e["kind"] in ("tool.call", "tool.result"))


def test_dynamic_handle_against_mcp_server_time(tmp_path: Path) -> None:
    import shutil
    command = shutil.which("mcp-server-time")
    assert command, "mcp-server-time is installed with the test dependencies"
    config = json.dumps({"transport": "stdio", "command": command, "name": "time"})
    body = f"let h = try mcp_connect('{config}');\nprint(try divine(\"Time in Paris?\", tools: [h]));\n"
    script = [ToolCall("time__get_current_time", {"timezone": "Europe/Paris"}), "It is late."]
    with StrictChatServer(script) as srv:
        assert run_ok(tmp_path, agent("Fs", body.replace("Fs", "Fs")), srv) == "It is late.\n"
        assert "time__convert_time" in tools_of(srv.requests[0])
        assert json.loads(tool_results(srv.requests[1])[0]["content"])["timezone"] == "Europe/Paris"


def test_agent_tools_example_with_a_model(tmp_path: Path) -> None:
    """examples/agent_tools against a model: its tracker's tools do what the model asks, failures included."""
    import shutil
    example = tmp_path / "agent_tools"
    shutil.copytree(REPO / "examples" / "agent_tools", example, ignore=shutil.ignore_patterns(".sage"))
    repo = {"repo": "acme/widgets"}
    script = [ToolCall("Tracker__search_issues", {**repo, "state": "open"}),
              [ToolCall("Tracker__add_label", {**repo, "id": 7, "label": "urgent"}),
               ToolCall("Tracker__add_label", {**repo, "id": 11, "label": "question"})],
              '{"labelled": [11], "questions": [11], "summary": "One question."}']
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    with StrictChatServer(script) as srv:
        full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_LLM_URL=srv.url, SAGE_API_KEY="sk-test",
                    SAGE_MODEL="gpt-4o-mini", SAGE_NO_CACHE="1")
        r = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=example, env=full,
                           capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout == "labelled 1 issue(s), 1 question(s)\nOne question.\n"
        assert srv.errors == []
        issues = json.loads(tool_results(srv.requests[1])[0]["content"])
        assert [i["id"] for i in issues] == [7, 9, 11]
        urgent, question = tool_results(srv.requests[2])
        assert urgent["content"].startswith("error: MCP tool error:") and "unknown label 'urgent'" in urgent["content"]
        assert question["content"] == "#11 is labelled question"
