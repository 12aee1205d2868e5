"""Approvals and `ask` under `sage test` (SPEC §9.3, §17.3 item 1): the `mock approve` and `mock ask` queues
answer, in call order; an empty queue fails the test with SPEC's message; the policy decides which calls ask
(`calls`, `"destructive"` by the `[tools.X.safety]` override under test, `"always"`, `*` patterns)."""
from __future__ import annotations

import re
from pathlib import Path

from people_harness import project, sage

TOML = """\
[approvals]
Shell = "destructive"
Fs = ["write", "del*"]
Ledger = "destructive"
calls = "all"

[tools.Ledger]
command = "no-such-ledger-server"

[tools.Ledger.safety]
balance = "read_only"
"""

TESTS = r"""
tool Ledger {
    fn charge(amount: Int) -> String
    fn balance() -> Int
}

test "approved" {
    mock approve -> true;
    mock tool Shell.run -> ShellResult { exit_code: 0, stdout: "ok", stderr: "" };
    assert_eq((try Shell.run("true")).stdout, "ok");
}

test "false is a denial with reason denied" {
    mock approve -> false;
    let r = Shell.run("rm -rf /") catch(e) { ShellResult { exit_code: 9, stdout: "{e.kind}|{e.message}", stderr: "" } };
    assert_eq(r.stdout, "Tool|Shell.run was denied: denied");
}

test "deny gives its reason and is catchable" {
    mock approve -> deny("not on a Friday");
    let r = Fs.write("x.txt", "y") catch(e) { print(e.message); };
    assert(!(try Fs.exists("x.txt")));
}

test "the queue answers in call order" {
    mock approve -> true;
    mock approve -> deny("second");
    try Fs.write("a.txt", "1");
    let second = Fs.delete("a.txt") catch(e) { print(e.message); };
    assert(try Fs.exists("a.txt"));
}

test "functions outside the patterns do not ask" {
    let found = Fs.exists("b.txt") catch(e) { print("unexpected"); false };
    assert(!found);
}

test "read_only by the safety override does not ask, even unmocked" {
    mock tool Ledger.balance -> 7;
    assert_eq(try Ledger.balance(), 7);
}

test "an MCP tool without an override is destructive under test" {
    mock approve -> true;
    mock tool Ledger.charge -> "C-1";
    assert_eq(try Ledger.charge(5), "C-1");
}

test "empty approve queue" {
    mock tool Shell.run -> ShellResult { exit_code: 0, stdout: "", stderr: "" };
    try Shell.run("true");
}

test "ask answered" {
    mock ask -> "Ada";
    mock ask -> fail("no answer today");
    assert_eq(try ask("Your name?"), "Ada");
    let m = ask("Again?") catch(e) { "{e.kind}: {e.message}" };
    assert_eq(m, "Agent: no answer today");
}

test "empty ask queue" {
    let m = try ask("What now?");
}

test "a model's call is denied and the loop goes on" {
    mock divine -> call Shell.run("rm -rf /"), call Fs.read("notes.txt");
    mock approve -> deny("too dangerous");
    mock tool Fs.read -> "notes";
    mock divine -> "I could not run it.";
    assert_eq(try divine("Clean up", tools: [Shell, Fs]), "I could not run it.");
}

test "approvals are asked in the model's call order" {
    mock divine -> call Fs.write("m1.txt", "1"), call Fs.write("m2.txt", "2");
    mock approve -> deny("first");
    mock approve -> true;
    mock divine -> "done";
    assert_eq(try divine("Write", tools: [Fs]), "done");
    assert(!(try Fs.exists("m1.txt")));
    assert(try Fs.exists("m2.txt"));
}
"""


def test_mock_queues_and_the_policy(tmp_path: Path) -> None:
    root = project(tmp_path, TOML, {"main_test.sg": TESTS})
    r = sage(root, "test", "-v")
    out = r.stdout

    results = {name: verdict for verdict, name in re.findall(r"^(PASS|FAIL|ERROR) main_test\.sg::(.+?)(?: \(\d+ ms\))?$",
                                                              out, re.M)}
    expected_failures = {"empty approve queue", "empty ask queue"}
    assert {n for n, v in results.items() if v != "PASS"} == expected_failures, out + r.stderr
    assert len(results) == 12
    assert "approval requested for Shell.run but no mock approve left" in out
    assert "question asked but no mock ask left: What now?" in out
    assert "Fs.write was denied: not on a Friday" in out
    assert "Fs.delete was denied: second" in out
    assert "unexpected" not in out
    assert not (root / "x.txt").exists() and not (root / "m1.txt").exists()


def test_program_calls_are_not_gated_by_default(tmp_path: Path) -> None:
    root = project(tmp_path, '[approvals]\nFs = "always"\n', {"main_test.sg": """\
        test "program" {
            try Fs.write("p.txt", "1");
            assert(try Fs.exists("p.txt"));
        }
        test "model" {
            mock divine -> call Fs.exists("p.txt");
            mock divine -> "asked";
            assert_eq(try divine("look", tools: [Fs]), "asked");
        }
        """})
    r = sage(root, "test", "-v")
    assert "PASS main_test.sg::program" in r.stdout, r.stdout
    assert "FAIL main_test.sg::model" in r.stdout
    assert "approval requested for Fs.exists but no mock approve left" in r.stdout


def test_mock_statement_checks(tmp_path: Path) -> None:
    root = project(tmp_path, "", {"main_test.sg": """\
        test "bad" {
            mock approve -> "yes";
            mock ask -> 5;
            mock approve -> deny(3);
        }
        """, "main.sg": """\
        agent Main {
            on start {
                mock approve -> true;
            }
        }
        run Main;
        """})
    r = sage(root, "check")
    assert r.returncode == 1
    err = r.stderr
    assert "main_test.sg:2:21" in err and "type mismatch: expected Bool, found String" in err
    assert "main_test.sg:3:17" in err and "type mismatch: expected String, found Int" in err
    assert "main_test.sg:4:26" in err
    assert "error[E050]" in err   # mock outside a test file


def test_dynamic_connections_by_name(tmp_path: Path) -> None:
    """A dynamic connection is known by its configured `name` (a mocked handle `mcp:<n>` by `mcp<n>`), its
    functions by their remote names; outside tests the class comes from the server's listing."""
    import json
    import sys
    suite = Path(__file__).resolve().parent.parent / "mcp" / "servers" / "suite.py"
    config = json.dumps({"transport": "stdio", "command": sys.executable, "args": [str(suite)], "name": "suite"})
    root = project(tmp_path, '[approvals]\ncalls = "all"\nsuite = "destructive"\nmcp1 = ["del*"]\n', {
        "main_test.sg": """\
        test "mocked handle" {
            mock tool mcp.connect -> "mcp:1";
            mock approve -> deny("no deletes");
            mock tool mcp.call -> "ok";
            let h = try mcp_connect('{}');
            let r = mcp_call(h, "delete_all", '{}') catch(e) { e.message };
            assert_eq(r, "mcp1.delete_all was denied: no deletes");
            assert_eq(try mcp_call(h, "list_all", '{}'), "ok");
        }
        """,
        "main.sg": f"""\
        agent Main {{
            on start {{
                let h = try mcp_connect('{config}');
                print(try mcp_call(h, "echo", '{{"text": "hi"}}'));
                let r = mcp_call(h, "make_point", '{{"x": 1, "y": 2}}') catch(e) {{ "{{e.kind}}: {{e.message}}" }};
                print(r);
                try mcp_disconnect(h);
            }}
        }}
        run Main;
        """})
    r = sage(root, "test")
    assert "1 passed, 0 failed" in r.stdout, r.stdout + r.stderr
    r = sage(root, "run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["hi", "Tool: suite.make_point was denied: no one could approve it (no terminal; "
                                     "a durable run would pause)"]
