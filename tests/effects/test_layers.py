"""The effects layers keep to themselves (issue 31): test mode lives in the mocks layer and replay mode in the
cassette layer, nowhere else; a step is a typed value that building does not number."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sagepy.effects import step as S
from sagepy.runtime.agents import AgentInstance, Runtime

PACKAGE = Path(__file__).resolve().parent.parent.parent / "sagepy"
# The modules that may know which mode a run is in: the mocks layer (with the test's facts) and the cassette
# layer (with the replay's).
MODE_LAYERS = {"effects/mocks.py", "effects/cassette.py"}
# What only those layers may read: a test's queues, the handles its mocked connects issued, `--real-llm`, and a
# cassette's mode.
MODE_ATTRIBUTES = {"mocks", "issued_handles", "real_llm", "ended", "mode"}
MODE_WORDS = {"replay"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


def _mode_tests(node: ast.AST) -> list[str]:
    """What in `node` (a condition) asks which mode the run is in."""
    found = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in MODE_ATTRIBUTES - {"ended", "mode"}:
            found.append(f".{inner.attr}")
        if isinstance(inner, ast.Compare):
            for side in [inner.left, *inner.comparators]:
                if isinstance(side, ast.Constant) and side.value in MODE_WORDS:
                    found.append(repr(side.value))
    return found


def test_no_test_or_replay_branch_outside_the_mocks_and_cassette_layers() -> None:
    """No condition anywhere in sagepy asks whether a run is a test or a replay, except in those two layers;
    and no other module of the effects package reads a test's queues, its handles, `--real-llm` or a cassette's
    mode at all (it asks its facts, sagepy.effects.facts, or is given a layer)."""
    branches, reads = [], []
    for rel, tree in _modules():
        if rel in MODE_LAYERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                branches += [f"{rel}:{node.lineno}: {what}" for what in _mode_tests(node.test)]
            elif isinstance(node, ast.Attribute) and node.attr in MODE_ATTRIBUTES and rel.startswith("effects/"):
                reads.append(f"{rel}:{node.lineno}: .{node.attr}")
    assert branches == []
    assert reads == []


def test_the_scan_sees_a_test_mode_branch() -> None:
    """The scan above would catch the branches it forbids."""
    tree = ast.parse("if self.mocks is not None and h in self.mocks.issued_handles: pass\n"
                     "x = 1 if self.cassette.mode == 'replay' else 2\n")
    tests = [_mode_tests(node.test) for node in ast.walk(tree) if isinstance(node, (ast.If, ast.IfExp))]
    assert [sorted(found) for found in tests] == [[".issued_handles", ".mocks", ".mocks"], ["'replay'"]]


@pytest.fixture
def agent() -> AgentInstance:
    return AgentInstance(Runtime(), None, 0, None)


def test_building_a_step_does_not_number_it(agent: AgentInstance) -> None:
    """A step's number is given to it by the code that decides it is a step (`agent.next_step()`), never taken
    by building it: steps built in any order take the numbers they are given."""
    built = [S.ModelStep(target="divine", arguments=["p"], agent=agent),
             S.ToolStep(target="Fs.read", arguments=["f"], agent=agent, tool=None, safety_class="read_only"),
             S.McpStep(target="mcp_call", arguments=["mcp:1", "t", "{}"], agent=agent, safety_class=None),
             S.IoStep(target="now_ms", arguments=[], agent=agent),
             S.ReceiveStep(target="receive", arguments=[], agent=agent),
             S.StateStep(target="n.get", arguments=[], agent=agent, field=("A", "n", None)),
             S.AwaitStep(target="await", arguments=[5], agent=agent, awaited=None),
             S.ApprovalStep(target="Fs.write", arguments={}, agent=agent, person=None)]
    assert agent.steps == 0 and [step.number for step in built] == [None] * len(built)
    assert [step.kind for step in built] == list(S.KINDS[:3]) + ["io", "receive", "state", "await", "approval"]
    second = S.IoStep(target="now_s", arguments=[], agent=agent, number=agent.next_step())
    first = S.IoStep(target="now_ms", arguments=[], agent=agent, number=1)
    assert (first.number, second.number, agent.steps) == (1, 1, 1)
    assert (first.path, repr(second)) == ("test", "<step test:1 io now_s>")


def test_a_call_that_needs_approval_is_numbered_after_its_approval_and_only_when_made(agent: AgentInstance) -> None:
    approval = S.ApprovalStep(target="Fs.write", arguments={}, agent=agent, person=None, number=agent.next_step())
    call = S.ToolStep(target="Fs.write", arguments=["f", "x"], agent=agent, approval=approval,
                      safety_class="idempotent")
    assert (approval.number, call.number, agent.steps) == (1, None, 1)
    call.take_number()
    call.take_number()
    assert (call.number, agent.steps) == (2, 2)
    sampling = S.ModelStep(target="sampling", arguments={}, agent=None)   # a step of no agent: no number
    assert (sampling.path, sampling.number) == (None, None)


def test_a_remote_tools_class_is_looked_up_once_when_first_read(agent: AgentInstance) -> None:
    asked = []

    def resolve(step: S.Step) -> str:
        asked.append(step.target)
        return "idempotent"
    call = S.ToolStep(target="T.f", arguments={}, agent=agent, safety_class=None, resolve=resolve)
    assert asked == []
    assert (call.safety, call.safety, asked) == ("idempotent", "idempotent", ["T.f"])
    assert S.McpStep(target="mcp_call", arguments=[], agent=agent, safety_class=None).safety == "destructive"
