"""One conversion per path (issue 31): how many times sagepy walks a value between Sage and JSON during one
typed MCP call, one typed `divine`, one `divine` whose model calls a tool, and each of their mocks.

The walks are counted at their one implementation, sagepy.core.convert (`_from`: `from_json`, and
`fitted_json` when its `fit` flag is set; `_to`: `to_json`), outermost walks only, while the boundary
performs the call being measured (the other conversions of a run, its arguments or its result, are not
counted). The calls go to the real suite MCP server over stdio and to the strict chat-completions server;
the MCP SDK's own parsing of the wire is not counted.
"""
from __future__ import annotations

import json
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path

import pytest

from sagepy.cli.main import main
from sagepy.core import convert
from sagepy.effects.boundary import Effects

REPO = Path(__file__).resolve().parent.parent.parent
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"
sys.path.insert(0, str(REPO / "tests" / "llm"))
from strict_server import StrictChatServer, ToolCall  # noqa: E402  (tests/llm: the scripted model)

DECLARATIONS = """\
    record Point { x: Int, y: Int }
    tool Suite {
        fn make_point(x: Int, y: Int) -> Point
    }
    """


class Walks:
    """The conversions made inside each measured call of the boundary, in call order: (method, Counter)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, Counter]] = []
        self.local = threading.local()
        walk_from, walk_to = convert._from, convert._to

        def counted(kind_of, walk):
            def wrapper(*args):
                local = self.local
                depth = getattr(local, "depth", 0)
                if depth == 0 and getattr(local, "counter", None) is not None:
                    local.counter[kind_of(args)] += 1
                local.depth = depth + 1
                try:
                    return walk(*args)
                finally:
                    local.depth = depth
            return wrapper

        monkeypatch.setattr(convert, "_from", counted(
            lambda args: "fitted_json" if len(args) > 3 and args[3] else "from_json", walk_from))
        monkeypatch.setattr(convert, "_to", counted(lambda args: "to_json", walk_to))
        for name in ("tool_call", "divine", "divine_with_tools"):
            monkeypatch.setattr(Effects, name, self.measured(name, getattr(Effects, name)))

    def measured(self, name: str, method):
        def wrapper(effects, *args, **kwargs):
            counter: Counter = Counter()
            self.calls.append((name, counter))
            self.local.counter = counter
            try:
                return method(effects, *args, **kwargs)
            finally:
                self.local.counter = None
        return wrapper

    def counts(self) -> list[tuple[str, dict]]:
        return [(name, dict(counter)) for name, counter in self.calls]


def project(root: Path, main_sg: str, test_sg: str | None = None) -> None:
    (root / "grove.toml").write_text(textwrap.dedent(f"""\
        [project]
        entry = "main.sg"
        [tools.Suite]
        command = {json.dumps(sys.executable)}
        args = [{json.dumps(str(SUITE))}]
        """), encoding="utf-8")
    (root / "main.sg").write_text(textwrap.dedent(DECLARATIONS) + textwrap.dedent(main_sg), encoding="utf-8")
    if test_sg is not None:
        (root / "main_test.sg").write_text(textwrap.dedent(test_sg), encoding="utf-8")


def test_each_real_call_converts_once(tmp_path, monkeypatch, capsys) -> None:
    project(tmp_path, """\
        agent Main {
            use Suite
            on start {
                print(try Suite.make_point(3, 4));
                print(try divine("Where?" -> Point));
                print(try divine("Make one", tools: [Suite.make_point]));
                yield(0);
            }
        }
        run Main;
        """)
    walks = Walks(monkeypatch)
    script = ['{"y": 2, "x": 1}', ToolCall("Suite__make_point", {"x": 5, "y": 6}), "made"]
    with StrictChatServer(script) as srv:
        for name in ("SAGE_TRACE", "SAGE_TRACE_FILE", "SAGE_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("SAGE_LLM_URL", srv.url)
        monkeypatch.setenv("SAGE_API_KEY", "sk-test")
        monkeypatch.chdir(tmp_path)
        assert main(["run", "."]) == 0, capsys.readouterr()
        assert srv.errors == []
        assert json.loads(srv.requests[2]["messages"][-1]["content"]) == {"x": 5, "y": 6}
    assert capsys.readouterr().out.splitlines() == ["Point { x: 3, y: 4 }", "Point { x: 1, y: 2 }", "made"]
    assert walks.counts() == [
        # the arguments once each (Sage -> JSON), the result once (JSON -> Sage, its check included): the
        # server sends structuredContent and a text item, and the one conversion that chooses is kept
        ("tool_call", {"to_json": 2, "from_json": 1}),
        # the answer parsed, then checked and converted once (no journal, cassette or export to write for)
        ("divine", {"from_json": 1}),
        # the model's call stays JSON: each argument checked and fitted once, the result once
        ("divine_with_tools", {"fitted_json": 3}),
    ]


def test_each_mock_converts_once(tmp_path, monkeypatch, capsys) -> None:
    project(tmp_path, "agent Main { on start { yield(0); } }\nrun Main;\n", """\
        test "mocked" {
            mock tool Suite.make_point -> Point { x: 1, y: 2 };
            assert_eq(try Suite.make_point(3, 4), Point { x: 1, y: 2 });
            mock divine -> Point { x: 5, y: 6 };
            assert_eq(try divine("Where?" -> Point), Point { x: 5, y: 6 });
            mock divine -> call Suite.make_point(7, 8);
            mock tool Suite.make_point -> Point { x: 9, y: 10 };
            mock divine -> Point { x: 11, y: 12 };
            assert_eq(try divine("Make one" -> Point, tools: [Suite.make_point]), Point { x: 11, y: 12 });
        }
        """)
    walks = Walks(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["test", "."]) == 0, capsys.readouterr()
    assert walks.counts() == [
        # the call's two arguments; the mock to its JSON form and from it to Point (SPEC §9.3), once
        ("tool_call", {"to_json": 3, "from_json": 1}),
        ("divine", {"to_json": 1, "from_json": 1}),
        # the scripted call's arguments fitted (the `mock divine -> call` statement wrote their JSON); the
        # tool's mock to JSON and fitted for the model; the final answer's mock to JSON and to Point
        ("divine_with_tools", {"fitted_json": 3, "to_json": 2, "from_json": 1}),
    ]
    # every call was mocked: the server was never started
    assert not (tmp_path / ".sage" / "logs" / "Suite.log").exists()


def test_a_journaled_answer_is_written_once_for_the_journal(tmp_path, monkeypatch, capsys) -> None:
    """A durable run keeps outcomes: the typed answer's JSON is written from its value for the journal, one
    to_json more (a resumed run converts the record once, as any replayed outcome)."""
    project(tmp_path, """\
        agent Main {
            on start {
                print(try divine("Where?" -> Point));
                yield(0);
            }
        }
        run Main;
        """)
    with (tmp_path / "grove.toml").open("a", encoding="utf-8") as toml:
        toml.write('[persistence]\npath = "state.db"\n')
    walks = Walks(monkeypatch)
    with StrictChatServer(['{"y": 2, "x": 1}']) as srv:
        for name in ("SAGE_TRACE", "SAGE_TRACE_FILE", "SAGE_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("SAGE_LLM_URL", srv.url)
        monkeypatch.setenv("SAGE_API_KEY", "sk-test")
        monkeypatch.chdir(tmp_path)
        assert main(["run", "."]) == 0, capsys.readouterr()
    assert capsys.readouterr().out == "Point { x: 1, y: 2 }\n"
    assert (tmp_path / "state.db").exists()
    assert walks.counts() == [("divine", {"from_json": 1, "to_json": 1})]
