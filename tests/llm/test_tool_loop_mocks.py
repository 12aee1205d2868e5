"""Tool use by the model under `sage test` (SPEC §4.12, §9.3): each model turn takes one `mock divine` entry;
`mock divine -> call T.f(…), …;` scripts a turn that calls tools, whose calls then pass through the
`mock tool` queues and the real tools as a direct call would."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"


def sage_test(root: Path, source: str, toml: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n' + toml, encoding="utf-8")
    (root / "main_test.sg").write_text(textwrap.dedent(source), encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_NO_CACHE="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "sagepy", "test", "main_test.sg"], cwd=root, env=full,
                          capture_output=True, text=True, timeout=120)


def passed(r: subprocess.CompletedProcess, n: int) -> None:
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{n} passed, 0 failed" in r.stdout


def test_scripted_turns_with_tool_mocks_and_real_tools(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("real notes", encoding="utf-8")
    r = sage_test(tmp_path, """\
        agent Reader {
            use Fs;
            on start {
                yield(try divine("Summarise", tools: [Fs.read, Fs.list, Fs.write]));
            }
        }

        test "mocked, failing and real calls" {
            mock divine -> call Fs.list("."), call Fs.read("a.txt");
            mock tool Fs.list -> ["a.txt"];
            mock tool Fs.read -> fail("disk error");
            mock divine -> call Fs.read("notes.txt"), call Fs.write("out.txt", "written by the model");
            mock divine -> "summary";
            let r = try await summon Reader {};
            assert_eq(r, "summary");
            assert_eq(try Fs.read("out.txt"), "written by the model");
        }

        test "a scripted call to a function that was not offered" {
            mock divine -> call Fs.delete("notes.txt");
            mock divine -> "could not";
            let r = try divine("Delete", tools: [Fs.read]);
            assert_eq(r, "could not");
            assert(try Fs.exists("notes.txt"));
        }

        test "the loop's own errors raise from divine" {
            mock divine -> call Fs.exists("x");
            mock divine -> call Fs.exists("x");
            let r = divine("Loop", tools: [Fs], max_steps: 1) catch(e) { e.message };
            assert_eq(r, "tool loop exceeded 1 steps");
            mock divine -> call Fs.exists("x");
            mock divine -> fail("model down");
            let s = divine("Again", tools: [Fs]) catch(e) { e.message };
            assert_eq(s, "model down");
        }

        test "an empty queue" {
            mock divine -> call Fs.exists("x");
            let r = divine("Loop", tools: [Fs]) catch(e) { e.message };
            assert_eq(r, "no mock left for divine (E054)");
            mock infer -> call Fs.exists("x");
            let s = infer("Loop", tools: [Fs]) catch(e) { e.message };
            assert_eq(s, "no mock left for infer (E054)");
        }
        """)
    passed(r, 4)


def test_typed_answers_and_typed_mcp_mocks(tmp_path: Path) -> None:
    toml = f'[tools.Suite]\ncommand = "{sys.executable}"\nargs = ["{SUITE}"]\n'
    r = sage_test(tmp_path, """\
        record Person { name: String, age: Int, email: Option<String> }
        record Answer { oldest: String, count: Int }
        tool Suite {
            fn people(count: Int) -> List<Person>
            fn echo(text: String) -> String
        }

        test "typed answer after a mocked typed call" {
            mock divine -> call Suite.people(2), call Suite.echo("hi");
            mock tool Suite.people -> [Person { name: "ann", age: 40, email: None }];
            mock tool Suite.echo -> "hi";
            mock divine -> Answer { oldest: "ann", count: 1 };
            let a = try divine("Who is oldest?" -> Answer, tools: [Suite]);
            assert_eq(a, Answer { oldest: "ann", count: 1 });
        }

        test "a mock value that is not the target type fails the test" {
            mock divine -> "not an answer";
            let a = try divine("Who?" -> Answer, tools: [Suite.echo]);
        }

        test "tool calls mocked for a divine without tools" {
            mock divine -> call Suite.echo("x");
            let a = try divine("Hi");
        }
        """, toml=toml)
    assert "PASS main_test.sg::typed answer after a mocked typed call" in r.stdout, r.stdout + r.stderr
    assert "cannot convert 'not an answer' to Answer" in r.stdout
    assert "mock for divine: tool calls mocked for a divine that offers no tools" in r.stdout
    assert "1 passed, 2 failed" in r.stdout
    # every call was mocked: the server was never started
    assert not (tmp_path / ".sage" / "logs" / "Suite.log").exists()
