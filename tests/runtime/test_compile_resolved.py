"""The checker is the only resolver: the runtime compiler follows what the checker recorded on the AST and
reports nothing itself (issue 13, item 1)."""
from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import sagepy.runtime.compile as compile_package
from sagepy.builtins import load_builtins, load_constants, load_io_builtins
from sagepy.effects.step import set_current_context
from sagepy.runtime.agents import AgentInstance, Runtime, YieldSignal
from sagepy.runtime.compile import Compiler
from sagepy.session import Session
from sagepy.syntax import ast as A

PROGRAM = """\
    fn one() -> Int { 1 }
    fn two() -> Int { 2 }
    agent Main {
        on start {
            let n = one();
            print(n);
            yield(0);
        }
    }
    run Main;
"""


def walk(node):
    yield node
    for name in getattr(node, "_fields", ()):
        value = getattr(node, name, None)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, A.Node):
                yield from walk(child)


def run_start(program, externs: dict) -> list[str]:
    out: list[str] = []
    runtime = Runtime(out=out.append, err=out.append)
    compiler = Compiler(runtime, externs, load_builtins(), load_constants(), load_io_builtins())
    compiler.compile_program(program)
    agent = compiler.entry_target("Main")
    inst = AgentInstance(runtime, agent, 0, None)
    set_current_context(inst)
    try:
        agent.handlers["start"].run(inst)
    except YieldSignal:
        pass
    finally:   # pytest's thread is shared by later tests, which must not find this agent as theirs
        set_current_context(None)
    return out


def checked(tmp_path: Path):
    path = tmp_path / "main.sg"
    path.write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    session, _ = Session.open(str(path))
    program, diags = session.analyze(str(path))
    assert [d for d in diags if d.severity == "error"] == []
    return program, program.externs


def test_a_checked_program_runs(tmp_path):
    program, externs = checked(tmp_path)
    assert run_start(program, externs) == ["1"]


def test_the_compiler_calls_what_the_checker_resolved_not_what_the_name_says(tmp_path):
    program, externs = checked(tmp_path)
    items = program.root.namespace.items
    calls = [n for n in walk(program.root.items[2]) if isinstance(n, A.Call) and n.fn.name == "one"]
    assert [c.ref for c in calls] == [items["one"]]
    calls[0].ref = items["two"]   # a resolution the name alone would never give
    assert run_start(program, externs) == ["2"]


def test_the_compiler_has_no_diagnostics_of_its_own():
    assert not hasattr(Compiler, "error")
    for module in [compile_package, *(getattr(compile_package, m) for m in
                                      ("compiler", "context", "contextcalls", "frames", "inplace", "items", "messaging",
                                       "testing"))]:
        source = inspect.getsource(module)
        assert "Diagnostic" not in source, module.__name__
        assert "self.error(" not in source and "c.error(" not in source, module.__name__
