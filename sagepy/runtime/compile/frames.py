"""Control-flow signals and the frames compiled bodies run in.

Every expression compiles to `fn(frame) -> value`; every statement to `fn(frame) -> signal`, where the signal is
None (go on), BREAK, CONTINUE or a `Return`. Statements return signals rather than raising because a `return` in
a hot recursive function would otherwise cost an exception per call; only control flow that starts inside an
expression (a match arm `=> return x`, a `return` inside a catch fallback block) travels as an exception
(`ControlFlow`) and is turned back into a signal by the enclosing function or loop.

A frame is a Python list: slot 0 holds the activation context (the running `AgentInstance`), the next slots the
parameters, then every `let` binding, pattern variable and captured variable of the body.
"""
from __future__ import annotations

from typing import Any, Callable

from ..agents import CALL_DEPTH_LIMIT
from ...core.errors import SageRaise, raise_at
from ...core.values import UNIT, ErrorValue

Code = Callable[[list], Any]


class Return:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


BREAK = object()
CONTINUE = object()


class ControlFlow(Exception):
    """A break/continue/return that started inside an expression."""

    def __init__(self, signal: Any) -> None:
        super().__init__()
        self.signal = signal


def located(exc: SageRaise, file: str, span: tuple, ctx: Any) -> SageRaise:
    """Attach the raising site to an error that does not have one yet."""
    err = exc.error
    if err.span is None:
        err.span = (file, span)
        if ctx is not None and err.agent is None:
            err.agent = getattr(ctx, "display_name", None)
    return exc


def make_function(body: Code, nslots: int, nparams: int, file: str, span: tuple) -> Callable[..., Any]:
    """Wrap a statement body as `impl(ctx, *args)`: new frame, depth accounting, return value."""
    pad = [None] * (nslots - 1 - nparams)

    def impl(ctx: Any, *args: Any) -> Any:
        frame = [ctx, *args]
        frame += pad
        ctx.depth += 1
        try:
            if ctx.depth > CALL_DEPTH_LIMIT:
                # Unlocated: the call site that overflowed attaches itself (`located`), not this declaration.
                raise SageRaise(ErrorValue("Runtime", "call depth exceeded", "E205"))
            sig = body(frame)
        except ControlFlow as cf:
            sig = cf.signal
        except MemoryError:
            # Unwinding to here freed what the body had built, so the error can be made and handled like any
            # other (by `catch`, `on error`, or the test); if memory is still short, MemoryError goes on up.
            raise raise_at("Runtime", "out of memory", None, file, span) from None
        finally:
            ctx.depth -= 1
        if type(sig) is Return:
            return sig.value
        if sig is None or sig is BREAK or sig is CONTINUE:
            return UNIT
        return sig   # the raw value of a function's tail or `return`
    return impl


def direct_call1(rec: Any, arg: Code, file: str, span: tuple) -> Code:
    """`f(x)` for a user function `f` of one parameter, the commonest call of recursive code: the callee's frame
    is built and its body run right here rather than through `rec.impl`, one Python call less per call. The
    callee's `body`, `pad` and `span` are read at call time, since it may be compiled after its caller."""
    def call1(frame: list) -> Any:
        ctx = frame[0]
        inner = [ctx, arg(frame)]
        inner += rec.pad
        ctx.depth += 1
        try:
            if ctx.depth > CALL_DEPTH_LIMIT:
                raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
            sig = rec.body(inner)
        except ControlFlow as cf:
            sig = cf.signal
        except SageRaise as exc:
            raise located(exc, file, span, ctx)
        finally:
            ctx.depth -= 1
        if type(sig) is Return:
            return sig.value
        if sig is None or sig is BREAK or sig is CONTINUE:
            return UNIT
        return sig
    return call1


def sequence(stmts: list) -> Code:
    n = len(stmts)
    if n == 0:
        return lambda frame: None
    if n == 1:
        return stmts[0]
    if n == 2:
        s0, s1 = stmts

        def two(frame: list) -> Any:
            sig = s0(frame)
            if sig is not None:
                return sig
            return s1(frame)
        return two

    def run(frame: list) -> Any:
        for s in stmts:
            sig = s(frame)
            if sig is not None:
                return sig
        return None
    return run


def discard(code: Code) -> Code:
    def run(frame: list) -> None:
        code(frame)
    return run


def raiser(signal: Any) -> Code:
    def run(frame: list) -> Any:
        raise ControlFlow(signal)
    return run


def return_raiser(value: Code) -> Code:
    def run(frame: list) -> Any:
        raise ControlFlow(Return(value(frame)))
    return run
