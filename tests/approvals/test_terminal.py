"""A person at the terminal answers (SPEC §17.3 item 2): `sage run` with stdin and stderr on a pty (stdout a
pipe), driven like a person typing: `y`, `n` with a reason, `a` (approved for the rest of the run, not asked
again), a question of `ask`, Ctrl-C at the prompt (the run stops, a durable run stays resumable and asks
again), and `prompt = "never"`, which asks no one (the durable run pauses)."""
from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from people_harness import env, project, run_id, runs

PROMPT = "? [y]es / [n]o / [a]lways in this run: "

PROGRAM = """\
agent Main {
    use Shell;
    on start {
        for n in [1, 2, 3, 4] {
            let r = Shell.run("echo {n} >> ledger.txt") catch(e) { ShellResult { exit_code: -2, stdout: e.message, stderr: "" } };
            print("{n}: {r.exit_code} {r.stdout}");
        }
        let name = try ask("Your name?");
        print("name: {name}");
    }
}
run Main;
"""
TOML = '[approvals]\ncalls = "all"\nShell = ["r*"]\n'


class Terminal:
    """`sage ARGS` with stdin and stderr on a pty: `expect` text the terminal shows, `type` a line."""

    def __init__(self, root: Path, *args: str) -> None:
        self.leader, follower = pty.openpty()
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "sagepy", *args], cwd=root, env=env(),
                                         stdin=follower, stdout=subprocess.PIPE, stderr=follower)
        finally:
            os.close(follower)
        self.seen = ""
        self._read = 0

    def expect(self, text: str, timeout: float = 60) -> str:
        """Wait until the terminal shows `text` after what was expected before; returns what came between."""
        deadline = time.monotonic() + timeout
        while text not in self.seen[self._read:]:
            assert time.monotonic() < deadline, f"no {text!r} on the terminal; it shows:\n{self.seen}"
            ready, _, _ = select.select([self.leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.leader, 65536)
                except OSError:
                    chunk = b""
                assert chunk, f"the terminal closed before {text!r}; it shows:\n{self.seen}"
                self.seen += chunk.decode("utf-8", "replace")
        start = self._read
        end = self.seen.index(text, start) + len(text)
        self._read = end
        return self.seen[start:end]

    def type(self, line: str) -> None:
        os.write(self.leader, line.encode() + b"\n")

    def finish(self) -> tuple[int, str]:
        """(exit code, stdout)."""
        try:
            out, _ = self.proc.communicate(timeout=60)
            return self.proc.returncode, out.decode()
        finally:
            os.close(self.leader)

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_yes_no_with_a_reason_always_and_ask(tmp_path: Path) -> None:
    root = project(tmp_path, TOML, {"main.sg": PROGRAM})
    with Terminal(root, "run", "--trace-file", "trace.jsonl") as term:
        assert term.expect(PROMPT).endswith('approve Shell.run {"cmd":"echo 1 >> ledger.txt"} (asked by the program)'
                                            + PROMPT)
        term.type("maybe")   # not an answer: asked again
        term.expect(PROMPT)
        term.type("y")
        term.expect('{"cmd":"echo 2 >> ledger.txt"}')
        term.expect(PROMPT)
        term.type("n")
        term.expect("reason (optional): ")
        term.type("two is enough")
        term.expect('{"cmd":"echo 3 >> ledger.txt"}')
        term.expect(PROMPT)
        term.type("a")
        between = term.expect("Your name? ")
        assert "echo 4" not in between   # approved for the rest of the run
        term.type("Ada")
        code, out = term.finish()
    assert code == 0, term.seen
    assert out.splitlines() == ["1: 0 ", "2: -2 Shell.run was denied: two is enough", "3: 0 ", "4: 0 ", "name: Ada"]
    assert (root / "ledger.txt").read_text().split() == ["1", "3", "4"]
    events = [json.loads(line) for line in (root / "trace.jsonl").read_text().splitlines()]
    decisions = [(e["approved"], e.get("reason")) for e in events if e["kind"] == "approval.decision"]
    assert decisions == [(True, None), (False, "two is enough"), (True, None), (True, None)]
    answers = [e for e in events if e["kind"] == "ask.answer"]
    assert len(answers) == 1 and answers[0]["by"].count("@") == 1
    assert "Ada" not in (root / "trace.jsonl").read_text()


def test_ctrl_c_at_the_prompt_stops_a_durable_run_which_asks_again(tmp_path: Path) -> None:
    root = project(tmp_path, TOML + "\n[persistence]\n", {"main.sg": PROGRAM})
    with Terminal(root, "run") as term:
        term.expect(PROMPT)
        term.type("y")
        term.expect('{"cmd":"echo 2 >> ledger.txt"}')
        term.expect(PROMPT)
        term.proc.send_signal(signal.SIGINT)
        code, out = term.finish()
    assert code == 130, term.seen
    assert out == "1: 0 \n"
    rid = run_id(term.seen.replace("\r", ""))
    listing = runs(root, "list")[1]
    assert "  interrupted  -  main.sg" in listing
    steps = json.loads(runs(root, "show", rid, "--format", "json")[1])
    assert [(s["step"], s["kind"], s["status"]) for s in steps] == [(1, "approval", "done"), (2, "tool", "done")]
    assert steps[0]["outcome"]["by"].count("@") == 1

    with Terminal(root, "run", "--resume", rid) as term:
        shown = term.expect(PROMPT)
        assert '{"cmd":"echo 2 >> ledger.txt"}' in shown and "echo 1" not in shown   # a decision is not asked again
        term.type("a")
        term.expect("Your name? ")
        term.type("Grace")
        code, out = term.finish()
    assert code == 0, term.seen
    # `1: 0` followed the last journaled step before Ctrl-C: printed again (SPEC §14)
    assert out.splitlines() == ["1: 0 ", "2: 0 ", "3: 0 ", "4: 0 ", "name: Grace"]
    assert (root / "ledger.txt").read_text().split() == ["1", "2", "3", "4"]
    always = [s["outcome"].get("always") for s in json.loads(runs(root, "show", rid, "--format", "json")[1])
              if s["kind"] == "approval"]
    assert always == [None, True, True, True]


def test_prompt_never_asks_no_one(tmp_path: Path) -> None:
    root = project(tmp_path, TOML.replace('calls = "all"', 'calls = "all"\nprompt = "never"') + "\n[persistence]\n",
                   {"main.sg": PROGRAM})
    with Terminal(root, "run") as term:
        term.expect("needs approval (Main step 1)")
        code, out = term.finish()
    assert code == 5 and out == ""
    assert PROMPT not in term.seen
