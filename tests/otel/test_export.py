"""OpenTelemetry export (SPEC §18.1) end to end: `sage run` subprocesses send their spans over OTLP/HTTP to a
real receiver on 127.0.0.1 that decodes the protobuf requests with opentelemetry-proto (receiver.py); MCP
calls go to a real stdio server that records the `_meta` it receives; model turns go to the strict
chat-completions server of tests/llm."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "llm"))

from receiver import Receiver  # noqa: E402
from strict_server import StrictChatServer, ToolCall  # noqa: E402

META_SERVER = HERE / "servers" / "meta_server.py"

TOOL_BLOCK = """
tool Meta {
    fn lookup(key: String) -> String
    fn explode(reason: String) -> String
}
"""


def project(root: Path, program: str, toml: str = "") -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text(textwrap.dedent(f"""\
        [project]
        name = "spans"

        [tools.Meta]
        command = "{sys.executable}"
        args = ["{META_SERVER}"]

        [tools.Meta.env]
        META_LOG = "{root / 'meta.log'}"

        [tools.Meta.safety]
        lookup = "read_only"
        """) + textwrap.dedent(toml), encoding="utf-8")
    (root / "src" / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
    return root


def sage(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "OTEL_"))}
    full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_NO_CACHE="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "sagepy", *(args or ("run",))], cwd=root, env=full,
                          capture_output=True, text=True, timeout=90)


def tree(spans: list[dict]) -> dict[str, dict]:
    """Every span of the run's trace by id, after checking they form one trace under one root."""
    ids = {s["span_id"]: s for s in spans}
    roots = [s for s in spans if s["parent"] is None]
    assert len(roots) == 1, [s["name"] for s in roots]
    assert {s["trace_id"] for s in spans} == {roots[0]["trace_id"]}
    for s in spans:
        assert s["parent"] is None or s["parent"] in ids, s["name"]
    return ids


def one(spans: list[dict], name: str) -> dict:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, (name, [s["name"] for s in spans])
    return found[0]


def test_summoned_agents_nest_under_their_summoner(tmp_path: Path) -> None:
    root = project(tmp_path, """
        agent Leaf {
            on start {
                let a = try divine("a question");
                yield(1);
            }
        }
        agent Worker {
            on start {
                let h = summon Leaf {};
                let n = try await h;
                yield(n + 1);
            }
        }
        agent Main {
            on start {
                let a = summon Worker {};
                let b = summon Worker {};
                let x = try await a;
                let y = try await b;
                print("{x + y}");
                yield(3);
            }
        }
        run Main;
        """)
    with Receiver() as r:
        result = sage(root, env={"OTEL_EXPORTER_OTLP_ENDPOINT": r.url, "SAGE_MODEL": "echo"})
    assert (result.returncode, result.stdout, result.stderr) == (3, "4\n", "")
    ids = tree(r.spans)
    run = one(r.spans, "sage run src/main.sg")
    assert run["kind"] == "INTERNAL"
    assert run["attributes"] == {"sage.entry": "src/main.sg", "sage.exit_code": 3}
    assert run["resource"]["service.name"] == "spans"
    main = one(r.spans, "invoke_agent Main")
    assert main["parent"] == run["span_id"]
    assert main["attributes"] == {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Main",
                                  "sage.agent.path": "Main"}
    workers = {s["attributes"]["sage.agent.path"]: s for s in r.named("invoke_agent Worker")}
    assert set(workers) == {"Main/Worker#1", "Main/Worker#2"}
    assert all(w["parent"] == main["span_id"] and w["kind"] == "INTERNAL" for w in workers.values())
    leaves = r.named("invoke_agent Leaf")
    assert sorted(ids[s["parent"]]["attributes"]["sage.agent.path"] for s in leaves) == sorted(workers)
    assert {s["attributes"]["sage.agent.path"] for s in leaves} == {"Main/Worker#1/Leaf#1", "Main/Worker#2/Leaf#1"}
    # the offline `echo` model sends no request: its turns are no client calls and name no server
    chats = r.named("chat echo")
    assert sorted(ids[c["parent"]]["attributes"]["sage.agent.path"] for c in chats) == sorted(
        s["attributes"]["sage.agent.path"] for s in leaves)
    assert all(c["kind"] == "INTERNAL" and "server.address" not in c["attributes"] for c in chats)
    assert all(s["status"] == "UNSET" for s in r.spans)
    for s in r.spans:   # a child lies within its parent
        if s["parent"] is not None:
            assert ids[s["parent"]]["start"] <= s["start"] <= s["end"] <= ids[s["parent"]]["end"], s["name"]


def test_a_typed_mcp_call_carries_its_trace_context_to_the_server_and_a_failing_tool_is_an_error(
        tmp_path: Path) -> None:
    root = project(tmp_path, TOOL_BLOCK + """
        agent Main {
            use Meta;
            on start {
                print(try Meta.lookup("k1"));
                let r = Meta.explode("boom") catch(e) { "caught {e.kind}" };
                print(r);
                let h = try mcp_connect(env_or("DYNAMIC", ""));
                print(try mcp_call(h, "lookup", '{"key": "k3"}'));
            }
        }
        run Main;
        """)
    dynamic = json.dumps({"transport": "stdio", "name": "recorder", "command": sys.executable,
                          "args": [str(META_SERVER)], "env": {"META_LOG": str(root / "meta.log")}})
    with Receiver() as r:
        result = sage(root, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.url + "/v1/traces",
                                 "OTEL_SERVICE_NAME": "checkout", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=ai%20ops",
                                 "DYNAMIC": dynamic})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "value of k1\ncaught Mcp\nvalue of k3\n"
    tree(r.spans)
    assert {req["headers"].get("x-team") for req in r.requests} == {"ai ops"}
    assert r.spans[0]["resource"]["service.name"] == "checkout"
    assert r.spans[0]["resource"]["service.version"] == "0.1.0"   # the project's, by default
    main = one(r.spans, "invoke_agent Main")
    lookup = one(r.spans, "execute_tool Meta.lookup")
    assert lookup["kind"] == "INTERNAL" and lookup["parent"] == main["span_id"] and lookup["status"] == "UNSET"
    assert lookup["attributes"] == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "Meta.lookup", "gen_ai.tool.type": "function",
        "sage.tool.source": "program", "sage.tool.safety": "read_only", "mcp.method.name": "tools/call",
        "mcp.protocol.version": lookup["attributes"]["mcp.protocol.version"], "network.transport": "pipe"}
    assert lookup["attributes"]["mcp.protocol.version"]
    explode = one(r.spans, "execute_tool Meta.explode")
    assert explode["status"] == "ERROR" and explode["attributes"]["error.type"] == "Mcp"
    assert explode["description"] == "MCP tool error: Error executing tool explode"   # the error's display
    assert explode["attributes"]["sage.tool.safety"] == "destructive"
    # the server received each call's context: this trace, and the call's own span as the parent
    metas = [json.loads(line) for line in (root / "meta.log").read_text().splitlines()]
    parents = [m["traceparent"].split("-") for m in metas]
    call = one(r.spans, "execute_tool recorder.lookup")   # a dynamic call: `<server>.<remote>`
    assert (call["parent"], call["attributes"]["gen_ai.tool.name"], call["attributes"]["network.transport"],
            call["attributes"]["mcp.method.name"]) == (main["span_id"], "recorder.lookup", "pipe", "tools/call")
    assert [(p[1], p[2]) for p in parents] == [(lookup["trace_id"], lookup["span_id"]),
                                               (explode["trace_id"], explode["span_id"]),
                                               (call["trace_id"], call["span_id"])]
    # no content unless asked for
    assert not any(k.startswith("gen_ai.tool.call.") for s in r.spans for k in s["attributes"])


def test_a_model_tool_loop_makes_chat_turns_and_the_calls_the_model_asked_for(tmp_path: Path) -> None:
    root = project(tmp_path, TOOL_BLOCK + """
        agent Main {
            use Meta;
            on start {
                print(try divine("Find k2", tools: [Meta.lookup]));
            }
        }
        run Main;
        """)
    script = [ToolCall("Meta__lookup", {"key": "k2"}), ToolCall("Meta__missing", {}), "k2 is value of k2"]
    with StrictChatServer(script) as srv, Receiver() as r:
        result = sage(root, env={"OTEL_EXPORTER_OTLP_ENDPOINT": r.url, "SAGE_LLM_URL": srv.url,
                                 "SAGE_API_KEY": "sk-secret-key-1234", "SAGE_MODEL": "gpt-test",
                                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "k2 is value of k2\n"
    assert srv.errors == []
    tree(r.spans)
    main = one(r.spans, "invoke_agent Main")
    chats = sorted(r.named("chat "), key=lambda s: s["start"])
    assert [c["name"] for c in chats] == ["chat gpt-test"] * 3
    port = int(srv.url.rsplit(":", 1)[1].split("/")[0])
    for chat, finish in zip(chats, (["tool_calls"], ["tool_calls"], ["stop"])):
        a = chat["attributes"]
        assert chat["kind"] == "CLIENT" and chat["parent"] == main["span_id"]
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"], a["gen_ai.request.model"],
                a["gen_ai.response.model"]) == ("chat", "openai", "gpt-test", "gpt-test")
        assert a["gen_ai.response.finish_reasons"] == finish
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert (a["server.address"], a["server.port"]) == ("127.0.0.1", port)
        assert "sage.replayed" not in a
    call = one(r.spans, "execute_tool Meta.lookup")
    assert call["parent"] == main["span_id"]
    asked = srv.requests[0]
    assert call["attributes"]["sage.tool.source"] == "model"
    assert call["attributes"]["gen_ai.tool.call.id"] == json.loads(
        json.dumps(srv.requests[1]["messages"][1]["tool_calls"][0]["id"]))
    assert asked["model"] == "gpt-test"
    assert call["attributes"]["gen_ai.tool.call.arguments"] == '{"key":"k2"}'
    assert call["attributes"]["gen_ai.tool.call.result"] == "value of k2"
    first_in = json.loads(chats[0]["attributes"]["gen_ai.input.messages"])
    assert first_in == [{"role": "user", "parts": [{"type": "text", "content": "Find k2"}]}]
    last_out = json.loads(chats[2]["attributes"]["gen_ai.output.messages"])
    assert last_out == [{"role": "assistant", "parts": [{"type": "text", "content": "k2 is value of k2"}],
                         "finish_reason": "stop"}]
    second_out = json.loads(chats[0]["attributes"]["gen_ai.output.messages"])
    assert second_out[0]["parts"][0]["type"] == "tool_call"
    everything = json.dumps(r.spans)
    assert "sk-secret-key-1234" not in everything


def test_a_resumed_durable_run_marks_its_replayed_spans(tmp_path: Path) -> None:
    root = project(tmp_path, TOOL_BLOCK + """
        agent Main {
            use Meta;
            on start {
                let a = try divine("first");
                let b = try Meta.lookup("k1");
                let c = try Meta.lookup("k2");
                print("{a} | {b} | {c}");
            }
        }
        run Main;
        """, toml="\n[persistence]\n")
    llm = {"SAGE_LLM_URL": "", "SAGE_API_KEY": "sk-test", "SAGE_MODEL": "gpt-test"}
    with StrictChatServer(["answer one"]) as srv, Receiver() as r:
        llm["SAGE_LLM_URL"] = srv.url
        crashed = sage(root, env={**llm, "SAGE_CRASH_AFTER_WRITE": "2"})   # the model turn and `k1` recorded
        assert crashed.returncode == 77, crashed.stderr
        resumed = sage(root, "run", "--resume", "last", "--trace-file", "t.ndjson",
                       env={**llm, "OTEL_EXPORTER_OTLP_ENDPOINT": r.url})
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "answer one | value of k1 | value of k2\n"
    tree(r.spans)
    run_id = resumed.stderr.split("resuming run ", 1)[1].split()[0]
    assert one(r.spans, "sage run src/main.sg")["attributes"]["sage.run.id"] == run_id
    chat = one(r.spans, "chat gpt-test")
    assert chat["kind"] == "INTERNAL" and chat["attributes"]["sage.replayed"] is True
    assert not any(k.startswith("gen_ai.usage.") for k in chat["attributes"])
    calls = sorted(r.named("execute_tool Meta.lookup"), key=lambda s: s["start"])
    assert [c["attributes"].get("sage.replayed") for c in calls] == [True, None]
    assert [json.loads(line)["traceparent"].split("-")[2] for line in (root / "meta.log").read_text().splitlines()
            if "traceparent" in line] == [calls[1]["span_id"]]
    # the NDJSON trace marks the replayed steps' events, and every event names its agent's path
    events = [json.loads(line) for line in (root / "t.ndjson").read_text().splitlines()]
    assert all("path" in e for e in events)
    marked = [(e["kind"], e.get("fn"), e.get("replayed")) for e in events if e["kind"].startswith(("llm.", "tool."))]
    assert marked == [("llm.request", None, True), ("llm.response", None, True), ("tool.call", "lookup", True),
                      ("tool.result", "lookup", True), ("tool.call", "lookup", None), ("tool.result", "lookup", None)]


@pytest.mark.parametrize("user", ["", "tracer:OtelSecret-7@"], ids=["plain", "password"])
def test_an_unreachable_collector_is_one_warning_and_keeps_the_exit_code(tmp_path: Path, user: str) -> None:
    with socket.socket() as s:   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = project(tmp_path, """
        agent Main {
            on start { print("hi"); yield(4); }
        }
        run Main;
        """)
    url = f"http://{user}127.0.0.1:{port}/v1/traces"
    started = time.monotonic()
    result = sage(root, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url})
    assert time.monotonic() - started < 60   # bounded: the run does not wait for the SDK's retries
    assert (result.returncode, result.stdout) == (4, "hi\n")
    shown = url.replace("OtelSecret-7", "***")   # the password never shows (SPEC §14.1's mask)
    assert result.stderr == f"warning: could not export traces to {shown}: Connection refused\n"


@pytest.mark.parametrize("env, stderr", [
    ({"OTEL_SDK_DISABLED": "true"}, ""),
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
     "warning: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (only http/protobuf); traces are not exported\n"),
])
def test_export_turned_off(tmp_path: Path, env: dict, stderr: str) -> None:
    root = project(tmp_path, 'agent Main { on start { print("hi"); } }\nrun Main;\n')
    with Receiver() as r:
        result = sage(root, env={"OTEL_EXPORTER_OTLP_ENDPOINT": r.url, **env})
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", stderr)
    assert r.requests == []


def test_sage_test_exports_nothing_and_grove_toml_names_the_endpoint(tmp_path: Path) -> None:
    with Receiver() as r:
        root = project(tmp_path, 'agent Main { on start { print("hi"); } }\nrun Main;\n',
                       toml=f'\n[observability]\notlp_endpoint = "{r.url}/v1/traces"\n')
        (root / "src" / "main_test.sg").write_text('test "adds" { assert_eq(1 + 1, 2); }\n', encoding="utf-8")
        tested = sage(root, "test")
        assert tested.returncode == 0, tested.stdout + tested.stderr
        assert r.requests == []
        ran = sage(root)
    assert ran.returncode == 0, ran.stderr
    assert [s["name"] for s in r.spans if s["parent"] is None] == ["sage run src/main.sg"]


def test_a_turn_answered_by_a_fallback_names_the_model_that_answered(tmp_path: Path) -> None:
    """SPEC §23: the primary answers 429; the `chat` span is the fallback's (its provider, model, server and
    usage), and says which model the turn asked for first."""
    from messages_server import KEY as ANTHROPIC_KEY, MessagesServer
    from strict_server import HttpError
    program = """
        agent Main {
            on start {
                print(try divine("hello"));
            }
        }
        run Main;
        """
    with StrictChatServer([HttpError(429, {"error": {"message": "slow down"}})]) as primary, \
            MessagesServer(["hi from claude"]) as claude, Receiver() as r:
        root = project(tmp_path, program, f"""
            [llm]
            retries = 0
            fallback = ["anthropic:claude-test"]

            [llm.providers.anthropic]
            url = "{claude.url}"
            api_key_env = "CLAUDE_KEY"
            """)
        done = sage(root, env={"SAGE_LLM_URL": primary.url, "SAGE_API_KEY": "sk-test", "SAGE_MODEL": "gpt-test",
                               "CLAUDE_KEY": ANTHROPIC_KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": r.url})
        assert done.returncode == 0, done.stderr
        assert done.stdout == "hi from claude\n"
    chat = one(r.spans, "chat claude-test")["attributes"]
    assert chat["gen_ai.provider.name"] == "anthropic" and chat["gen_ai.request.model"] == "claude-test"
    assert chat["sage.llm.fallback_from"] == "gpt-test"
    assert chat["server.port"] == int(claude.url.split(":")[2].split("/")[0])
    assert chat["gen_ai.usage.input_tokens"] >= 1 and chat["gen_ai.usage.output_tokens"] >= 1
