"""Lists and maps are values (SPEC §6.4, §6.5), yet `xs = push(xs, e)`, `xs = concat(xs, ys)`, `map_set` and
`map_delete` on a value nobody else holds change it in place, so a loop of n of them is O(n), not O(n²)
(issue 18). Counted, not timed: whether the very same object is kept, and how the compiler routes the code."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import sagepy.runtime.compile.compiler as compiler
from sagepy.runtime.compile import inplace
from sagepy.session import Session
from test_compile_resolved import run_start


def constant(value):
    return lambda frame: value


def test_push_on_a_list_only_its_variable_holds_appends_to_it() -> None:
    frame = [None, []]
    identity = id(frame[1])   # not a reference: the test must not hold the list itself
    step = inplace.grow(1, "push", lambda frame: len(frame[1]))
    for _ in range(1000):
        step(frame)
    assert id(frame[1]) == identity and frame[1] == list(range(1000))
    inplace.grow(1, "concat", constant([7, 8]))(frame)
    assert id(frame[1]) == identity and frame[1][-2:] == [7, 8] and len(frame[1]) == 1002


def test_a_list_held_elsewhere_is_copied_and_left_alone() -> None:
    alias = [1, 2]
    frame = [None, alias]
    inplace.grow(1, "push", constant(3))(frame)
    assert alias == [1, 2] and frame[1] == [1, 2, 3] and frame[1] is not alias
    inplace.grow(1, "concat", constant([4]))(frame)   # the new list has one owner: extended in place
    assert frame[1] == [1, 2, 3, 4] and alias == [1, 2]


def test_map_set_and_delete_in_place_only_when_unshared() -> None:
    frame = [None, {}]
    identity = id(frame[1])
    for i in range(100):
        inplace.map_set(1, constant(f"k{i}"), constant(i))(frame)
    inplace.map_delete(1, constant("k99"))(frame)
    assert id(frame[1]) == identity and len(frame[1]) == 99
    entries = frame[1]
    inplace.map_set(1, constant("k0"), constant(-1))(frame)
    assert frame[1] is not entries and entries["k0"] == 0 and frame[1]["k0"] == -1   # `entries` holds it
    kept = frame[1]
    inplace.map_delete(1, constant("k1"))(frame)
    assert frame[1] is not kept and "k1" in kept and "k1" not in frame[1]
    inplace.map_delete(1, constant("missing"))(frame)
    assert len(frame[1]) == 98


def test_an_error_in_the_operand_leaves_the_variable_as_it_was() -> None:
    items = [1]
    frame = [None, items]

    def failing(frame):
        raise RuntimeError("operand failed")
    with pytest.raises(RuntimeError):
        inplace.grow(1, "push", failing)(frame)
    assert frame[1] is items and items == [1]


PROGRAM = """\
    agent Main {
        on start {
            let xs: List<Int> = [];
            let ys = [0];
            for i in range(0, 5) {
                xs = push(xs, i);
                ys = push(xs, i);
                xs = concat(xs, [i]);
            }
            let zs = xs;
            xs = push(xs, 99);
            print("{len(xs)} {len(zs)} {ys}");
        }
    }
    run Main;
"""


def test_the_compiler_routes_only_push_and_concat_onto_the_same_variable(tmp_path: Path, monkeypatch) -> None:
    routed: list[str] = []
    real = compiler.grow

    def recording(slot, name, operand):
        routed.append(name)
        return real(slot, name, operand)
    monkeypatch.setattr(compiler, "grow", recording)
    path = tmp_path / "main.sg"
    path.write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    session, _ = Session.open(str(path))
    program, diags = session.analyze(str(path))
    assert [d for d in diags if d.severity == "error"] == []
    assert run_start(program, program.externs) == ["11 10 [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]"]
    assert sorted(routed) == ["concat", "push", "push"]
