"""The effects chain (DESIGN.md "The effects boundary"): a layer added to the chain sees every step a
program performs, with its kind, target, safety class (known whether or not tracing is on), agent path and
step number; adding it touches no call site."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from sagepy.cli.main import main
from sagepy.effects import factory

REPO = Path(__file__).resolve().parent.parent.parent
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"

PROGRAM = """\
    record Point { x: Int, y: Int }

    tool Suite {
        fn echo(text: String) -> String
        fn add(a: Int, b: Int) -> Int
        fn make_point(x: Int, y: Int) -> Point
    }

    const CONFIG: String = '__CONFIG__';

    agent Listener receives String {
        on start { yield(receive()); }
    }

    agent Printer {
        on message(m: String) { print(m); }
    }

    agent Main {
        use Suite
        use Fs
        @persistent visits: Int

        on start {
            print(try divine("hello"));
            print(try Fs.read("data.txt"));
            print(try Suite.echo("x"));
            print(try Suite.add(1, 2));
            let p = try Suite.make_point(3, 4);
            print(p.y);
            let h = try mcp_connect(CONFIG);
            print(try mcp_call(h, "echo", '{"text": "dynamic"}'));
            try mcp_disconnect(h);
            let ms = now_ms();
            let s = now_s();
            print(env_or("SAGE_MODEL", "?"));
            try write_file("out.txt", "a");
            try append_file("out.txt", "b");
            print(try read_file("out.txt"));
            sleep_ms(1);
            self.visits.set(self.visits.get() + 1);
            checkpoint();
            let listener = summon Listener {};
            try send(listener, "message");
            print(try await listener timeout(10000));
            let printer = summon Printer {};
            try send(printer, "printed");
            yield(0);
        }
    }

    run Main;
    """

MAIN_STEPS = [
    ("llm", "divine", "read_only"),
    ("tool", "Fs.read", "read_only"),
    ("tool", "Suite.echo", "read_only"),
    ("tool", "Suite.add", "idempotent"),
    ("tool", "Suite.make_point", "destructive"),
    ("mcp", "mcp_connect", "read_only"),
    ("mcp", "mcp_call", "read_only"),
    ("mcp", "mcp_disconnect", "idempotent"),
    ("io", "now_ms", "read_only"),
    ("io", "now_s", "read_only"),
    ("io", "env_or", "read_only"),
    ("io", "write_file", "idempotent"),
    ("io", "append_file", "destructive"),
    ("io", "read_file", "read_only"),
    ("io", "sleep_ms", "read_only"),
    ("state", "visits.get", "read_only"),
    ("state", "visits.set", "idempotent"),
    ("state", "checkpoint", "idempotent"),
    ("await", "await", "read_only"),
]


class Spy:
    """A test-only layer: notes each step, then passes it on."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []

    def perform(self, step, next):
        self.steps.append((step.path, step.number, step.kind, step.target, step.safety))
        return next(step)


def insert_spy(monkeypatch) -> Spy:
    """Add a Spy just above the real layer of every chain `build_effects` assembles."""
    spy = Spy()
    layers = factory.layers

    def with_spy(effects, io_builtins, *test):
        chain = layers(effects, io_builtins, *test)
        return chain[:-1] + [spy, chain[-1]]

    monkeypatch.setattr(factory, "layers", with_spy)
    return spy


def test_a_layer_inserted_in_the_chain_sees_every_kind_of_step(tmp_path, monkeypatch, capsys) -> None:
    config = json.dumps({"command": sys.executable, "args": [str(SUITE)]})
    (tmp_path / "grove.toml").write_text(textwrap.dedent(f"""\
        [project]
        entry = "main.sg"
        [tools.Suite]
        command = {json.dumps(sys.executable)}
        args = [{json.dumps(str(SUITE))}]
        """))
    (tmp_path / "main.sg").write_text(textwrap.dedent(PROGRAM).replace("__CONFIG__", config))
    (tmp_path / "data.txt").write_text("data")
    spy = insert_spy(monkeypatch)
    monkeypatch.setenv("SAGE_MODEL", "echo")
    monkeypatch.delenv("SAGE_TRACE", raising=False)
    monkeypatch.delenv("SAGE_TRACE_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "."]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:9] == ["echo: hello", "data", "x", "3", "4", "dynamic", "echo", "ab", "message"]

    by_path: dict[str, list[tuple]] = {}
    for path, number, kind, target, safety in spy.steps:
        by_path.setdefault(path, []).append((number, kind, target, safety))
    assert by_path["Main"] == [(n, *step) for n, step in enumerate(MAIN_STEPS, 1)]
    assert by_path["Main/Listener#1"] == [(1, "receive", "receive", "read_only")]
    # the message (then, usually, the receipt that finds the mailbox closed at the end of the program)
    assert by_path["Main/Printer#2"][0] == (1, "receive", "receive", "read_only")
    assert set(by_path) == {"Main", "Main/Listener#1", "Main/Printer#2"}


def test_under_sage_test_mocks_answer_before_any_other_layer(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "grove.toml").write_text('[project]\nentry = "main.sg"\n')
    (tmp_path / "main.sg").write_text("agent Main { on start { yield(0); } }\nrun Main;\n")
    (tmp_path / "main_test.sg").write_text(textwrap.dedent("""\
        test "mocked model, real clock" {
            mock divine -> "mocked";
            assert_eq(try divine("x"), "mocked");
            assert_true(now_ms() > 0);
        }
        """))
    spy = insert_spy(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["test", "."]) == 0, capsys.readouterr()
    # the model turn was step 1 of the test, answered by its mock: only the clock reached the layers below
    assert spy.steps == [("test", 2, "io", "now_ms", "read_only")]


def test_tool_call_events_carry_the_safety_class_of_each_tool(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "grove.toml").write_text(textwrap.dedent(f"""\
        [project]
        entry = "main.sg"
        [tools.Suite]
        command = {json.dumps(sys.executable)}
        args = [{json.dumps(str(SUITE))}]
        """))
    (tmp_path / "main.sg").write_text(textwrap.dedent("""\
        record Point { x: Int, y: Int }
        tool Suite {
            fn echo(text: String) -> String
            fn add(a: Int, b: Int) -> Int
            fn make_point(x: Int, y: Int) -> Point
        }
        agent Main {
            use Suite
            use Fs
            on start {
                let p = try Suite.make_point(1, 2);
                let n = try Suite.add(1, 2);
                let e = try Suite.echo("x");
                let exists = try Fs.exists("main.sg");
                let written = try Fs.write("f.txt", "x");
                yield(0);
            }
        }
        run Main;
        """))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--trace-file", "trace.jsonl", "."]) == 0, capsys.readouterr()
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    calls = [(e["tool"], e["fn"], e["safety"], e["path"]) for e in events if e["kind"] == "tool.call"]
    assert calls == [("Suite", "make_point", "destructive", "Main"), ("Suite", "add", "idempotent", "Main"),
                     ("Suite", "echo", "read_only", "Main"), ("Fs", "exists", "read_only", "Main"),
                     ("Fs", "write", "idempotent", "Main")]
