"""The calls of the builtins compiled here rather than taken from the native library (`CONTEXT_BUILTINS`): they
act through the running agent (frame slot 0) — write output, sleep, ask a person, talk to MCP servers through its
effects, read the run's arguments — or rebind the variable they are given (`map_set`, `map_delete`). A helper of
the compiler: it takes it through `context.Compiling`.
"""
from __future__ import annotations

from typing import Any

from ...core.errors import SageRaise
from ...core.values import UNIT, display
from ...effect_builtins import EFFECT_BUILTINS, IO, MCP_BUILTINS
from . import inplace
from .context import Compiling
from .frames import Code, located

# Builtins compiled here rather than taken from the native library: they write output, sleep the agent, ask a
# person, talk to MCP servers through the agent's effects (sagepy.effect_builtins: the `io` ones the interpreter
# performs itself, and every `mcp` one), read the run's arguments, or rebind the variable they are given.
CONTEXT_BUILTINS = ("print", "print_err", "map_set", "map_delete", "args", *MCP_BUILTINS,
                    *(name for name, b in EFFECT_BUILTINS.items() if b.kind == IO and b.perform is None))


def context_builtin(c: Compiling, name: str, node: Any) -> Code:
    if name in ("map_set", "map_delete"):
        return map_update(c, name, node)
    args = [c.expr(a) for a in node.args]
    file, span = c.file, node.span
    if name in MCP_BUILTINS:
        ret = node.target   # the declared type of a builtin whose value holds prelude records, else None

        def mcp(frame: list) -> Any:
            values = [a(frame) for a in args]
            try:
                return frame[0].runtime.effects.mcp_builtin(frame[0], name, values, ret)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return mcp
    if name in ("print", "print_err"):
        (arg,) = args
        to_stdout = name == "print"

        def emit(frame: list) -> Any:
            v = arg(frame)
            ctx = frame[0]
            if ctx.steps < ctx.replay_until:   # a resumed run printed this before (SPEC §14)
                return UNIT
            text = v if type(v) is str else display(v)
            if to_stdout:
                ctx.runtime.write_out(text)
            else:
                ctx.runtime.write_err(text)
            return UNIT
        return emit
    if name == "sleep_ms":
        (ms,) = args

        def sleep(frame: list) -> Any:
            return frame[0].runtime.effects.io(frame[0], "sleep_ms", (ms(frame),))
        return sleep
    if name == "args":   # the program arguments of the run, set by the session (SPEC §6.1)
        return lambda frame: list(frame[0].runtime.program_args)

    def read(frame: list) -> Any:   # ask
        try:
            return frame[0].runtime.effects.io(frame[0], name, [a(frame) for a in args])
        except SageRaise as exc:
            raise located(exc, file, span, frame[0])
    return read


def map_update(c: Compiling, name: str, node: Any) -> Code:
    """`map_set(m, k, v)` / `map_delete(m, k)` rebind the variable `m` to its updated map (in place when
    nothing else holds it: inplace.py)."""
    slot = node.args[0].slot
    key = c.expr(node.args[1])
    if name == "map_set":
        return inplace.map_set(slot, key, c.expr(node.args[2]))
    return inplace.map_delete(slot, key)
