"""`divine(p, model: "<name>")` (SPEC §23) end to end: `sage run` programs against the local chat-completions
server (strict_server.py) and Messages API server (messages_server.py), which refuse what the hosted APIs
refuse. The option overrides the configured model for that call only; `"<provider>:<model>"` sends the call
to that provider, at its `[llm.providers.<provider>]` URL with the key of its `api_key_env`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from messages_server import KEY as ANTHROPIC_KEY, MessagesServer, ToolCall as AnthropicCall
from strict_server import StrictChatServer

REPO = Path(__file__).resolve().parent.parent.parent


def run(root: Path, program: str, openai: StrictChatServer, grove: str = "") -> subprocess.CompletedProcess:
    (root / "grove.toml").write_text(
        f'[project]\nentry = "main.sg"\n\n[llm]\nurl = "{openai.url}"\nmodel = "configured-model"\n{grove}',
        encoding="utf-8")
    (root / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_API_KEY="sk-openai-test", SAGE_NO_CACHE="1",
               CLAUDE_KEY=ANTHROPIC_KEY, SAGE_TRACE_FILE=str(root / "trace.jsonl"))
    return subprocess.run([sys.executable, "-m", "sagepy", "run", "."], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def trace(root: Path, kind: str) -> list[dict]:
    events = [json.loads(line) for line in (root / "trace.jsonl").read_text().splitlines()]
    return [e for e in events if e["kind"] == kind]


def test_model_overrides_the_configured_one_for_that_call_only(tmp_path: Path) -> None:
    program = """\
        agent Main {
            on start {
                let which = "small-model";
                print(try divine("one", model: which));
                print(try divine("two"));
                print(try divine("three", model: "openai:" ++ which ++ "-2"));
            }
        }
        run Main;
        """
    with StrictChatServer(["a", "b", "c"]) as openai:
        r = run(tmp_path, program, openai)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "a\nb\nc\n"
        assert [q["model"] for q in openai.requests] == ["small-model", "configured-model", "small-model-2"]
        assert openai.errors == []
    assert [(e["model"], e["provider"]) for e in trace(tmp_path, "llm.request")] == [
        ("small-model", "openai"), ("configured-model", "openai"), ("small-model-2", "openai")]


def test_a_model_of_another_provider_goes_to_that_provider(tmp_path: Path) -> None:
    """Plain, typed and tool-using calls to `anthropic:<model>` from a project configured for openai."""
    (tmp_path / "notes.txt").write_text("buy milk", encoding="utf-8")
    program = """\
        record Verdict { ok: Bool }
        agent Main {
            use Fs;
            on start {
                print(try divine("plain", model: "anthropic:claude-test"));
                let v = try divine("typed" -> Verdict, model: "anthropic:claude-test");
                print("{v.ok}");
                print(try divine("with tools", tools: [Fs.read], model: "anthropic:claude-tools"));
                print(try divine("back home"));
            }
        }
        run Main;
        """
    grove = '\n[llm.providers.anthropic]\nurl = "{url}"\napi_key_env = "CLAUDE_KEY"\n'
    script = ["hello from claude", '{"ok": true}', AnthropicCall("Fs__read", {"path": "notes.txt"}), "milk"]
    with StrictChatServer(["from openai"]) as openai, MessagesServer(script) as claude:
        r = run(tmp_path, program, openai, grove.format(url=claude.url))
        assert r.returncode == 0, r.stderr
        assert r.stdout == "hello from claude\ntrue\nmilk\nfrom openai\n"
        assert claude.errors == [] and openai.errors == []
        assert [q["model"] for q in claude.requests] == ["claude-test", "claude-test", "claude-tools",
                                                        "claude-tools"]
        assert all(h["x-api-key"] == ANTHROPIC_KEY for h in claude.headers)
        # the tools in the Messages API's own form, and the JSON instruction of the typed call in `system`
        assert claude.requests[2]["tools"][0]["name"] == "Fs__read" and "input_schema" in claude.requests[2]["tools"][0]
        assert "JSON Schema" in claude.requests[1]["system"]
        assert [q["model"] for q in openai.requests] == ["configured-model"]
    assert [(e["model"], e["provider"]) for e in trace(tmp_path, "llm.request")] == [
        ("claude-test", "anthropic"), ("claude-test", "anthropic"), ("claude-tools", "anthropic"),
        ("claude-tools", "anthropic"), ("configured-model", "openai")]


def test_unknown_provider_table_is_e090(tmp_path: Path) -> None:
    with StrictChatServer([]) as openai:
        r = run(tmp_path, 'agent Main { on start { print("x"); } }\nrun Main;\n', openai,
                '\n[llm.providers.gemini]\nurl = "http://127.0.0.1:9/v1"\n')
    assert r.returncode == 1
    assert "E090" in r.stderr and "unknown provider `gemini` in [llm.providers]" in r.stderr
    assert "Traceback" not in r.stderr
