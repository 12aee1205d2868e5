"""The annotations `sage serve` derives for each served agent (SPEC §21), transitively through the agents it
summons and the functions it calls: built-in tools by their classes (§7), MCP tools by a real server's listing
(§8.6, the suite server's annotated tools), `[tools.X.safety]` overrides, `@persistent` writes, `divine`."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from sagepy.engine.program import compile
from sagepy.serve.catalog import build_catalogue

from .helpers import SUITE, write_project

PROGRAM = textwrap.dedent("""\
    tool Suite {
        fn echo(text: String) -> String
        fn add(a: Int, b: Int) -> Int
        fn make_point(x: Int, y: Int) -> Map<String, Int>
    }

    fn read_notes() -> String fails {
        return try read_file("notes.txt");
    }

    fn log_line(text: String) -> Bool {
        append_file("log.txt", text) catch { () };
        return true;
    }

    /// Read the notes.
    #[mcp_tool = "read"]
    agent Reader {
        on start {
            yield(try read_notes());
        }
    }

    #[mcp_tool = "log"]
    agent Logger {
        on start {
            let f = log_line;
            yield(f("hello"));
        }
    }

    #[mcp_tool = "write"]
    agent Writer {
        use Fs;
        on start {
            try Fs.write("out.txt", "x");
            yield(0);
        }
    }

    agent Runner {
        use Shell;
        on start {
            let r = try Shell.run("true");
            yield(r.exit_code);
        }
    }

    #[mcp_tool = "run"]
    agent Delegate {
        on start {
            let child = summon Runner {};
            yield(try await child);
        }
    }

    #[mcp_tool = "count"]
    agent Counter {
        @persistent n: Int,
        on start {
            self.n.set(self.n.get() + 1);
            yield(self.n.get());
        }
    }

    #[mcp_tool = "fetch"]
    agent Fetcher {
        url: String,
        use Http;
        on start {
            let r = try Http.get(self.url);
            yield(r.status);
        }
    }

    #[mcp_tool = "think"]
    agent Thinker {
        on start {
            let s: String = try divine("Say hi");
            yield(s);
        }
    }

    #[mcp_tool = "echo"]
    agent Echo {
        use Suite;
        on start {
            yield(try Suite.echo("x"));
        }
    }

    #[mcp_tool = "sum"]
    agent Sum {
        use Suite;
        on start {
            yield(try Suite.add(1, 2));
        }
    }

    #[mcp_tool = "point"]
    agent Point {
        use Suite;
        on start {
            let p = try Suite.make_point(1, 2);
            yield(len(p));
        }
    }

    #[mcp_tool = "dynamic"]
    agent Dynamic {
        handle: String,
        on start {
            yield(try mcp_call(self.handle, "echo", self.handle));
        }
    }
    """)


@pytest.fixture(scope="module")
def hints(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotations")
    grove = (f'\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\n'
             f'args = [{json.dumps(SUITE)}, "--marker-dir", {json.dumps(str(root))}]\n')
    project = write_project(root / "p", PROGRAM, grove)
    program = compile(project, require_run=False)
    notes: list[str] = []
    catalogue = build_catalogue(program.root, program.session.settings, notes)
    assert notes == []
    return {d["name"]: d["annotations"] for d in catalogue.definitions}


def flags(annotations: dict) -> tuple:
    return (annotations["readOnlyHint"], annotations["destructiveHint"], annotations["idempotentHint"],
            annotations["openWorldHint"])


@pytest.mark.parametrize("tool, expected", [
    ("read", (True, False, True, False)),      # read_file through a function
    ("log", (False, True, False, False)),      # append_file through a function passed as a value
    ("write", (False, False, True, False)),    # Fs.write: idempotent
    ("run", (False, True, False, True)),       # Shell.run in a summoned agent
    ("count", (False, False, True, False)),    # writes a @persistent field
    ("fetch", (True, False, True, True)),      # Http.get: read-only, open world
    ("think", (True, False, True, True)),      # divine: open world
    ("echo", (True, False, True, True)),       # readOnlyHint in the server's listing
    ("sum", (False, False, True, True)),       # idempotentHint in the listing
    ("point", (False, True, False, True)),     # destructiveHint in the listing
    ("dynamic", (False, True, False, True)),   # mcp_call: a tool known only at run time
])
def test_derived_hints(hints, tool, expected):
    assert flags(hints[tool]) == expected
    assert hints[tool]["title"] == {"read": "Reader", "run": "Delegate"}.get(tool, hints[tool]["title"])


def test_a_safety_override_wins_over_the_listing(tmp_path):
    grove = (f'\n[tools.Suite]\ncommand = {json.dumps(sys.executable)}\n'
             f'args = [{json.dumps(SUITE)}, "--marker-dir", {json.dumps(str(tmp_path))}]\n'
             '\n[tools.Suite.safety]\nmake_point = "read_only"\n')
    program = compile(write_project(tmp_path / "p", PROGRAM, grove), require_run=False)
    catalogue = build_catalogue(program.root, program.session.settings, [])
    point = next(d for d in catalogue.definitions if d["name"] == "point")
    assert flags(point["annotations"]) == (True, False, True, True)


def test_an_unreachable_server_counts_as_destructive(tmp_path):
    grove = '\n[tools.Suite]\ncommand = "/nonexistent/server"\n'
    program = compile(write_project(tmp_path / "p", PROGRAM, grove), require_run=False)
    notes: list[str] = []
    catalogue = build_catalogue(program.root, program.session.settings, notes)
    echo = next(d for d in catalogue.definitions if d["name"] == "echo")
    assert flags(echo["annotations"]) == (False, True, False, True)
    assert len(notes) == 1 and notes[0].startswith("warning: [tools.Suite] could not be listed (MCP ")
