"""Live agents: threads, mailboxes, paths (SPEC §4.5–4.6, §14) and the per-run state they share; the
lifecycle an agent's thread runs is in lifecycle.py.

Each live agent runs in its own thread with a large stack. Agents stop cooperatively: `AgentInstance.check()`
is called at loop iterations, calls and blocking points and raises `AgentCancelled` once a stop was requested.
"""
from __future__ import annotations

import collections
import sys
import threading
import time
from typing import Any, Callable

from ..core.errors import AgentCancelled, SageRaise, TestAbort
from ..core.text import printable_text
from ..core.values import UNIT, ErrorValue

MAILBOX_CAPACITY = 32
CALL_DEPTH_LIMIT = 10_000


class YieldSignal(BaseException):
    """`yield(v)`: fixes the agent's result and ends the handler."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class MailboxClosed(Exception):
    pass


class Mailbox:
    """A bounded FIFO of (message, sender, the sender's send number). `put` blocks while full; both ends give
    up once closed. The send number (what a receiver's journal names, SPEC §14) is the sender's count of
    messages put so far, sends and replies alike; a message from no agent (a test block) has none."""

    def __init__(self) -> None:
        self.items: collections.deque = collections.deque()
        self.aside: list[tuple] = []   # taken out of order by a replaying receiver: next in line
        self.closed = False
        self.cond = threading.Condition()

    def put(self, item: tuple, waiter: "AgentInstance | None") -> None:
        """Append (message, sender)."""
        with self.cond:
            while len(self.items) >= MAILBOX_CAPACITY and not self.closed:
                self.cond.wait(0.05)
                if waiter is not None:
                    waiter.check()
            if self.closed:
                raise MailboxClosed()
            message, sender = item
            self.items.append((message, sender, None if sender is None else sender.next_send()))
            self.cond.notify_all()

    def get(self, waiter: "AgentInstance | None", match: Callable[[tuple], bool] | None = None) -> tuple:
        """The next item; with `match`, the next item it accepts (a resumed run takes messages in their
        recorded order, SPEC §14), the ones before it set aside for the next calls."""
        with self.cond:
            if self.aside:
                for i, item in enumerate(self.aside):
                    if match is None or match(item):
                        del self.aside[i]
                        return item
            while True:
                while not self.items:
                    if self.closed:
                        raise MailboxClosed()
                    self.cond.wait(0.05)
                    if waiter is not None and waiter.cancelled:
                        raise AgentCancelled()
                item = self.items.popleft()
                self.cond.notify_all()
                if match is None or match(item):
                    return item
                self.aside.append(item)

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


class Runtime:
    """State of one program run (or one test): output, agent numbering (the displayed `A#n` of SPEC §4.5;
    paths are kept by the agents themselves), live agents, shutdown. `store` holds the `@persistent` fields
    (a fresh in-memory one by default); `program_args` are what `args()` returns."""

    def __init__(self, out: Callable[[str], None] | None = None, err: Callable[[str], None] | None = None,
                 store: Any = None, program_args: list[str] | None = None) -> None:
        self.write_out = out or stdout_line
        self.write_err = err or stderr_line
        self.counters: dict[str, int] = {}
        self.lock = threading.Lock()
        self.agents: list[AgentInstance] = []
        self.shutting_down = False
        self.effects: Any = None
        self.test_failure: Any = None   # the first assertion or mock-conversion failure of a test
        self.mocks: Any = None          # a test's mock queues, which its `mock` statements fill (effects.mocks)
        if store is None:
            from .persistence import StateStore
            store = StateStore()
        self.store = store
        self.program_args = list(program_args or [])
        self.replay_horizon: dict[str, int] = {}   # a resumed run: agent path -> its last recorded step

    def next_number(self, name: str) -> int:
        with self.lock:
            n = self.counters.get(name, 0) + 1
            self.counters[name] = n
            return n

    def register(self, agent: "AgentInstance") -> None:
        with self.lock:
            self.agents.append(agent)

    def shutdown(self, grace_seconds: float = 2.0) -> None:
        """Close every mailbox; give agents idle in their message loop up to `grace_seconds` to run on stop."""
        self.shutting_down = True
        with self.lock:
            agents = list(self.agents)
        for a in agents:
            a.mailbox.close()
        deadline = time.monotonic() + grace_seconds
        for a in agents:
            if a.thread is not None and a.thread is not threading.current_thread():
                a.thread.join(max(0.0, deadline - time.monotonic()))

    def stop_all(self) -> None:
        with self.lock:
            agents = list(self.agents)
        for a in agents:
            a.request_stop()

    def unawaited_failures(self) -> list["AgentInstance"]:
        with self.lock:
            agents = list(self.agents)
        return [a for a in agents if a.done.is_set() and a.error is not None and not a.awaited
                and not a.quiet_failure]


_out_lock = threading.Lock()


def _write_line(stream: Any, text: str) -> None:
    # A Sage string can hold a lone surrogate (json_decode of "\\ud800"); no encoding can write one, and the
    # stream's error would drop the whole line: it is printed as U+FFFD instead.
    text = printable_text(text)
    with _out_lock:
        try:
            stream.write(text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away (`sage run … | head`): drop output
            pass


def stdout_line(text: str) -> None:
    _write_line(sys.stdout, text)


def stderr_line(text: str) -> None:
    _write_line(sys.stderr, text)


class AgentInstance:
    """One live agent. It is also the activation context of every frame it runs (frame slot 0)."""

    def __init__(self, runtime: Runtime, agent: Any, number: int, parent: "AgentInstance | None",
                 path: str | None = None) -> None:
        self.runtime = runtime
        self.agent = agent            # the compiled agent (sagepy.runtime.compile.CompiledAgent) or None
        self.name = agent.name if agent is not None else "test"
        self.number = number
        self.display_name = f"{self.name}#{number}"
        # SPEC §14: the same on every execution of the program (the entry agent or a test: its name alone)
        self.path = path if path is not None else self.name
        self.steps = 0                # nondeterministic steps performed so far: the last step's number (SPEC §14)
        self.summons = 0              # agents summoned so far: k of the next child's path
        self.sends = 0                # messages sent so far (send, reply): what a receiver's journal names
        # a resumed run replays this agent up to this step: its output is suppressed until then (SPEC §14)
        self.replay_until = runtime.replay_horizon.get(self.path, 0)
        self.parent = parent
        self.fields: dict[str, Any] = {}
        self.mailbox = Mailbox()
        self.thread: threading.Thread | None = None
        self.cancelled = False
        self.cancel_event = threading.Event()
        self.result_ready = threading.Event()   # result fixed (await may return)
        self.done = threading.Event()           # whole lifecycle finished
        self.result: Any = UNIT
        self.error: ErrorValue | None = None
        self.abort: TestAbort | None = None
        self.awaited = False
        self.quiet_failure = False
        self.depth = 0
        self.current_sender: AgentInstance | None = None
        self.in_message = False
        self.llm_overrides: dict | None = None   # a supervisor child's `handler Infer: H`

    def __repr__(self) -> str:
        return f"<agent {self.display_name}>"

    def next_send(self) -> int:
        self.sends += 1
        return self.sends

    def next_step(self) -> int:
        """The number of this agent's next step (sagepy.effects.step): asked by the code that decides that an
        operation is one."""
        self.steps += 1
        return self.steps

    def child_path(self, agent_name: str) -> str:
        """The path of the next agent this one summons: `<path>/<Agent>#<k>`, k counting its summons."""
        self.summons += 1
        return f"{self.path}/{agent_name}#{self.summons}"

    # ---- cooperative stopping
    def check(self) -> None:
        if self.cancelled:
            raise AgentCancelled()

    def request_stop(self) -> None:
        self.cancelled = True
        self.cancel_event.set()
        self.mailbox.close()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:   # past threading's limit (some 292 years) a wait is an OverflowError: that long is forever
            self.cancel_event.wait(min(seconds, threading.TIMEOUT_MAX))
        self.check()

    # ---- results
    def wait_result(self, waiter: "AgentInstance | None", timeout_s: float | None) -> bool:
        """Block until the result is fixed; False on timeout. The waiter's own stop request interrupts."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            remaining = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if remaining <= 0:
                return self.result_ready.is_set()
            if self.result_ready.wait(remaining):
                return True
            if waiter is not None:
                waiter.check()


def error_of(exc: BaseException) -> ErrorValue:
    if isinstance(exc, SageRaise):
        return exc.error
    return ErrorValue("Runtime", f"internal error: {type(exc).__name__}: {exc}")
