"""Tool use by the model with `SAGE_LLM_PROVIDER=anthropic` (SPEC §4.12, §4.13) end to end: `sage run` programs
whose `divine(p, tools: [...])` talks to the Messages server on 127.0.0.1 (tests/llm/messages_server.py),
which refuses what the hosted Messages API refuses. Every test also checks that no request was refused."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from messages_server import KEY, MessagesServer, ToolCall, input_schema_problem, tool_results

REPO = Path(__file__).resolve().parent.parent.parent


def environment(srv: MessagesServer, **more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_LLM_PROVIDER="anthropic", SAGE_LLM_URL=srv.url,
               ANTHROPIC_API_KEY=KEY, SAGE_MODEL="claude-test", SAGE_NO_CACHE="1", **more)
    return env


def run_ok(root: Path, program: str, srv: MessagesServer, **env: str) -> str:
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n', encoding="utf-8")
    (root / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=root, env=environment(srv, **env),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert srv.errors == []
    return r.stdout


def agent(uses: str, body: str, before: str = "") -> str:
    indented = textwrap.indent(textwrap.dedent(body), " " * 8)
    return f"{before}agent Main {{\n    use {uses};\n    on start {{\n{indented}    }}\n}}\nrun Main;\n"


def tools_of(request: dict) -> dict[str, dict]:
    return {t["name"]: t for t in request["tools"]}


def test_single_call_and_what_the_model_sees(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk", encoding="utf-8")
    script = [["Let me read your notes.", ToolCall("Fs__read", {"path": "notes.txt"})], "You need milk."]
    with MessagesServer(script) as srv:
        out = run_ok(tmp_path, agent("Fs", 'print(try divine("What do I need?", tools: [Fs.read]));\n'), srv,
                     SAGE_TRACE_FILE=str(tmp_path / "trace.jsonl"))
        assert out == "You need milk.\n"
        first, second = srv.requests
        assert first["tool_choice"] == {"type": "auto"} and "system" not in first and first["max_tokens"] == 4096
        tool = tools_of(first)["Fs__read"]
        assert tool["input_schema"] == {"type": "object", "properties": {"path": {"type": "string"}},
                                        "required": ["path"], "additionalProperties": False}
        assert tool["description"].startswith("Read a text file") and set(tool) == {"name", "description",
                                                                                    "input_schema"}
        user, assistant, results = second["messages"]
        assert user == {"role": "user", "content": "What do I need?"}
        # the assistant's content as received: its text, then its tool_use block
        assert assistant["content"][0] == {"type": "text", "text": "Let me read your notes."}
        assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["input"] == {
            "path": "notes.txt"}
        assert results["content"] == [{"type": "tool_result", "tool_use_id": assistant["content"][1]["id"],
                                       "content": "buy milk"}]
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    requests = [e for e in events if e["kind"] == "llm.request"]
    assert [(e["step"], e["provider"]) for e in requests] == [(1, "anthropic"), (2, "anthropic")]
    responses = [e for e in events if e["kind"] == "llm.response"]
    assert [e["tool_calls"] for e in responses] == [1, 0]
    assert all(e["prompt_tokens"] >= 1 and e["completion_tokens"] >= 1 for e in responses)


def test_parallel_calls_answered_in_one_user_message_in_call_order(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(name.upper(), encoding="utf-8")
    calls = [ToolCall("Fs__read", {"path": f"{n}.txt"}) for n in ("a", "b", "c")]
    with MessagesServer([calls + [ToolCall("Fs__read", {"path": "missing.txt"})], "done"]) as srv:
        assert run_ok(tmp_path, agent("Fs", 'print(try divine("Read all", tools: [Fs]));\n'), srv) == "done\n"
        asked = [b["id"] for b in srv.requests[1]["messages"][1]["content"]]
        results = tool_results(srv.requests[1])
        assert [r["tool_use_id"] for r in results] == asked
        assert [r["content"] for r in results[:3]] == ["A", "B", "C"]
        assert results[3]["is_error"] is True and results[3]["content"].startswith("error: Tool error: Fs.read:")
        assert all("is_error" not in r for r in results[:3])


def test_sequential_calls_with_errors_going_to_the_model(tmp_path: Path) -> None:
    script = [ToolCall("Shell__run", {"cmd": "echo one"}), ToolCall("Nope__nothing", {}),
              ToolCall("Shell__run", {"cmd": 3}), "ran"]
    with MessagesServer(script) as srv:
        assert run_ok(tmp_path, agent("Shell", 'print(try divine("Run", tools: [Shell]));\n'), srv) == "ran\n"
        first = tool_results(srv.requests[1])[0]
        assert json.loads(first["content"]) == {"exit_code": 0, "stdout": "one\n", "stderr": ""}
        unknown = tool_results(srv.requests[2])[0]
        assert unknown["is_error"] is True and unknown["content"].startswith("error: unknown tool 'Nope__nothing'")
        invalid = tool_results(srv.requests[3])[0]
        assert invalid["is_error"] is True and "invalid arguments for 'Shell__run'" in invalid["content"]
        assert len(srv.requests[3]["messages"]) == 7


def test_typed_answer_with_a_retry_keeps_the_tools(tmp_path: Path) -> None:
    program = agent("Fs", 'let t = try divine("Count" -> Tally, tools: [Fs.exists]);\nprint("{t.count} {t.note}");\n',
                    before="record Tally { count: Int, note: Option<String> }\n")
    script = [ToolCall("Fs__exists", {"path": "x.txt"}), "no JSON here", '{"count": 2, "note": null}']
    with MessagesServer(script) as srv:
        out = run_ok(tmp_path, program, srv)
        assert out.startswith("2 ")
        first, second, third = srv.requests
        assert "JSON Schema" in first["system"] and "response_format" not in first
        assert all(r["tools"] == first["tools"] and r["system"] == first["system"] for r in (second, third))
        assert [m["role"] for m in third["messages"]] == ["user", "assistant", "user", "assistant", "user"]
        assert third["messages"][3]["content"] == "no JSON here"


def test_typed_tool_parameters_in_the_anthropic_dialect(tmp_path: Path) -> None:
    program = agent("Notes", 'print(try divine("File it", tools: [Notes.file]));\n', before=textwrap.dedent("""\
        record Tag { name: String, weight: Option<Int> }
        tool Notes {
            /// File a note under tags.
            fn file(title: String, tags: List<Tag>, due: Option<String>) -> String
        }
        """))
    with MessagesServer(["filed"]) as srv:
        assert run_ok(tmp_path, program, srv) == "filed\n"
        schema = tools_of(srv.requests[0])["Notes__file"]["input_schema"]
        assert input_schema_problem(schema) is None
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == {"title", "tags"}
        tag = schema["properties"]["tags"]["items"]
        tag = schema.get("$defs", {}).get(tag["$ref"].rsplit("/", 1)[-1], tag) if "$ref" in tag else tag
        assert tag["additionalProperties"] is False
        assert tools_of(srv.requests[0])["Notes__file"]["description"] == "File a note under tags."


def test_agent_tools_example_with_claude(tmp_path: Path) -> None:
    """examples/agent_tools with SAGE_LLM_PROVIDER=anthropic and a key: the tracker's tools do what the model
    asks (a parallel turn with one refused label included), and the typed report ends the run."""
    example = tmp_path / "agent_tools"
    shutil.copytree(REPO / "examples" / "agent_tools", example, ignore=shutil.ignore_patterns(".sage"))
    repo = {"repo": "acme/widgets"}
    script = [ToolCall("Tracker__search_issues", {**repo, "state": "open"}),
              ToolCall("Tracker__read_issue", {**repo, "id": 11}),
              ["Labelling now.", ToolCall("Tracker__add_label", {**repo, "id": 7, "label": "urgent"}),
               ToolCall("Tracker__add_label", {**repo, "id": 11, "label": "question"})],
              '{"labelled": [11], "questions": [11], "summary": "One question."}']
    with MessagesServer(script) as srv:
        r = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=example, env=environment(srv),
                           capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout == "labelled 1 issue(s), 1 question(s)\nOne question.\n"
        assert srv.errors == [] and srv.remaining == 0
        assert [i["id"] for i in json.loads(tool_results(srv.requests[1])[0]["content"])] == [7, 9, 11]
        assert tool_results(srv.requests[2])[0]["content"] == "I cannot find the export button."
        urgent, question = tool_results(srv.requests[3])
        assert urgent["is_error"] is True and "unknown label 'urgent'" in urgent["content"]
        assert question["content"] == "#11 is labelled question" and "is_error" not in question
        assert set(tools_of(srv.requests[0])) == {"Tracker__search_issues", "Tracker__read_issue",
                                                  "Tracker__add_label"}


def test_the_journal_is_provider_neutral(tmp_path: Path) -> None:
    """A durable run whose first model turn was journaled from Claude resumes with an OpenAI-compatible model:
    the replayed turn (its tool_use id included) continues as a chat-completions conversation that the strict
    chat server accepts."""
    from strict_server import StrictChatServer
    from strict_server import tool_results as chat_results
    (tmp_path / "grove.toml").write_text('[project]\nname = "neutral"\nentry = "main.sg"\n\n[persistence]\n',
                                         encoding="utf-8")
    (tmp_path / "main.sg").write_text(agent("Shell", 'print(try divine("Greet", tools: [Shell.run]));\n'),
                                      encoding="utf-8")
    with MessagesServer([ToolCall("Shell__run", {"cmd": "echo hi"})]) as claude:
        # write 1 is the first turn's outcome, committed before the destructive call's intent (write 2)
        crashed = subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=tmp_path,
                                 env=environment(claude, SAGE_CRASH_AFTER_WRITE="1"), capture_output=True,
                                 text=True, timeout=120)
        assert crashed.returncode == 77, crashed.stderr
        assert claude.errors == [] and len(claude.requests) == 1
        call_id = "toolu_000001"
    env = {k: v for k, v in environment(claude).items() if not k.startswith(("SAGE_LLM_", "ANTHROPIC_"))}
    with StrictChatServer(["Said hi."]) as chat:
        env.update(SAGE_LLM_URL=chat.url, SAGE_API_KEY="sk-test", SAGE_MODEL="gpt-4o-mini")
        resumed = subprocess.run([sys.executable, "-m", "sagepy", "run", "--resume", "last"], cwd=tmp_path,
                                 env=env, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "Said hi.\n" and chat.errors == []
        [request] = chat.requests
        assert request["messages"][1]["tool_calls"][0]["id"] == call_id
        assert json.loads(chat_results(request)[0]["content"])["stdout"] == "hi\n"
