"""What only test and eval files contain: `mock`, `replay` and `score` statements and the assertions (SPEC §9,
§22)."""
from __future__ import annotations

from typing import Any, Callable

from ...check.checker import is_deny
from ...diagnostics import display_path, source_line
from ...syntax import ast as A
from ...core.errors import SageRaise, TestAbort
from ...core.values import UNIT, Variant, display, quoted_display, values_equal
from .context import Compiling
from .frames import Code


def mock(c: Compiling, node: Any) -> Code:
    if node.kind in ("divine", "infer"):
        key = "llm"
    elif node.kind in ("elicit", "approve", "ask"):
        key = node.kind
    else:
        key = f"{node.tool}.{node.fn}"
    if isinstance(node.value, A.MockCalls):
        return mock_calls(c, node.value)
    failure = isinstance(node.value, A.FailExpr)
    value_node = node.value.expr if failure else node.value
    if node.kind == "elicit" and isinstance(value_node, A.Name) and value_node.name in ("decline", "cancel"):
        action = value_node.name
        value = lambda frame: action
    elif node.kind == "approve" and is_deny(value_node):   # `-> deny("reason")`: a denial with its reason
        reason = c.expr(value_node.args[0])

        def value(frame: list) -> Any:
            from ...effects.approvals import Denial
            return Denial(reason(frame))
    else:
        value = c.expr(value_node)

    def run(frame: list) -> Any:
        from ...effects.mocks import Failure
        v = value(frame)
        mocks = frame[0].runtime.effects.mocks
        mocks.push(key, Failure(v if type(v) is str else display(v)) if failure else v)
        return None
    return run


def replay(c: Compiling, node: Any) -> Code:
    """Nothing to do when it runs: the test's cassette was loaded before the test started."""
    return lambda frame: None


def score(c: Compiling, node: Any) -> Code:
    """`score "s" = expr;`: the value joins the scores of the running case (`ctx.scores`, a list of
    (name, value)), which sagepy.evals reads when the case ends."""
    value = c.expr(node.value)
    name = node.name

    def run(frame: list) -> None:
        frame[0].scores.append((name, value(frame)))
    return run


def mock_calls(c: Compiling, value: Any) -> Code:
    """`mock divine -> call T.f(a), …;`: a model turn that calls tools, its arguments keyed by parameter
    name as a direct call sends them (None left out, SPEC §5)."""
    calls = [(call.ref.tool, call.ref.fn, call.ref.params, [c.expr(a) for a in call.args])
             for call in value.calls]

    def run(frame: list) -> Any:
        from ...core.convert import to_json
        from ...effects.mocks import ScriptedCalls
        scripted = []
        for tool, fn, params, args in calls:
            values = [a(frame) for a in args]
            scripted.append((tool, fn, {name: to_json(v) for name, v in zip(params, values)
                                        if not (type(v) is Variant and v.enum == "Option" and v.name == "None")}))
        frame[0].runtime.effects.mocks.push("llm", ScriptedCalls(scripted))
        return None
    return run


def assertion(c: Compiling, name: str, node: Any) -> Code:
    args = [c.expr(a) for a in node.args]
    file, span = c.file, node.span
    if name == "assert_fails":
        (arg,) = args

        def fails(frame: list) -> Any:
            try:
                v = arg(frame)
            except SageRaise:
                return UNIT
            if type(v) is Variant and v.enum == "Result" and v.name == "Err":
                return UNIT
            raise TestAbort(_assertion_detail(name, file, span, [("value", v)]))
        return fails
    check = _ASSERTION_CHECKS[name]
    labels = ["actual", "expected"] if len(args) == 2 else ["value"]

    def run(frame: list) -> Any:
        values = [a(frame) for a in args]
        if not check(*values):
            raise TestAbort(_assertion_detail(name, file, span, list(zip(labels, values))))
        return UNIT
    return run


def _contains(s: Any, x: Any) -> bool:
    if type(s) is str:
        return type(x) is str and x in s
    return any(values_equal(e, x) for e in s)


# every assertion of `check.names.ASSERTIONS` but `assert_fails`, which compiles to a catch
_ASSERTION_CHECKS: dict[str, Callable[..., bool]] = {
    "assert": lambda b: b is True, "assert_true": lambda b: b is True, "assert_false": lambda b: b is False,
    "assert_eq": values_equal, "assert_neq": lambda a, e: not values_equal(a, e),
    "assert_gt": lambda a, e: a > e, "assert_lt": lambda a, e: a < e,
    "assert_gte": lambda a, e: a >= e, "assert_lte": lambda a, e: a <= e,
    "assert_contains": _contains, "assert_not_contains": lambda s, x: not _contains(s, x),
    "assert_starts_with": lambda s, p: s.startswith(p), "assert_ends_with": lambda s, p: s.endswith(p),
    "assert_empty": lambda x: len(x) == 0, "assert_not_empty": lambda x: len(x) != 0,
    "assert_len": lambda l, n: len(l) == n, "assert_empty_list": lambda l: len(l) == 0,
    "assert_not_empty_list": lambda l: len(l) != 0,
}


def _assertion_detail(name: str, file: str, span: tuple, values: list) -> str:
    lines = [f"{name} failed at {display_path(file)}:{span[0]}:{span[1]}"]
    for label, v in values:
        lines.append(f"      {label + ':':<10}{quoted_display(v)}")
    text = source_line(file, span[0])
    if text is not None:
        lines.append(f"      {span[0]} | {text}")
    return "\n".join(lines)
