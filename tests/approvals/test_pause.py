"""A durable run with no one to answer pauses (SPEC §17.3 item 3), `sage runs approve|deny|answer` record the
answer (§17.4), and the resumed run replays it; without a journal or a terminal the call is denied by policy
and `ask` fails (item 4). The model's own calls are gated the same way, and a denial reaches the model as a
tool message. Trace events name decisions, never arguments or answers."""
from __future__ import annotations

import getpass
import json
import os
import socket
import sys
from pathlib import Path

from people_harness import PAUSED, project, run_id, runs, sage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "llm"))
from strict_server import StrictChatServer, ToolCall, tool_results  # noqa: E402  (tests/llm: the scripted model)

DURABLE = """\
[persistence]

[approvals]
calls = "all"
Shell = "destructive"
"""

PROGRAM = """\
agent Main {
    use Shell;
    on start {
        print("before");
        let r = Shell.run("echo charged >> ledger.txt") catch(e) { ShellResult { exit_code: -2, stdout: e.message, stderr: "" } };
        print("shell: {r.exit_code} {r.stdout}");
        let name = try ask("Who are you?");
        print("hello {name}");
    }
}
run Main;
"""

WHO = f"{os.environ.get('USER') or getpass.getuser()}@{socket.gethostname()}"


def ledger(root: Path) -> list[str]:
    path = root / "ledger.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_pause_approve_resume_answer(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": PROGRAM})
    first = sage(root, "run")
    assert first.returncode == 5, first.stderr
    rid = run_id(first.stderr)
    assert first.stdout == "before\n"
    assert (f"paused: Shell.run {{\"cmd\":\"echo charged >> ledger.txt\"}} needs approval (Main step 1); approve with "
            f"'sage runs approve {rid} Main:1' or deny with 'sage runs deny {rid} Main:1 --reason TEXT', then resume\n"
            in first.stderr)
    assert ledger(root) == []
    code, out, _ = runs(root, "list")
    assert code == 0 and f"{rid}  " in out and "  paused  5  main.sg" in out
    code, out, _ = runs(root, "show", rid)
    assert '  1 approval Shell.run read_only waiting {"cmd": "echo charged >> ledger.txt"}' in out.splitlines()

    # answers for steps that do not wait for them
    assert runs(root, "answer", rid, "Main:1", "Ada")[2] == \
        f"error: Main step 1 of run {rid} is not waiting for an answer\n"
    code, _, err = runs(root, "approve", rid, "Main:7")
    assert (code, err) == (1, f"error: Main step 7 of run {rid} is not waiting for approval\n")

    code, out, err = runs(root, "approve", rid, "Main:1")
    assert code == 0, err
    code, _, err = runs(root, "approve", rid, "Main:1")   # decided already
    assert (code, err) == (1, f"error: Main step 1 of run {rid} is not waiting for approval\n")
    code, out, _ = runs(root, "list")
    assert "  interrupted  -  main.sg" in out
    show = runs(root, "show", rid, "--format", "json")[1]
    decided = json.loads(show)[0]
    assert decided["status"] == "done" and decided["kind"] == "approval"
    assert decided["outcome"]["approved"] is True and decided["outcome"]["by"] == WHO
    assert runs(root, "show", rid)[1].splitlines()[2].startswith(
        f'  1 approval Shell.run read_only done {{"approved": true, "by": "{WHO}"')

    second = sage(root, "run", "--resume", rid)
    assert second.returncode == 5, second.stderr
    assert second.stdout == "shell: 0 \n"   # `before` was printed before the pause
    assert ledger(root) == ["charged"]
    assert (f"paused: question for a person (Main step 3): Who are you?; answer with "
            f"'sage runs answer {rid} Main:3 TEXT', then resume\n") in second.stderr
    assert '  3 io ask read_only waiting "Who are you?"' in runs(root, "show", rid)[1].splitlines()
    assert runs(root, "approve", rid, "Main:3")[2] == f"error: Main step 3 of run {rid} is not waiting for approval\n"
    assert runs(root, "answer", rid, "Main:3", "Ada Lovelace")[0] == 0
    assert '  3 io ask read_only done "Ada Lovelace"' in runs(root, "show", rid)[1].splitlines()

    third = sage(root, "run", "--resume", rid)
    assert third.returncode == 0, third.stderr
    assert third.stdout == "hello Ada Lovelace\n"
    assert "paused" not in third.stderr
    assert ledger(root) == ["charged"]   # the approved call ran once
    assert "  completed  0  main.sg" in runs(root, "list")[1]


def test_deny_with_and_without_a_reason(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": PROGRAM})
    rid = run_id(sage(root, "run").stderr)
    assert runs(root, "deny", rid, "Main:1", "--reason", "not from this account")[0] == 0
    resumed = sage(root, "run", "--resume", rid)
    assert resumed.returncode == 5
    assert resumed.stdout == "shell: -2 Shell.run was denied: not from this account\n"
    assert ledger(root) == []
    steps = json.loads(runs(root, "show", rid, "--format", "json")[1])
    # the denied call was never made: no step of its own, the question is the next number
    assert [(s["step"], s["kind"], s["status"]) for s in steps] == [(1, "approval", "done"), (2, "io", "waiting")]
    assert steps[0]["outcome"]["reason"] == "not from this account" and steps[0]["outcome"]["by"] == WHO

    other = project(tmp_path / "other", DURABLE, {"main.sg": PROGRAM})
    rid = run_id(sage(other, "run").stderr)
    runs(other, "deny", rid, "Main:1")
    assert sage(other, "run", "--resume", rid).stdout == "shell: -2 Shell.run was denied: denied\n"


def test_always_approves_the_function_for_the_rest_of_the_run(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": """\
        agent Main {
            use Shell;
            on start {
                for n in [1, 2, 3] {
                    try Shell.run("echo {n} >> ledger.txt");
                }
                print("three");
            }
        }
        run Main;
        """})
    rid = run_id(sage(root, "run").stderr)
    assert runs(root, "approve", rid, "Main:1", "--always")[0] == 0
    resumed = sage(root, "run", "--resume", rid)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "three\n"
    assert ledger(root) == ["1", "2", "3"]
    steps = json.loads(runs(root, "show", rid, "--format", "json")[1])
    approvals = [s["outcome"] for s in steps if s["kind"] == "approval"]
    assert len(approvals) == 3 and all(a["approved"] and a["always"] and a["by"] == WHO for a in approvals)


def test_other_agents_are_suspended_without_their_handlers(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": """\
        agent Helper receives String {
            on start {
                print("helper waits");
                let m = receive();
                print("helper got {m}");
            }
            on stop {
                print("helper on stop");
            }
        }
        agent Main {
            use Shell;
            on start {
                let h = summon Helper {};
                sleep_ms(50);
                try Shell.run("echo go >> ledger.txt");
                try send(h, "go");
                try await h;
                print("main done");
            }
            on stop {
                print("main on stop");
            }
        }
        run Main;
        """})
    first = sage(root, "run")
    assert first.returncode == 5, first.stderr
    assert first.stdout == "helper waits\n"   # no handler ran when the run paused
    rid = run_id(first.stderr)
    runs(root, "approve", rid, "Main:2")
    resumed = sage(root, "run", "--resume", rid)
    assert resumed.returncode == 0, resumed.stderr
    # the helper had journaled no step before the pause: what it printed is printed again (SPEC §14)
    assert resumed.stdout.splitlines() == ["helper waits", "helper got go", "helper on stop", "main done",
                                           "main on stop"]


def test_no_journal_and_no_terminal_deny_by_policy(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": PROGRAM})
    r = sage(root, "run", "--no-journal", "--trace-file", "trace.jsonl")
    assert r.returncode == 1
    assert r.stdout == ("before\nshell: -2 Shell.run was denied: no one could approve it (no terminal; a durable "
                        "run would pause)\n")
    assert "Agent error: no one to ask (no terminal; a durable run would pause)" in r.stderr
    events = [json.loads(line) for line in (root / "trace.jsonl").read_text().splitlines()]
    people = [e for e in events if e["kind"].startswith(("approval.", "ask."))]
    assert [{k: v for k, v in e.items() if k not in ("t",)} for e in people] == [
        {"kind": "approval.request", "agent": "Main#0", "path": "Main", "tool": "Shell", "fn": "run",
         "source": "program"},
        {"kind": "approval.decision", "agent": "Main#0", "path": "Main", "tool": "Shell", "fn": "run",
         "approved": False, "by": "policy",
         "reason": "no one could approve it (no terminal; a durable run would pause)"},
        {"kind": "ask.request", "agent": "Main#0", "path": "Main"},
    ]
    assert "echo charged" not in (root / "trace.jsonl").read_text()


def model_turn(request: dict) -> object:
    """Asks for a refund, then reports the tool message it got back."""
    results = [m["content"] for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        return ToolCall("Shell__run", {"cmd": "echo refund >> ledger.txt"})
    return f"the tool said: {results[0]}"


def test_a_model_call_paused_then_denied(tmp_path: Path) -> None:
    program = """\
        agent Main {
            use Shell;
            on start {
                print(try divine("Refund the order", tools: [Shell]));
            }
        }
        run Main;
        """
    toml = '[persistence]\n\n[approvals]\nShell = "always"\n'
    with StrictChatServer([model_turn] * 4) as srv:
        llm = {"SAGE_LLM_URL": srv.url, "SAGE_API_KEY": "sk-test"}
        root = project(tmp_path, toml, {"main.sg": program})
        first = sage(root, "run", "--trace-file", "trace.jsonl", **llm)
        assert first.returncode == 5, first.stderr
        rid = run_id(first.stderr)
        assert PAUSED.search(first.stderr).groups() == ("Main", "2")   # step 1 is the model's turn
        runs(root, "deny", rid, "Main:2", "--reason", "refunds need a manager")
        resumed = sage(root, "run", "--resume", rid, "--trace-file", "trace.jsonl", **llm)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "the tool said: error: a person denied this call: refunds need a manager\n"
        assert tool_results(srv.requests[-1])[0]["content"] == "error: a person denied this call: refunds need a manager"
        assert ledger(root) == []
        assert len(srv.requests) == 2   # the first turn was replayed from the journal
        decisions = [json.loads(line) for line in (root / "trace.jsonl").read_text().splitlines()
                     if '"approval.' in line]
        assert [(e["kind"], e.get("source"), e.get("by")) for e in decisions] == [
            ("approval.request", "model", None), ("approval.request", "model", None),
            ("approval.decision", None, WHO)]

        plain = project(tmp_path / "plain", '[approvals]\nShell = "always"\n', {"main.sg": program})
        r = sage(plain, "run", **llm)
        assert r.returncode == 0, r.stderr
        assert r.stdout == ("the tool said: error: a person denied this call: no one could approve it (no "
                            "terminal; a durable run would pause)\n")
        assert srv.errors == []


def test_a_cancelled_run_takes_no_decision(tmp_path: Path) -> None:
    root = project(tmp_path, DURABLE, {"main.sg": PROGRAM})
    rid = run_id(sage(root, "run").stderr)
    assert runs(root, "cancel", rid)[0] == 0
    for args in (["approve", rid, "Main:1"], ["deny", rid, "Main:1"], ["answer", rid, "Main:1", "yes"]):
        assert runs(root, *args) == (1, "", f"error: run {rid} already ended with exit code 130\n"), args
    steps = json.loads(runs(root, "show", rid, "--format", "json")[1])
    assert [(s["step"], s["status"]) for s in steps] == [(1, "waiting")]
    assert "  cancelled  130  main.sg" in runs(root, "list")[1]


DENIED_THEN_ASKED = """\
    agent Main {
        use Shell;
        on start {
            print(try divine("Refund the order", tools: [Shell]));
            print("next: " ++ try ask("Anything else?"));
        }
    }
    run Main;
    """


def test_after_a_denied_model_call_the_next_turn_is_the_next_step(tmp_path: Path) -> None:
    import sqlite3
    toml = '[persistence]\n\n[approvals]\nShell = "always"\n'
    with StrictChatServer([model_turn] * 4) as srv:
        llm = {"SAGE_LLM_URL": srv.url, "SAGE_API_KEY": "sk-test"}
        for old in (False, True):
            root = project(tmp_path / ("old" if old else "new"), toml, {"main.sg": DENIED_THEN_ASKED})
            rid = run_id(sage(root, "run", **llm).stderr)
            assert runs(root, "deny", rid, "Main:2")[0] == 0
            second = sage(root, "run", "--resume", rid, **llm)
            assert second.returncode == 5, second.stderr
            steps = json.loads(runs(root, "show", rid, "--format", "json")[1])
            assert [(s["step"], s["kind"]) for s in steps] == [(1, "llm"), (2, "approval"), (3, "llm"), (4, "io")]
            ask = 4
            if old:   # as a sagepy before this one numbered it: the denied call took step 3
                with sqlite3.connect(root / ".sage" / "state.db") as db:
                    outcome = json.loads(db.execute("SELECT outcome FROM steps WHERE number = 2").fetchone()[0])
                    del outcome["call_step"]
                    db.execute("UPDATE steps SET outcome = ? WHERE number = 2", (json.dumps(outcome),))
                    db.execute("UPDATE steps SET number = -number WHERE number >= 3")
                    db.execute("UPDATE steps SET number = 1 - number WHERE number < 0")
                ask = 5
            asked = len(srv.requests)
            assert runs(root, "answer", rid, f"Main:{ask}", "no")[0] == 0
            third = sage(root, "run", "--resume", rid, **llm)
            assert third.returncode == 0, third.stderr
            assert third.stdout == "next: no\n"
            assert len(srv.requests) == asked   # the model's turn after the denial was replayed, not asked again
        assert srv.errors == []
