"""Recorded runs (SPEC §22.2): `sage run --record` against the real test servers (a model API and an MCP
server over stdio), `--replay` with both gone, a replay miss as E213 with the diff, refused cassettes, and the
cassettes of `sage test`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import SUITE, sage, sage_env
from fake_openai import FakeOpenAI, reply

PROGRAM = """\
tool Suite {
    fn add(a: Int, b: Int) -> Int
}

agent Main {
    use Suite;
    on start {
        let n = try Suite.add(2, 3);
        let a = try divine("Count {n} sheep");
        print("{n} {a}");
        yield(0);
    }
}

run Main;
"""


def _project(tmp_path: Path) -> Path:
    server = tmp_path / "suite_server.py"
    server.write_text(SUITE.read_text())
    (tmp_path / "grove.toml").write_text(f'[project]\nname = "rec"\n\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\n'
                                         f'args = ["suite_server.py"]\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.sg").write_text(PROGRAM)
    return server


def test_record_then_replay_without_the_servers_then_a_changed_prompt_misses(tmp_path: Path) -> None:
    server = _project(tmp_path)
    secret = "sk-secret-4242-do-not-record"
    with FakeOpenAI() as model:
        model.push(reply("five sheep", {"prompt_tokens": 7, "completion_tokens": 2}))
        done = sage("run", "--record", "run.jsonl", cwd=tmp_path, env=sage_env(SAGE_LLM_URL=model.url,
                                                                                  SAGE_API_KEY=secret))
        assert (done.returncode, done.stdout) == (0, "5 five sheep\n"), done.stderr
        assert len(model.requests) == 1
    text = (tmp_path / "run.jsonl").read_text()
    assert secret not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [(r["kind"], r["target"]) for r in records[1:-1]] == [("tool", "Suite.add"), ("llm", "divine")]
    assert records[1]["outcome"] == 5 and records[2]["outcome"] == "five sheep"
    assert all(len(r["key"]) == 64 for r in records[1:-1])

    server.unlink()   # the MCP server is gone, and the model server answers nothing
    with FakeOpenAI() as silent:
        env = sage_env(SAGE_LLM_URL=silent.url, SAGE_API_KEY="another-key")
        again = sage("run", "--replay", "run.jsonl", cwd=tmp_path, env=env)
        assert (again.returncode, again.stdout, again.stderr) == (0, "5 five sheep\n", "")
        assert silent.requests == []
        main = tmp_path / "src" / "main.sg"
        main.write_text(PROGRAM.replace("sheep", "goats"))
        missed = sage("run", "--replay", "run.jsonl", cwd=tmp_path, env=env)
        assert silent.requests == []
    assert missed.returncode == 1
    assert "error[E213]: replay miss: llm divine: no recorded outcome for this request" in missed.stderr
    assert '-      "content": "Count 5 sheep",' in missed.stderr
    assert '+      "content": "Count 5 goats",' in missed.stderr
    assert missed.stdout == ""


def test_a_truncated_or_foreign_cassette_is_refused(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text('agent Main { on start { print(try divine("hi")); } }\nrun Main;\n')
    env = sage_env(SAGE_MODEL="echo")
    assert sage("run", "main.sg", "--record", "c.jsonl", cwd=tmp_path, env=env).returncode == 0
    lines = (tmp_path / "c.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "cut.jsonl").write_text("".join(lines[:-1]))
    (tmp_path / "half.jsonl").write_text("".join(lines)[:-20])
    header = json.loads(lines[0])
    header["outcome"]["sagepy"] = "0.0.1"
    (tmp_path / "old.jsonl").write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    # the first and last lines spelled otherwise than sagepy writes them (spaces) but saying the same, and the
    # model's answer changed in the record: it is replayed
    first, last = (json.dumps(json.loads(line)) + "\n" for line in (lines[0], lines[-1]))
    records = "".join(lines[1:-1]).replace('"outcome":"echo: hi"', '"outcome":"ho"')
    (tmp_path / "spaced.jsonl").write_text(first + records + last)
    replayed = sage("run", "main.sg", "--replay", "spaced.jsonl", cwd=tmp_path, env=env)
    assert (replayed.returncode, replayed.stdout) == (0, "ho\n"), replayed.stderr
    for name, message in (("cut", "is truncated: the recording did not finish"),
                          ("half", "is truncated: line 3 is incomplete"),
                          ("old", "was written by sagepy 0.0.1"), ("none", "not found")):
        done = sage("run", "main.sg", "--replay", f"{name}.jsonl", cwd=tmp_path, env=env)
        assert done.returncode == 1 and message in done.stderr and done.stdout == "", (name, done.stderr)
        assert "Traceback" not in done.stderr


def test_sage_test_replays_a_cassette_after_its_mocks(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text('agent Main { on start { print(try divine("first")); '
                                      'print(try divine("second")); } }\nrun Main;\n')
    env = sage_env(SAGE_MODEL="echo")
    assert sage("run", "main.sg", "--record", "c.jsonl", cwd=tmp_path, env=env).stdout == "echo: first\necho: second\n"
    (tmp_path / "main_test.sg").write_text("""\
test "replays" {
    replay "c.jsonl";
    assert_eq(try divine("first"), "echo: first");
}

test "mocks first" {
    replay "c.jsonl";
    mock divine -> "mocked";
    assert_eq(try divine("first"), "mocked");
    assert_eq(try divine("second"), "echo: second");
}

test "misses" {
    replay "c.jsonl";
    let a = try divine("third");
}

test "from the command line" {
    assert_eq(try divine("second"), "echo: second");
}
""")
    done = sage("test", ".", "--replay", "c.jsonl", cwd=tmp_path, env=env)
    assert "PASS main_test.sg::replays" in done.stdout
    assert "PASS main_test.sg::mocks first" in done.stdout
    assert "PASS main_test.sg::from the command line" in done.stdout
    assert "FAIL main_test.sg::misses\n    error[E213]: replay miss: llm divine" in done.stdout
    assert any(line.lstrip().startswith("+") and '"content": "third"' in line for line in done.stdout.splitlines())


def test_the_calls_a_model_asks_for_are_recorded_and_replayed(tmp_path: Path) -> None:
    from strict_server import StrictChatServer, ToolCall
    server = _project(tmp_path)
    (tmp_path / "notes.txt").write_text("buy milk")
    (tmp_path / "src" / "main.sg").write_text("""\
tool Suite {
    fn add(a: Int, b: Int) -> Int
}

agent Main {
    use Suite, Fs;
    on start {
        print(try divine("What do I need, and what is 2 + 3?", tools: [Suite.add, Fs.read]));
        yield(0);
    }
}

run Main;
""")
    script = [[ToolCall("Suite__add", {"a": 2, "b": 3}), ToolCall("Fs__read", {"path": "notes.txt"})],
              "Milk, and 5."]
    with StrictChatServer(script) as model:
        done = sage("run", "--record", "loop.jsonl", cwd=tmp_path,
                    env=sage_env(SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-test"))
        assert (done.returncode, done.stdout) == (0, "Milk, and 5.\n"), done.stderr
        assert model.errors == [] and len(model.requests) == 2
    records = [json.loads(line) for line in (tmp_path / "loop.jsonl").read_text().splitlines()[1:-1]]
    assert [(r["kind"], r["target"]) for r in records] == [
        ("llm", "divine"), ("tool", "Suite.add"), ("tool", "Fs.read"), ("llm", "divine")]
    assert records[1]["outcome"] == 5 and records[2]["outcome"] == "buy milk"
    server.unlink()
    (tmp_path / "notes.txt").unlink()   # Fs.read is a tool call: answered from the cassette too
    again = sage("run", "--replay", "loop.jsonl", cwd=tmp_path,
                 env=sage_env(SAGE_LLM_URL="http://127.0.0.1:9/v1", SAGE_API_KEY="sk-test"))
    assert (again.returncode, again.stdout, again.stderr) == (0, "Milk, and 5.\n", "")
