"""The Host: a run's only contact with the world (SPEC §20, DESIGN.md "The engine and its Host").

One Host per run. Each part is a small port with a default, so that a caller names only what it supplies:
`sage run`'s host writes to the terminal and turns Ctrl-C into a stop; `sage test`'s adds the test's mock
queues; a worker's stores the run's output with the run; an embedding program may capture everything.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, TextIO

from ..wake import WakingEvent

Line = Callable[[str], None]


class Host:
    """The world of one run; every argument is optional.

    `out`, `err`: where a `print` / `print_err` line goes (and every warning and durable-run notice, on
    `err`), without its newline; default the process's stdout and stderr.
    `store`: the `@persistent` store (a `sagepy.runtime.persistence.StateStore`) the caller opened, else the
    project's `[persistence]` store, else process memory.
    `durable`: journal the run (SPEC §14) — default: when `[persistence]` is configured; False is
    `sage run --no-journal`.
    `trace_file`, `trace_stderr`: where trace events go (SPEC §18); `telemetry`: export OpenTelemetry spans
    when an OTLP endpoint is configured (§18.1).
    `mocks`: a test's mock queues (`sage test`): the mocks layer goes first in the chain; `real_llm`:
    `sage test --real-llm`.
    `stdin`, `environ`, `clock`: what `read_line`/`read_all`, `env`/`env_or` and `now_ms`/`now_s` read
    (a text stream, a mapping, a function returning seconds since the epoch); default the process's.
    `cassette`: the recorded run (a `sagepy.effects.cassette.Cassette`) the run writes its model turns and
    tool calls to, or answers them from (SPEC §22.2); the caller opens and closes it.
    `cancel`: an event the caller sets to stop the run before its next step (the outcome is `cancelled`,
    a durable run stays resumable); `cancel_code` is the exit code reported for it (130, or 143 for SIGTERM).
    `people`: who answers approvals and `ask` (SPEC §17.3 item 2) instead of the terminal — an object with
    `available` (whether anyone can be asked now), `approve(ctx, label, arguments_json, source) -> dict` (the
    decision: `approved`, `by`, `at`, optional `always` and `reason`) and `ask(ctx, question) -> str`, as
    sagepy.effects.people.Terminal has, and optionally `elicit(server, request) -> answer` (the questions of
    the MCP servers the run calls, SPEC §8.7: a sagepy.mcp.elicitation request and answer) instead of the
    terminal form; `sage serve`'s asks the calling MCP client.
    `model`: where the run's model requests go instead of `[llm]` — a transport taking OpenAI chat bodies,
    as sagepy.llm.client.LlmClient's `transport` says; `sage serve`'s asks the calling client (sampling).
    `mcp`: connections shared with other runs (a sagepy.mcp.pool.ConnectionPool of the caller's, which the
    run uses for the servers it holds and never closes); the run connects to every other server itself.
    """

    def __init__(self, *, out: Line | None = None, err: Line | None = None, store: Any = None,
                 durable: bool | None = None, trace_file: str | None = None, trace_stderr: bool = False,
                 telemetry: bool = True, mocks: Any = None, real_llm: bool = False,
                 stdin: TextIO | None = None, environ: Mapping[str, str] | None = None,
                 clock: Callable[[], float] | None = None, cassette: Any = None,
                 cancel: threading.Event | None = None,
                 people: Any = None, mcp: Any = None, model: Any = None) -> None:
        from ..runtime.agents import stderr_line, stdout_line
        self.out = out or stdout_line
        self.err = err or stderr_line
        self.store = store
        self.durable = durable
        self.trace_file = trace_file
        self.trace_stderr = trace_stderr
        self.telemetry = telemetry
        self.mocks = mocks
        self.real_llm = real_llm
        self.stdin = stdin
        self.environ = environ
        self.clock = clock
        self.cassette = cassette
        self.cancel = cancel if cancel is not None else WakingEvent()
        self.cancel_code = 130
        self.people = people
        self.mcp = mcp
        self.model = model
        self.claim: Any = None     # the worker's claim a resumed run executes under (sagepy.workers.child)
        self.leases: Any = None    # a LeaseKeeper shared with the other runs on the same store (a worker's)
        self.effects: Any = None   # the run's effects chain while it runs (set by the engine)

    def io_functions(self) -> dict[str, Callable[..., Any]]:
        """The run's own `io` builtins, for the parts of the world this host supplies."""
        functions: dict[str, Callable[..., Any]] = {}
        clock, environ, stdin = self.clock, self.environ, self.stdin
        if clock is not None:
            functions["now_ms"] = lambda: int(clock() * 1000)
            functions["now_s"] = lambda: int(clock())
        if environ is not None:
            from ..builtins.environ import env, env_or
            functions["env"] = lambda name: env(name, environ)
            functions["env_or"] = lambda name, default: env_or(name, default, environ)
        if stdin is not None:
            from ..builtins.process import read_all, read_line
            functions["read_line"] = lambda: read_line(stdin)
            functions["read_all"] = lambda: read_all(stdin)
        return functions

    def stop(self, code: int = 130) -> None:
        """Stop the run before its next step, reporting exit code `code` (a signal's 130 or 143)."""
        self.cancel_code = code
        self.cancel.set()

    def interrupt_form(self) -> bool:
        """Ctrl-C while a terminal form is open closes the form instead of stopping the run (SPEC §8.7)."""
        effects = self.effects
        return effects is not None and effects.interrupt_form()

    def unhandled(self, agent: str, error: Any) -> None:
        """Report the entry agent's uncaught error (SPEC §4.9), with its location."""
        from ..diagnostics import format_location_block
        self.err(format_location_block(*_located(error), unhandled_head(agent, error)))


def unhandled_head(agent: str, error: Any) -> str:
    code = error.code
    head = f"error[{code}]" if code else "error"
    return head + f": unhandled error in agent {error.agent or agent}: {error.display()}"


def _located(error: Any) -> tuple:
    return error.span if error.span else (None, None)

