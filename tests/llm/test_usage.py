"""What a run costs (SPEC §23) end to end: `sage run` programs against the local chat-completions server
(strict_server.py) and Messages API server (messages_server.py), which report token counts like the hosted
APIs: usage in the trace, `sage run --usage`, `sage runs show` and `runs list --format json`; budgets, also
across a crash and a resume; fallbacks on transient failures only."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from messages_server import KEY as ANTHROPIC_KEY, MessagesServer, ToolCall as AnthropicCall
from strict_server import HttpError, StrictChatServer

REPO = Path(__file__).resolve().parent.parent.parent


def project(root: Path, program: str, url: str, llm: str = "", more: str = "") -> Path:
    (root / "grove.toml").write_text(
        f'[project]\nentry = "main.sg"\n\n[llm]\nurl = "{url}"\nmodel = "gpt-test"\nretries = 0\n{llm}\n'
        f'[llm.prices."gpt-test"]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n{more}', encoding="utf-8")
    (root / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
    return root


def sage(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    base.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_API_KEY="sk-openai-test", SAGE_NO_CACHE="1",
                CLAUDE_KEY=ANTHROPIC_KEY, **env)
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=base, capture_output=True,
                          text=True, timeout=120)


def events(path: Path, kind: str) -> list[dict]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == kind]


TWO_TURNS = """\
    record Verdict { ok: Bool }
    agent Main {
        on start {
            print(try divine("Say hi"));
            let v = try divine("Judge it" -> Verdict);
            print("{v.ok}");
        }
    }
    run Main;
    """


def test_usage_is_counted_priced_shown_and_journaled(tmp_path: Path) -> None:
    with StrictChatServer(["hi", '{"ok": true}']) as srv:
        root = project(tmp_path, TWO_TURNS, srv.url, more="\n[persistence]\n")
        r = sage(root, "run", "--usage", "--trace-file", "t.ndjson")
        assert r.returncode == 0, r.stderr
        assert srv.errors == []
    responses = events(root / "t.ndjson", "llm.response")
    tokens_in = sum(e["prompt_tokens"] for e in responses)
    tokens_out = sum(e["completion_tokens"] for e in responses)
    cost = tokens_in * 2.0 / 1e6 + tokens_out * 10.0 / 1e6
    assert abs(sum(e["cost"] for e in responses) - cost) < 1e-9
    line = f"usage: 2 model turns, {tokens_in} tokens in, {tokens_out} tokens out, ${cost:.6f}".rstrip("0")
    assert r.stderr.splitlines()[-1] == line
    show = sage(root, "runs", "show", "last")
    assert show.returncode == 0, show.stderr
    assert line in show.stdout.splitlines() and "models: openai:gpt-test (2 turns)" in show.stdout
    assert "#usage" not in show.stdout
    listed = json.loads(sage(root, "runs", "list", "--format", "json").stdout)
    assert listed[0]["usage"] == {"turns": 2, "input_tokens": tokens_in, "output_tokens": tokens_out,
                                  "cached_input_tokens": 0, "cost": round(cost, 9), "unknown_turns": 0}
    steps = json.loads(sage(root, "runs", "show", "last", "--format", "json").stdout)
    assert [s["kind"] for s in steps] == ["llm", "llm"]   # the usage record is no step


BUDGETED = """\
    agent Main {
        on start {
            for n in [1, 2, 3, 4] {
                print(divine("turn {n}") catch(e) { "stopped: " ++ e.message });
            }
        }
    }
    run Main;
    """


def test_a_turn_past_the_token_budget_is_not_sent(tmp_path: Path) -> None:
    # each turn of this server costs about 12 tokens in and 10 out: the budget is reached after two turns
    with StrictChatServer(["a", "b", "c", "d"]) as srv:
        root = project(tmp_path, BUDGETED, srv.url, "max_tokens_per_run = 40\n")
        r = sage(root, "run", "--usage")
        assert r.returncode == 0, r.stderr
        assert len(srv.requests) == 2
    lines = r.stdout.splitlines()
    assert lines[:2] == ["a", "b"] and lines[2] == lines[3]
    assert lines[2].startswith("stopped: budget exceeded: ") and lines[2].endswith(" of 40 tokens used by this run")
    assert int(lines[2].split()[3]) >= 40


def test_a_resumed_run_counts_the_turns_before_the_crash(tmp_path: Path) -> None:
    with StrictChatServer(["a", "b"]) as srv:
        root = project(tmp_path, BUDGETED, srv.url, "max_tokens_per_run = 60\n", more="\n[persistence]\n")
        # killed once the second turn is journaled, before its answer is printed
        crashed = sage(root, "run", SAGE_CRASH_AFTER_WRITE="2")
        assert crashed.returncode == 77, crashed.stderr
        assert crashed.stdout == "a\n"
        srv.push("c", "d")
        resumed = sage(root, "run", "--resume", "last", "--usage")
        assert resumed.returncode == 0, resumed.stderr
        # the two turns before the crash count: a third one is sent, a fourth would go past the budget
        assert len(srv.requests) == 3
    lines = resumed.stdout.splitlines()
    assert lines[:2] == ["b", "c"] and len(lines) == 3   # the second turn replayed, the third sent
    assert lines[2].startswith("stopped: budget exceeded: ") and lines[2].endswith(" of 60 tokens used by this run")
    assert resumed.stderr.splitlines()[-1].startswith("usage: 3 model turns, ")


def test_a_turn_whose_usage_is_unknown_does_not_let_a_budget_pass(tmp_path: Path) -> None:
    def no_usage(body: dict) -> HttpError:   # a 200 answer without `usage`, as some servers give
        return HttpError(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": "a"}}]})
    with StrictChatServer([no_usage, "b"]) as srv:
        root = project(tmp_path, BUDGETED, srv.url, "max_tokens_per_run = 100000\n")
        r = sage(root, "run", "--usage")
        assert len(srv.requests) == 1
    stopped = "stopped: budget exceeded: unknown of 100000 tokens used by this run (1 turn reported no usage)"
    assert r.stdout.splitlines() == ["a", stopped, stopped, stopped]
    assert r.stderr.splitlines()[-1] == "usage: 1 model turn, 0 tokens in, 0 tokens out, 1 turn with unknown usage"


TOOL_USING = """\
    agent Main {
        use Fs;
        on start {
            print(try divine("What do I need?", tools: [Fs.read]));
        }
    }
    run Main;
    """
FALLBACK = ('fallback = ["anthropic:claude-test"]\n', '\n[llm.providers.anthropic]\nurl = "{url}"\n'
            'api_key_env = "CLAUDE_KEY"\n\n[llm.prices."claude-test"]\ninput_per_mtok = 3\noutput_per_mtok = 15\n')


def test_a_rate_limited_primary_falls_back_to_another_provider(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk", encoding="utf-8")
    rate_limited = HttpError(429, {"error": {"message": "Rate limit reached", "type": "requests"}})
    script = [AnthropicCall("Fs__read", {"path": "notes.txt"}), "You need milk."]
    with StrictChatServer([rate_limited, rate_limited]) as primary, MessagesServer(script) as claude:
        root = project(tmp_path, TOOL_USING, primary.url, FALLBACK[0], FALLBACK[1].format(url=claude.url)
                       + "\n[persistence]\n")
        r = sage(root, "run", "--usage", "--trace-file", "t.ndjson")
        assert r.returncode == 0, r.stderr
        assert r.stdout == "You need milk.\n"
        assert len(primary.requests) == 2 and claude.errors == [] and len(claude.requests) == 2
        assert claude.requests[0]["tools"][0]["name"] == "Fs__read"
    responses = events(root / "t.ndjson", "llm.response")
    assert [e.get("answered_by") for e in responses] == ["anthropic:claude-test"] * 2
    show = sage(root, "runs", "show", "last").stdout
    assert "models: anthropic:claude-test (2 turns)" in show
    assert r.stderr.splitlines()[-1].startswith("usage: 2 model turns, ")


def test_no_fallback_on_a_request_the_primary_refused(tmp_path: Path) -> None:
    refused = HttpError(400, {"error": {"message": "Invalid value for 'model'", "type": "invalid_request_error"}})
    with StrictChatServer([refused]) as primary, MessagesServer(["never"]) as claude:
        root = project(tmp_path, TOOL_USING, primary.url, FALLBACK[0], FALLBACK[1].format(url=claude.url))
        r = sage(root, "run")
        assert r.returncode == 1
        assert claude.requests == []
    assert "API error 400" in r.stderr and "Traceback" not in r.stderr


def test_run_outcome_usage_of_each_run_of_one_program(tmp_path: Path) -> None:
    """`RunOutcome.usage` (SPEC §20, §23): each run of a compiled program counts its own turns."""
    import sagepy
    with StrictChatServer(["hi", '{"ok": true}', "again", '{"ok": false}']) as srv:
        root = project(tmp_path, TWO_TURNS, srv.url)
        program = sagepy.compile(str(root))
        lines: list[str] = []
        first = program.run(host=sagepy.Host(out=lines.append, err=lines.append))
        second = program.run(host=sagepy.Host(out=lines.append, err=lines.append))
        assert srv.errors == []
    assert lines == ["hi", "true", "again", "false"]
    for outcome in (first, second):
        usage = outcome.usage
        assert outcome.status == "completed" and usage["turns"] == 2 and usage["unknown_turns"] == 0
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        assert usage["cost"] == round((usage["input_tokens"] * 2.0 + usage["output_tokens"] * 10.0) / 1e6, 9)


def test_a_dollar_budget_refuses_a_turn_of_a_model_without_a_price(tmp_path: Path) -> None:
    """A model grove.toml does not name (here a `model:` option) and has no price for: its turn is not sent,
    rather than costing a silent zero."""
    program = """\
        agent Main {
            on start {
                print(try divine("priced"));
                print(divine("unpriced", model: "gpt-other") catch(e) { e.message });
            }
        }
        run Main;
        """
    with StrictChatServer(["a"]) as srv:
        root = project(tmp_path, program, srv.url, "max_cost_per_run = 1.0\n")
        r = sage(root, "run", "--usage")
        assert r.returncode == 0, r.stderr
        assert [q["model"] for q in srv.requests] == ["gpt-test"]
    assert r.stdout.splitlines() == ["a", 'no price for model gpt-other: [llm] max_cost_per_run needs '
                                          '[llm.prices."gpt-other"]']
