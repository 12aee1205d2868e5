"""Persistence, supervisors, externs and tracing, run through `sage run` as a user would."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def sage(*args: str, cwd: Path, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    full = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


COUNTER = """\
    record Stats { runs: Int, names: List<String> }
    agent Main {
        @persistent count: Int
        @persistent stats: Stats
        on waking { print("waking at {self.count.get()}"); }
        on start {
            self.count.set(self.count.get() + 1);
            let s = self.stats.get();
            self.stats.set(Stats { runs: s.runs + 1, names: push(s.names, "run") });
            print("count {self.count.get()} runs {self.stats.get().runs}");
            yield(0);
        }
    }
    run Main;
    """


def test_persistent_fields_survive_runs(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[persistence]\nbackend = "sqlite"\n',
                            "main.sg": COUNTER})
    first = sage("run", ".", cwd=root)
    assert first.stdout == "waking at 0\ncount 1 runs 1\n", first.stderr
    second = sage("run", ".", cwd=root)
    assert second.stdout == "waking at 1\ncount 2 runs 2\n"
    rows = sqlite3.connect(root / ".sage" / "state.db").execute(
        "SELECT field, value FROM sage_state WHERE agent = 'Main' ORDER BY field").fetchall()
    assert rows == [("count", "2"), ("stats", '{"runs":2,"names":["run","run"]}')]


def test_a_starting_value_is_used_once_then_the_stored_value_wins(tmp_path: Path) -> None:
    # SPEC §4.8: a persistent field given a value in `summon` or a child spec starts there when the store holds
    # nothing for it; the next run finds the stored value and ignores the starting value
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[persistence]\nbackend = "sqlite"\n',
                            "main.sg": """\
        agent Counter {
            @persistent hits: Int
            on waking { print("waking at {self.hits.get()}"); }
            on start { self.hits.set(self.hits.get() + 1); yield(self.hits.get()); }
        }
        agent Child {
            @persistent total: Int
            on start { self.total.set(self.total.get() + 1); print("child {self.total.get()}"); }
        }
        agent Main {
            on start { print("counter {try await summon Counter { hits: 10 }}"); }
        }
        supervisor Pool {
            strategy: OneForOne
            children {
                Child { restart: Transient, total: 41 }
            }
        }
        run Main;
        """, "pool.sg": ""})
    (root / "pool.sg").write_text((root / "main.sg").read_text().replace("run Main;", "run Pool;"))
    assert sage("run", "main.sg", cwd=root).stdout == "waking at 10\ncounter 11\n"
    assert sage("run", "main.sg", cwd=root).stdout == "waking at 11\ncounter 12\n"
    assert sage("run", "pool.sg", cwd=root).stdout == "child 42\n"
    assert sage("run", "pool.sg", cwd=root).stdout == "child 43\n"
    rows = sqlite3.connect(root / ".sage" / "state.db").execute(
        "SELECT agent, field, value FROM sage_state ORDER BY agent").fetchall()
    assert rows == [("Child", "total", "43"), ("Counter", "hits", "12")]


def test_memory_backend_forgets(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n', "main.sg": COUNTER})
    assert sage("run", ".", cwd=root).stdout == "waking at 0\ncount 1 runs 1\n"
    assert sage("run", ".", cwd=root).stdout == "waking at 0\ncount 1 runs 1\n"
    assert not (root / ".sage" / "state.db").exists()


def test_killed_mid_run_never_leaves_a_torn_value(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[persistence]\nbackend = "sqlite"\n',
                            "main.sg": """\
        agent Main {
            @persistent log: List<Int>
            on start {
                let i = 0;
                loop {
                    i = i + 1;
                    self.log.set(range(0, i));
                    if i == 20 { print("written 20 times"); }
                }
            }
        }
        run Main;
        """})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "sagepy", "run", "."], cwd=root, env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "written 20 times\n"   # killed while it goes on writing
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    value = sqlite3.connect(root / ".sage" / "state.db").execute(
        "SELECT value FROM sage_state WHERE agent = 'Main' AND field = 'log'").fetchone()[0]
    items = json.loads(value)
    assert len(items) > 1
    assert items == list(range(len(items)))   # a list that was written whole, never a torn one


SUPERVISED = """\
    agent Worker {
        @persistent tries: Int
        label: String
        on start {
            self.tries.set(self.tries.get() + 1);
            print("{self.label} try {self.tries.get()}");
            if self.tries.get() < FAILS { fail "boom"; }
        }
    }
    agent Other {
        @persistent runs: Int
        on start { self.runs.set(self.runs.get() + 1); print("other run {self.runs.get()}"); }
    }
    supervisor Sup {
        strategy: STRATEGY,
        children {
            Other { restart: Transient }
            Worker { restart: Transient, label: "w" }
        }
    }
    run Sup;
    """


def supervised(tmp_path: Path, strategy: str, fails: int, max_restarts: int = 5) -> subprocess.CompletedProcess:
    source = SUPERVISED.replace("STRATEGY", strategy)
    source = f"const FAILS: Int = {fails};\n" + textwrap.dedent(source)
    write(tmp_path, {"grove.toml": f'[project]\nentry = "main.sg"\n[supervision]\nmax_restarts = {max_restarts}\n'
                                   'within_seconds = 60\n', "main.sg": source})
    return sage("run", ".", cwd=tmp_path, timeout=60)


def test_one_for_one_restarts_only_the_failing_child(tmp_path: Path) -> None:
    r = supervised(tmp_path, "OneForOne", fails=3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("w try") == 3
    assert r.stdout.count("other run") == 1


def test_one_for_all_restarts_every_child(tmp_path: Path) -> None:
    r = supervised(tmp_path, "OneForAll", fails=3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("w try") == 3
    assert "other run 3" in r.stdout


def test_rest_for_one_restarts_later_children_only(tmp_path: Path) -> None:
    r = supervised(tmp_path, "RestForOne", fails=2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("w try") == 2
    assert r.stdout.count("other run") == 1


def test_restart_intensity_limit(tmp_path: Path) -> None:
    r = supervised(tmp_path, "OneForOne", fails=100, max_restarts=2)
    assert r.returncode == 1
    assert r.stdout.count("w try") == 3
    assert "error[E209]: unhandled error in agent Sup#0: Agent error: restart intensity exceeded (3 restarts in 60 s)" \
        in r.stderr


EXTERN_PY = """\
    import sagepy

    def shout(s):
        return s.upper()

    def total(values):
        return sum(values)

    def describe(p):
        return {"name": p["name"] + "!", "tags": p["tags"] + ["seen"], "score": p["score"] * 2, "ok": not p["ok"]}

    def halve(x):
        return x / 2

    def lookup(m, key):
        return m.get(key)

    def check(n):
        if n < 0:
            raise sagepy.SageFail("negative input")
        return n

    def crash():
        raise ValueError("bad state")

    def liar():
        return "not a number"
    """

EXTERN_SG = """\
    record Profile { name: String, tags: List<String>, score: Int, ok: Bool }
    extern fn shout(s: String) -> String
    extern fn total(values: List<Int>) -> Int
    extern fn describe(p: Profile) -> Profile
    extern fn halve(x: Float) -> Float
    extern fn lookup(m: Map<String, Int>, key: String) -> Option<Int>
    extern fn check(n: Int) -> Int fails
    extern fn crash() -> Int fails
    extern fn liar() -> Int
    agent Main {
        on start {
            print(shout("hi"));
            print(total([1, 2, 3]));
            print(describe(Profile { name: "ann", tags: ["a"], score: 21, ok: true }));
            print(halve(3.0));
            print(lookup({"a": 1}, "a"));
            print(lookup({"a": 1}, "b"));
            let e1 = check(-1) catch(e) { print("{e.kind}: {e.message}"); 0 };
            let e2 = crash() catch(e) { print("{e.kind}: {e.message}"); 0 };
            print(e1 + e2);
            print(liar());
        }
    }
    run Main;
    """


def test_externs_with_every_json_type(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[extern]\nmodules = ["ext.py"]\n',
                            "ext.py": EXTERN_PY, "main.sg": EXTERN_SG})
    r = sage("run", ".", cwd=root)
    assert r.stdout.splitlines() == [
        "HI", "6", 'Profile { name: "ann!", tags: ["a", "seen"], score: 42, ok: false }', "1.5", "Some(1)", "None",
        "User: negative input", "Runtime: extern fn 'crash' raised ValueError: bad state", "0"]
    assert r.returncode == 1
    assert "error[E207]" in r.stderr and "extern fn 'liar'" in r.stderr


def test_missing_extern_is_e093(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[extern]\nmodules = ["nowhere.py"]\n',
                            "main.sg": "extern fn ghost() -> Int\nagent Main { on start { print(ghost()); } }\n"
                                       "run Main;\n"})
    r = sage("run", ".", cwd=root)
    assert r.returncode == 1
    assert "error[E093]: extern module not found: nowhere.py\n --> grove.toml:4:1" in r.stderr
    write(root, {"grove.toml": '[project]\nentry = "main.sg"\n[extern]\nmodules = ["other.py"]\n',
                 "other.py": "def unrelated():\n    return 1\n"})
    r = sage("run", ".", cwd=root)
    assert r.returncode == 1
    assert "error[E093]: no implementation for `extern fn ghost`" in r.stderr


def test_trace_events_per_kind(tmp_path: Path) -> None:
    root = write(tmp_path, {"main.sg": """\
        agent Helper {
            on start { trace("helping"); yield(2); }
        }
        agent Main {
            on start {
                span "work" {
                    let h = summon Helper {};
                    let v = try await h;
                    print(v);
                }
                yield(0);
            }
        }
        run Main;
        """})
    trace_file = root / "trace.jsonl"
    r = sage("run", "main.sg", "--trace-file", str(trace_file), cwd=root)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in trace_file.read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run.start" and events[0]["entry"] == "Main"
    assert kinds[-1] == "run.end" and events[-1]["exit_code"] == 0
    for kind in ("span.start", "span.end", "agent.spawn", "agent.result", "agent.stop", "user"):
        assert kind in kinds, kind
    user = next(e for e in events if e["kind"] == "user")
    assert (user["agent"], user["message"]) == ("Helper#1", "helping")
    spawn = next(e for e in events if e["kind"] == "agent.spawn")
    assert (spawn["agent"], spawn["parent"]) == ("Helper#1", "Main#0")
    end = next(e for e in events if e["kind"] == "span.end")
    assert end["name"] == "work" and isinstance(end["duration_ms"], int)
    assert all(isinstance(e["t"], int) for e in events)
    stderr_trace = sage("run", "main.sg", "--trace", cwd=root)
    assert '"kind":"run.start"' in stderr_trace.stderr


def test_trace_of_model_and_tool_calls_holds_no_values(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": '[project]\nentry = "main.sg"\n[llm]\nmodel = "echo"\n',
                            "main.sg": """\
        agent Main {
            use Fs
            on start {
                let answer = try divine("secret prompt text");
                try Fs.write("note.txt", "secret file content");
                let missing = Fs.read("no-such-file") catch { "" };
                print(answer);
            }
        }
        run Main;
        """})
    trace_file = root / "trace.jsonl"
    r = sage("run", ".", env={"SAGE_TRACE_FILE": str(trace_file)}, cwd=root)
    assert r.returncode == 0, r.stderr
    text = trace_file.read_text()
    assert "secret" not in text   # arguments and results are never traced
    events = [json.loads(line) for line in text.splitlines()]
    request = next(e for e in events if e["kind"] == "llm.request")
    assert (request["agent"], request["model"], request["prompt_chars"], request["typed"]) == (
        "Main#0", "echo", len("secret prompt text"), False)
    assert any(e["kind"] == "llm.response" for e in events)
    calls = [e for e in events if e["kind"] == "tool.call"]
    assert [(c["tool"], c["fn"], c["safety"]) for c in calls] == [("Fs", "write", "idempotent"),
                                                                  ("Fs", "read", "read_only")]
    results = [e for e in events if e["kind"] == "tool.result"]
    assert [(e["fn"], e["ok"], e["mocked"]) for e in results] == [("write", True, False), ("read", False, False)]
    assert "error" in results[1] and isinstance(results[1]["duration_ms"], int)


def test_a_supervised_childs_effect_handler_applies_from_its_first_divine(tmp_path: Path) -> None:
    """The handler's model is set before the child's thread starts: a `divine` at the very top of `on start`
    used to race it and reach the default model (no model configured here)."""
    write(tmp_path, {"main.sg": """\
        handler Offline handles Infer {
          model: "echo"
        }
        agent Worker {
          on start { print(try divine("hello there")); yield(0); }
          on error(e) { print("err: {e}"); yield(1); }
        }
        supervisor Sup {
          strategy: OneForOne
          children {
            Worker { restart: Temporary, handler Infer: Offline }
          }
        }
        run Sup;
        """})
    env = {k: v for k, v in os.environ.items() if k not in ("SAGE_API_KEY", "OPENAI_API_KEY", "SAGE_MODEL")}
    for _ in range(5):
        r = subprocess.run([sys.executable, "-m", "sagepy", "run", "main.sg"], cwd=tmp_path,
                           env=dict(env, NO_COLOR="1", PYTHONPATH=str(REPO)), capture_output=True, text=True,
                           timeout=60)
        assert (r.returncode, r.stdout) == (0, "echo: hello there\n"), r.stderr
