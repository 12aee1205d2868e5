"""The engine as a library (SPEC §20): compile once, run many, each run with a Host of its own."""
from __future__ import annotations

import gc
import io
import threading
import tracemalloc
from pathlib import Path

import pytest

import sagepy
from sagepy.deepstack import call_on_deep_stack

GREETER = """
agent Greeter {
    name: String
    times: Int

    on start {
        let i = 0;
        while i < self.times {
            print("hello {self.name} {i}");
            i = i + 1;
        }
        yield(self.times);
    }
}

agent Main {
    on start {
        let who = args();
        let n = len(who);
        print("args: {n}");
        print_err("to stderr");
        yield(n);
    }
}

agent Boom {
    on start {
        let zero = len(args());
        yield(10 / zero);
    }
}

agent Forever {
    on start {
        loop {
            sleep_ms(10);
        }
    }
}

run Main;
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> sagepy.Program:
    path = tmp_path_factory.mktemp("engine") / "main.sg"
    path.write_text(GREETER)
    return sagepy.compile(path)


class Captured:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.err: list[str] = []

    def host(self, **ports) -> sagepy.Host:
        return sagepy.Host(out=self.out.append, err=self.err.append, **ports)


def test_the_entry_agent_runs_with_the_programs_arguments(program: sagepy.Program) -> None:
    seen = Captured()
    outcome = program.run(args=["a", "b", "c"], host=seen.host())
    assert (outcome.status, outcome.exit_code, outcome.value, outcome.error) == ("completed", 3, 3, None)
    assert seen.out == ["args: 3"] and seen.err == ["to stderr"]


def test_an_agent_named_by_entry_gets_its_fields_from_a_dict(program: sagepy.Program) -> None:
    seen = Captured()
    outcome = program.run(entry="Greeter", args={"name": "ada", "times": 2}, host=seen.host())
    assert outcome.status == "completed" and outcome.value == 2
    assert seen.out == ["hello ada 0", "hello ada 1"]


def test_fields_that_do_not_fit_are_the_callers_mistake(program: sagepy.Program) -> None:
    with pytest.raises(ValueError, match="times"):
        program.run(entry="Greeter", args={"name": "ada", "times": "two"})
    with pytest.raises(ValueError, match="no agent Nobody"):
        program.run(entry="Nobody", args={})


def test_an_uncaught_error_is_an_outcome_not_an_exception(program: sagepy.Program) -> None:
    seen = Captured()
    outcome = program.run(entry="Boom", args={}, host=seen.host())
    assert outcome.status == "failed" and outcome.exit_code == 1
    assert "division by zero" in outcome.error
    assert any("unhandled error in agent Boom#0" in line for line in seen.err)


@pytest.mark.parametrize("large_stack", [False, True], ids=["plain-caller", "large-stack-caller"])
def test_a_host_stops_a_run_before_its_next_step(program: sagepy.Program, large_stack: bool) -> None:
    host = Captured().host()
    timer = threading.Timer(0.3, host.stop)
    timer.start()
    run = lambda: program.run(entry="Forever", args={}, host=host)   # noqa: E731
    outcome = call_on_deep_stack(run, "caller") if large_stack else run()
    timer.join()
    assert (outcome.status, outcome.exit_code) == ("cancelled", 130)


def test_a_large_stack_caller_runs_the_entry_agent_itself_and_others_on_threads_of_their_own(
        tmp_path: Path) -> None:
    """A served call's thread (a large-stack one) runs its entry agent: no thread is started for it, and an
    agent it summons still gets its own; from any other thread the entry agent gets one too."""
    path = tmp_path / "threads.sg"
    path.write_text("""
agent Helper {
    on start {
        print("helper");
        yield(1);
    }
}

agent Entry {
    on start {
        print("entry");
        let h = summon Helper {};
        let one = try await h;
        yield(one + 1);
    }
}
""")
    program = sagepy.compile(path, require_run=False)
    for large_stack in (False, True):
        printed: dict[str, threading.Thread] = {}
        host = sagepy.Host(out=lambda line: printed.setdefault(line, threading.current_thread()), err=print)
        callers: list[threading.Thread] = []

        def run() -> sagepy.RunOutcome:
            callers.append(threading.current_thread())
            return program.run(entry="Entry", args={}, host=host)
        outcome = call_on_deep_stack(run, "caller") if large_stack else run()
        assert (outcome.status, outcome.value) == ("completed", 2)
        assert (printed["entry"] is callers[0]) is large_stack
        assert printed["helper"] is not callers[0]


def test_a_program_cannot_be_changed(program: sagepy.Program) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        program.entry = "Greeter"
    assert program.entry == "Main"


def test_errors_raise_check_failed_with_every_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "bad.sg"
    path.write_text('agent Main {\n    on start {\n        let x: Int = "no";\n        yield(nope);\n    }\n}\nrun Main;\n')
    with pytest.raises(sagepy.CheckFailed) as failed:
        sagepy.compile(path)
    found = {(d.code, d.line) for d in failed.value.diagnostics}
    assert len(found) >= 2 and all(d.file == str(path) for d in failed.value.diagnostics)
    assert all(d.column is not None for d in failed.value.diagnostics)


def test_one_program_runs_from_eight_threads_at_once(program: sagepy.Program) -> None:
    results: dict[int, tuple] = {}
    start = threading.Barrier(8)

    def one(i: int) -> None:
        seen = Captured()
        start.wait()
        outcome = program.run(entry="Greeter", args={"name": f"t{i}", "times": 50 + i}, host=seen.host())
        results[i] = (outcome, seen.out)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        outcome, out = results[i]
        assert outcome.status == "completed" and outcome.value == 50 + i
        assert out == [f"hello t{i} {k}" for k in range(50 + i)]


def test_a_thousand_runs_of_one_program_keep_no_memory(program: sagepy.Program) -> None:
    def runs(n: int) -> None:
        for _ in range(n):
            outcome = program.run(args=["x"], host=sagepy.Host(out=lambda _: None, err=lambda _: None))
            assert outcome.exit_code == 1

    runs(50)   # warm: caches and lazily built parts are made once
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        runs(1000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # a run builds a runtime, an effects chain and a thread: anything kept per run would be kilobytes each
    assert grown < 1000 * 200, f"{grown} bytes kept after 1,000 runs"


def test_a_host_gives_the_run_its_stdin_environment_and_clock(tmp_path: Path) -> None:
    path = tmp_path / "world.sg"
    path.write_text("""
agent Main {
    on start {
        let first = try read_line();
        let who = env_or("WHO", "nobody");
        print("{first} {who} {now_s()} {now_ms()}");
        match env("HOME") {
            Some(h) => print("home {h}"),
            None => print("no home"),
        }
        yield(0);
    }
}
run Main;
""")
    seen = Captured()
    host = seen.host(stdin=io.StringIO("line one\nline two\n"), environ={"WHO": "ada"}, clock=lambda: 1234.5)
    outcome = sagepy.compile(path).run(host=host)
    assert outcome.status == "completed", seen.err
    assert seen.out == ["line one ada 1234 1234500", "no home"]


def test_runs_of_one_process_each_have_their_own_in_memory_database(tmp_path: Path) -> None:
    path = tmp_path / "db.sg"
    path.write_text("""
agent Main {
    use Database;
    on start {
        try Database.execute("CREATE TABLE IF NOT EXISTS seen (v INTEGER)");
        try Database.execute("INSERT INTO seen VALUES (1)");
        let rows = try Database.query("SELECT v FROM seen");
        yield(len(rows));
    }
}

run Main;
""")
    program = sagepy.compile(path, settings={"SAGE_DATABASE_URL": "sqlite::memory:"})
    outcomes = [program.run(host=sagepy.Host(out=lambda line: None)) for _ in range(3)]
    assert [(o.status, o.value) for o in outcomes] == [("completed", 1)] * 3
