"""Crash and resume (SPEC §14): a program runs as a real `sage run` that the store kills right after its k-th
committed journal write (SAGE_CRASH_AFTER_WRITE), then `sage run --resume last` carries it to its end. For every
k the resumed run must give what an uncrashed run gives, with replayed values, no side effect done twice, the
output of the crashed attempt not printed again, and a halt (exit 3) where a destructive step's outcome is
unknown. A halt is resolved here by editing the journal as `sage runs resolve … --not-run` does (the crash
comes right after the `started` commit, so the call did not happen)."""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
CRASHED = 77   # sagepy.store.base.CRASH_EXIT_CODE
HALT = re.compile(r"^halted: the outcome of (\S+) \((\S+) step (\d+)\) is unknown; record it with 'sage runs resolve "
                  r"(\S+) (\S+):(\d+) --ok JSON \| --failed MESSAGE \| --not-run' and resume$")


def project(root: Path, source: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text('[project]\nname = "durable"\n\n[persistence]\n', encoding="utf-8")
    (root / "src" / "main.sg").write_text(textwrap.dedent(source), encoding="utf-8")
    return root


def sage(*args: str, cwd: Path, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    for name in ("SAGE_CRASH_AFTER_WRITE", "SAGE_CRASH_BEFORE_WRITE", "SAGE_COUNT_WRITES"):
        full_env.pop(name, None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def journal_writes(root: Path, env: dict | None = None) -> tuple[int, subprocess.CompletedProcess]:
    """An uncrashed run in a copy of the project: (its committed journal writes, the result)."""
    copy = root.parent / (root.name + "-count")
    shutil.copytree(root, copy)
    counts = copy / "writes.txt"
    r = sage("run", cwd=copy, env={**(env or {}), "SAGE_COUNT_WRITES": str(counts)})
    return len(counts.read_text().splitlines()) if counts.exists() else 0, r


def not_run(root: Path, run_id: str, path: str, number: int) -> None:
    """What `sage runs resolve RUN_ID PATH:N --not-run` does."""
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        db.execute("DELETE FROM steps WHERE run_id = ? AND path = ? AND number = ?", (run_id, path, number))


def crash_and_resume(template: Path, k: int, env: dict | None = None, resume_env: dict | None = None,
                     resolve: Callable[[Path, str, str, int], None] = not_run
                     ) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """A fresh copy of the project crashed at write k, then resumed (halts resolved by `resolve`, as not run
    unless told otherwise) to its end."""
    root = template.parent / f"{template.name}-k{k}"
    shutil.copytree(template, root)
    attempts = [sage("run", cwd=root, env={**(env or {}), "SAGE_CRASH_AFTER_WRITE": str(k)})]
    assert attempts[0].returncode == CRASHED, attempts[0].stderr
    for _ in range(10):
        r = sage("run", "--resume", "last", cwd=root, env=resume_env)
        attempts.append(r)
        if r.returncode != 3:
            return root, attempts
        halt = HALT.match(r.stderr.splitlines()[-1])
        assert halt is not None, r.stderr
        resolve(root, halt.group(4), halt.group(5), int(halt.group(6)))
    raise AssertionError("the run kept halting")


def stdout_of(attempts: list[subprocess.CompletedProcess]) -> str:
    return "".join(a.stdout for a in attempts)


IO_AND_TOOLS = """
agent Main {
    use Fs;
    on start {
        let t = now_ms();
        try Fs.write("stamp.txt", "{t}");
        try append_file("ledger.txt", "{t}\\n");
        let who = env_or("WHO", "nobody");
        sleep_ms(1);
        let s = try Fs.read("stamp.txt");
        print("{t} {s} {who}");
    }
}
run Main;
"""


def test_io_and_tool_steps_replay_their_values_and_append_once(tmp_path: Path) -> None:
    template = project(tmp_path / "io", IO_AND_TOOLS)
    n, clean = journal_writes(template, {"WHO": "first"})
    assert (n, clean.returncode) == (7, 0)   # now_ms, Fs.write, append (started, done), env_or, sleep, Fs.read
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k, {"WHO": "first"}, {"WHO": "second"})
        assert attempts[-1].returncode == 0, (k, attempts[-1].stderr)
        assert attempts[0].stdout == ""
        t, s, who = stdout_of(attempts).split()
        assert s == t == (root / "stamp.txt").read_text()
        # the append ran once; crashed right after its `started` commit it did not run, and resumed as not run
        assert (root / "ledger.txt").read_text() == f"{t}\n"
        assert who == ("first" if k >= 5 else "second"), k
        assert len(attempts) == (3 if k == 3 else 2), k


def test_a_destructive_step_with_an_unknown_outcome_halts_with_exit_3(tmp_path: Path) -> None:
    root = project(tmp_path / "halt", IO_AND_TOOLS)
    first = sage("run", cwd=root, env={"SAGE_CRASH_AFTER_WRITE": "3"})
    assert first.returncode == CRASHED
    run_id = re.search(r"run id: (\S+)", first.stderr).group(1)
    for _ in range(2):   # halting again until resolved
        r = sage("run", "--resume", "last", cwd=root)
        assert (r.returncode, r.stdout) == (3, "")
        assert r.stderr == (f"resuming run {run_id}\n"
                            f"halted: the outcome of append_file (Main step 3) is unknown; record it with "
                            f"'sage runs resolve {run_id} Main:3 --ok JSON | --failed MESSAGE | --not-run' and "
                            f"resume\n")
        with sqlite3.connect(root / ".sage" / "state.db") as db:
            assert db.execute("SELECT status, exit_code, lease_token FROM runs").fetchall() == [("halted", 3, None)]
    assert not (root / "ledger.txt").exists()
    with sqlite3.connect(root / ".sage" / "state.db") as db:   # `--ok null`: as if it had appended
        db.execute("UPDATE steps SET status = 'done', outcome = 'null' WHERE path = 'Main' AND number = 3")
    r = sage("run", "--resume", run_id, cwd=root)
    assert r.returncode == 0, r.stderr
    assert not (root / "ledger.txt").exists()


def test_a_changed_program_diverges_and_resumes_once_fixed_back(tmp_path: Path) -> None:
    root = project(tmp_path / "diverge", IO_AND_TOOLS)
    assert sage("run", cwd=root, env={"SAGE_CRASH_AFTER_WRITE": "5"}).returncode == CRASHED
    source = root / "src" / "main.sg"
    original = source.read_text()
    source.write_text(original.replace('Fs.write("stamp.txt"', 'Fs.write("other.txt"'))
    r = sage("run", "--resume", "last", cwd=root)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.splitlines()[-1] == ("error: journal divergence at Main step 2: recorded tool Fs.write, "
                                         "now tool Fs.write with other arguments")
    source.write_text(original.replace("let t = now_ms();", "let t = now_s();"))
    r = sage("run", "--resume", "last", cwd=root)
    assert (r.returncode, r.stderr.splitlines()[-1]) == (
        1, "error: journal divergence at Main step 1: recorded io now_ms, now io now_s")
    source.write_text(original)
    r = sage("run", "--resume", "last", cwd=root)
    assert r.returncode == 0, r.stderr
    assert not (root / "other.txt").exists()
    assert (root / "ledger.txt").read_text().count("\n") == 1


def test_output_is_suppressed_while_replaying_and_live_after_the_last_record(tmp_path: Path) -> None:
    template = project(tmp_path / "out", """
        agent Main {
            on start {
                print("one");
                let a = now_ms();
                print("two");
                let b = now_ms();
                print("three");
            }
        }
        run Main;
    """)
    for k in (1, 2):
        _, attempts = crash_and_resume(template, k)
        assert attempts[0].stdout == ("one\n" if k == 1 else "one\ntwo\n")
        assert stdout_of(attempts) == "one\ntwo\nthree\n"


def test_persistent_writes_are_neither_lost_nor_applied_twice(tmp_path: Path) -> None:
    template = project(tmp_path / "state", """
        agent Main {
            @persistent count: Int
            on start {
                for i in [1, 2, 3] {
                    self.count.set(self.count.get() + 1);
                }
                print("{self.count.get()}");
            }
        }
        run Main;
    """)
    n, clean = journal_writes(template)
    assert (n, clean.stdout) == (7, "3\n")
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k)
        assert (attempts[-1].returncode, stdout_of(attempts)) == (0, "3\n"), k
        with sqlite3.connect(root / ".sage" / "state.db") as db:
            assert db.execute("SELECT value FROM sage_state WHERE field = 'count'").fetchall() == [("3",)]


def test_an_await_that_timed_out_times_out_again(tmp_path: Path) -> None:
    template = project(tmp_path / "await", """
        agent Worker {
            on start {
                sleep_ms(500);
                yield(5);
            }
        }
        agent Main {
            on start {
                let w = summon Worker {};
                let first = await w timeout(50) catch { -1 };
                let t = now_ms();
                let second = try await w;
                print("{first} {second}");
            }
        }
        run Main;
    """)
    # writes: Main's await (timed out), Main's now_ms, then the worker's sleep: crashed after that one, the resumed
    # worker replays its sleep and yields at once, but the await is the recorded time-out
    root, attempts = crash_and_resume(template, 3)
    assert (attempts[-1].returncode, stdout_of(attempts)) == (0, "-1 5\n"), attempts[-1].stderr


MESSAGES = """
agent Collector receives String {
    count: Int
    on start {
        let got = "";
        let i = 0;
        while i < self.count {
            let m = receive();
            try append_file("order.txt", "{m}\\n");
            got = got ++ m ++ "\\n";
            i = i + 1;
        }
        yield(got);
    }
}
agent Sender {
    to: Agent<Collector>
    name: String
    pause: Int
    on start {
        let i = 0;
        while i < 4 {
            sleep_ms(self.pause);
            try send(self.to, "{self.name}{i}");
            i = i + 1;
        }
    }
}
agent Main {
    on start {
        let c = summon Collector { count: 8 };
        let a = summon Sender { to: c, name: "a", pause: 7 };
        let b = summon Sender { to: c, name: "b", pause: 11 };
        let got = try await c;
        print(got);
    }
}
run Main;
"""


def resolve_by_order_file(root: Path, run_id: str, path: str, number: int) -> None:
    """The crash may come from another agent's thread while the collector's append is under way: the append
    happened when order.txt holds more lines than the journal has finished appends."""
    lines = len((root / "order.txt").read_text().splitlines()) if (root / "order.txt").exists() else 0
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        done = db.execute("SELECT count(*) FROM steps WHERE run_id = ? AND target = 'append_file' AND status = 'done'",
                          (run_id,)).fetchone()[0]
        if lines > done:
            db.execute("UPDATE steps SET status = 'done', outcome = 'null' "
                       "WHERE run_id = ? AND path = ? AND number = ?", (run_id, path, number))
        else:
            db.execute("DELETE FROM steps WHERE run_id = ? AND path = ? AND number = ?", (run_id, path, number))


def test_messages_are_taken_in_the_recorded_order(tmp_path: Path) -> None:
    template = project(tmp_path / "messages", MESSAGES)
    n, clean = journal_writes(template)
    assert (n, clean.returncode) == (32, 0)   # 8 sleeps; 8 receives and 8 appends (started, done)
    for k in (5, 12, 19, 25, 30):
        root, attempts = crash_and_resume(template, k, resolve=resolve_by_order_file)
        assert attempts[-1].returncode == 0, (k, attempts[-1].stderr)
        order = (root / "order.txt").read_text()
        assert sorted(order.split()) == ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"], k
        assert stdout_of(attempts) == order + "\n", k


def test_a_restarting_supervisor_child_keeps_its_paths_and_counts(tmp_path: Path) -> None:
    template = project(tmp_path / "sup", """
        agent Flaky {
            @persistent tries: Int
            on start {
                let n = self.tries.get() + 1;
                self.tries.set(n);
                try append_file("starts.txt", "{n}\\n");
                if n < 3 {
                    let missing = try read_file("missing.txt");
                }
                print("started {n} times");
            }
        }
        supervisor Sup {
            strategy: OneForOne
            children {
                Flaky { restart: Transient }
            }
        }
        run Sup;
    """)
    n, clean = journal_writes(template)
    assert (n, clean.returncode, clean.stdout) == (14, 0, "started 3 times\n")
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k)
        assert (attempts[-1].returncode, stdout_of(attempts)) == (0, "started 3 times\n"), (k, attempts[-1].stderr)
        assert (root / "starts.txt").read_text() == "1\n2\n3\n", k
        with sqlite3.connect(root / ".sage" / "state.db") as db:
            paths = {row[0] for row in db.execute("SELECT path FROM steps")}
            assert paths == {"Sup/Flaky#1", "Sup/Flaky#2", "Sup/Flaky#3"}
            assert db.execute("SELECT value FROM sage_state WHERE field = 'tries'").fetchall() == [("3",)]


LEDGER_SERVER = '''
import sys
from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("ledger")
LEDGER = sys.argv[1]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def total() -> str:
    with open(LEDGER, "a+", encoding="utf-8") as f:
        f.seek(0)
        return str(sum(int(line) for line in f.read().split()))


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def charge(amount: int) -> str:
    with open(LEDGER, "a", encoding="utf-8") as f:
        f.write(f"{amount}\\n")
    return f"charged {amount}"


if __name__ == "__main__":
    server.run()
'''


def test_a_replayed_mcp_connect_connects_again_for_the_live_calls_after_it(tmp_path: Path) -> None:
    template = tmp_path / "mcp"
    template.mkdir()
    (template / "ledger_server.py").write_text(LEDGER_SERVER, encoding="utf-8")
    config = ('{"transport": "stdio", "command": "' + sys.executable + '", "args": ["ledger_server.py", "ledger.txt"]}')
    project(template, """
        agent Main {
            on start {
                let h = try mcp_connect('CONFIG');
                let first = try mcp_call(h, "charge", '{"amount": 1}');
                let open = mcp_connection(h);
                let tools = try mcp_tools(h);
                let second = try mcp_call(h, "charge", '{"amount": 2}');
                let total = try mcp_call(h, "total", '{}');
                try mcp_disconnect(h);
                print("{first}, {second}, total {total}, {len(tools)} tools, {open}, {mcp_connection(h)}");
            }
        }
        run Main;
    """.replace("CONFIG", config))
    expected = "charged 1, charged 2, total 3, 2 tools, Some(McpConnection { id: 1 }), None\n"
    n, clean = journal_writes(template)
    assert (n, clean.returncode, clean.stdout) == (8, 0, expected), clean.stderr
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k)
        assert attempts[-1].returncode == 0, (k, attempts[-1].stderr)
        assert stdout_of(attempts) == expected, k
        assert (root / "ledger.txt").read_text() == "1\n2\n", k


def test_typed_mcp_calls_replay_converted_values_and_charge_once(tmp_path: Path) -> None:
    template = tmp_path / "typed"
    template.mkdir()
    (template / "ledger_server.py").write_text(LEDGER_SERVER, encoding="utf-8")
    project(template, """
        tool Ledger {
            fn charge(amount: Int) -> String
            fn total() -> String
        }
        agent Main {
            use Ledger;
            on start {
                let first = try Ledger.charge(5);
                let second = try Ledger.charge(6);
                let total = try Ledger.total();
                print("{first}, {second}, total {total}");
            }
        }
        run Main;
    """)
    with open(template / "grove.toml", "a", encoding="utf-8") as grove:
        grove.write(f'\n[tools.Ledger]\ncommand = "{sys.executable}"\nargs = ["ledger_server.py", "ledger.txt"]\n')
    n, clean = journal_writes(template)
    assert (n, clean.returncode, clean.stdout) == (5, 0, "charged 5, charged 6, total 11\n"), clean.stderr
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k)
        assert attempts[-1].returncode == 0, (k, attempts[-1].stderr)
        assert stdout_of(attempts) == "charged 5, charged 6, total 11\n", k
        assert (root / "ledger.txt").read_text() == "5\n6\n", k


def test_replayed_and_new_mcp_handles_never_mix_up_their_servers(tmp_path: Path) -> None:
    template = tmp_path / "handles"
    template.mkdir()
    (template / "ledger_server.py").write_text(LEDGER_SERVER, encoding="utf-8")
    config = '{"transport": "stdio", "command": "' + sys.executable + '", "args": ["ledger_server.py", "LEDGER"]}'
    project(template, """
        agent Main {
            on start {
                let a = try mcp_connect('CONFIG_A');
                let b = try mcp_connect('CONFIG_B');
                let x = try mcp_call(b, "charge", '{"amount": 2}');
                let y = try mcp_call(a, "charge", '{"amount": 1}');
                let c = try mcp_connect('CONFIG_B');
                let total = try mcp_call(c, "total", '{}');
                print("{x}, {y}, b total {total}");
            }
        }
        run Main;
    """.replace("CONFIG_A", config.replace("LEDGER", "a.txt")).replace("CONFIG_B", config.replace("LEDGER", "b.txt")))
    expected = "charged 2, charged 1, b total 2\n"
    n, clean = journal_writes(template)
    assert (n, clean.returncode, clean.stdout) == (8, 0, expected), clean.stderr
    # crashed after the first connect, the resumed run's first live connection is the manager's mcp:1 again:
    # the program's `b` must not be taken for its recorded `a`
    for k in (1, 2, 4):
        root, attempts = crash_and_resume(template, k)
        assert attempts[-1].returncode == 0, (k, attempts[-1].stderr)
        assert stdout_of(attempts) == expected, k
        assert ((root / "a.txt").read_text(), (root / "b.txt").read_text()) == ("1\n", "2\n"), k


def test_checkpoints_are_journaled_with_the_values_they_save(tmp_path: Path) -> None:
    template = project(tmp_path / "checkpoint", """
        agent Main {
            @persistent count: Int
            @persistent label: String
            on start {
                self.count.set(self.count.get() + 1);
                checkpoint();
                self.label.set("n{self.count.get()}");
                self.label.checkpoint();
                print("{self.count.get()} {self.label.get()}");
            }
        }
        run Main;
    """)
    n, clean = journal_writes(template)
    # count.get, count.set, checkpoint, count.get, label.set, label.checkpoint, count.get, label.get
    assert (n, clean.stdout) == (8, "1 n1\n")
    for k in range(1, n + 1):
        root, attempts = crash_and_resume(template, k)
        assert (attempts[-1].returncode, stdout_of(attempts)) == (0, "1 n1\n"), k
        with sqlite3.connect(root / ".sage" / "state.db") as db:
            assert sorted(db.execute("SELECT field, value FROM sage_state")) == [("count", "1"), ("label", '"n1"')]
            targets = [row[0] for row in db.execute("SELECT target FROM steps WHERE number IN (3, 6) ORDER BY number")]
            assert targets == ["checkpoint", "label.checkpoint"]


REFUSING_SERVER = '''
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("refusing")


@server.tool()
def pay(amount: int) -> str:
    raise ToolError(f"card declined for {amount}")


if __name__ == "__main__":
    server.run()
'''


def test_recorded_errors_are_raised_again_with_their_kind_and_message(tmp_path: Path) -> None:
    template = tmp_path / "errors"
    template.mkdir()
    (template / "refusing_server.py").write_text(REFUSING_SERVER, encoding="utf-8")
    config = '{"transport": "stdio", "command": "' + sys.executable + '", "args": ["refusing_server.py"]}'
    project(template, """
        agent Main {
            use Fs;
            on start {
                let h = try mcp_connect('CONFIG');
                let paid = mcp_call(h, "pay", '{"amount": 3}') catch(e) { "{e.kind}: {e.message}" };
                let read = Fs.read("missing.txt") catch(e) { "{e.kind}: {e.message}" };
                let t = now_ms();
                print(paid);
                print(read);
            }
        }
        run Main;
    """.replace("CONFIG", config))
    n, clean = journal_writes(template)
    assert (n, clean.returncode) == (5, 0), clean.stderr   # connect, pay (started, failed), Fs.read, now_ms
    lines = clean.stdout.splitlines()
    assert lines[0].startswith("Mcp: mcp_call 'pay' failed: ") and "card declined for 3" in lines[0]
    assert lines[1].startswith("Tool: ")
    root = template
    assert sage("run", cwd=root, env={"SAGE_CRASH_AFTER_WRITE": "5"}).returncode == CRASHED
    # the world has changed since: done again, both calls would succeed; replayed, they fail as they did
    (root / "missing.txt").write_text("here now", encoding="utf-8")
    server = root / "refusing_server.py"
    server.write_text(server.read_text().replace('raise ToolError(f"card declined for {amount}")', 'return "paid"'))
    resumed = sage("run", "--resume", "last", cwd=root)
    assert (resumed.returncode, resumed.stdout) == (0, clean.stdout)
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM steps ORDER BY number")]
    assert statuses == ["done", "failed", "failed", "done"]
