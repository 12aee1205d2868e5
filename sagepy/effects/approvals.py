"""People in the loop (SPEC §17): the approval a call needs before it is made, and the questions of `ask`.

A call that the `[approvals]` policy covers gets a step of its own, kind `approval`, built together with the
call's step and numbered just before it (`People.gate`), so that the calls a model asks for in one answer get
their numbers in the model's order. The approvals layer, first in the chain, takes that decision before
anything else happens to the call — before its mock, its intent record and its timeout:

the decision step goes down the chain: under `sage test` the mocks layer answers it from the `mock approve`
queue; otherwise the journal replays a recorded decision, and the real layer asks `Answerers.approve`:
approved for the rest of the run already (`a`, `--always`), else a person at the terminal; when no one can
answer, `NoOneToAsk` reaches the journal, which pauses a durable run, and without a journal that is a
denial by `policy`.

An approved call goes on down the chain; a denied one raises `Tool error: <Tool.fn> was denied: <reason>`,
which a model's tool loop words `error: a person denied this call: <reason>` for the model. `ask` follows the
same order as an `io` step (`ask_question`). Decisions and answers are traced, never arguments or answers.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from ..core.errors import SageRaise
from ..core.values import ErrorValue
from .chain import Perform
from ..decisions import NUMBERED, Decision, person, takes_number
from .people import NoOneToAsk, Terminal
from .step import ApprovalStep, CallStep, IoStep, Step, next_number

if TYPE_CHECKING:
    from ..approval_policy import ApprovalPolicy

NO_ONE_TO_APPROVE = "no one could approve it (no terminal; a durable run would pause)"
NO_ONE_TO_ASK = "no one to ask (no terminal; a durable run would pause)"


class Question:
    """What an `ask` step asks of a person: who answers it, and who did when it was answered live (who gave a
    replayed answer is not journaled)."""

    __slots__ = ("answerers", "by")

    def __init__(self, answerers: "Answerers") -> None:
        self.answerers = answerers
        self.by: str | None = None


class ApprovalRequest:
    """What an approval step asks: the call (its Sage name, the tool and function as traced, its arguments as
    JSON data) and who asked for it (`program` or `model`)."""

    __slots__ = ("label", "tool", "fn", "arguments", "source", "answerers")

    def __init__(self, label: str, tool: str, fn: str, arguments: Any, source: str, answerers: "Answerers") -> None:
        self.label = label
        self.tool = tool
        self.fn = fn
        self.arguments = arguments
        self.source = source
        self.answerers = answerers


class Answerers:
    """Who answers outside the mock queues, for one run: the functions approved for the rest of it, and the
    terminal."""

    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal
        self.always: dict[str, str] = {}   # Tool.fn -> who approved it for the rest of the run
        self.lock = threading.Lock()

    def approve(self, step: Step) -> dict:
        """The real layer's answer to an approval step."""
        request = step.person
        with self.lock:
            by = self.always.get(request.label)
        if by is not None:
            return Decision.approve(by, always=True).outcome()
        if not self.terminal.available:
            raise NoOneToAsk(request.arguments)
        from ..core.json_text import compact_json
        return self.terminal.approve(step.agent, request.label, compact_json(request.arguments), request.source)

    def learn(self, label: str, decision: dict) -> None:
        """A decision for the rest of the run (made now, or replayed from the journal)."""
        if decision.get("approved") and decision.get("always"):
            with self.lock:
                self.always.setdefault(label, str(decision.get("by", "")))

    def ask(self, step: Step) -> str:
        """The real layer's answer to `ask`."""
        question = step.arguments[0]
        if not self.terminal.available:
            raise NoOneToAsk(question)
        answer = self.terminal.ask(step.agent, question)
        step.person.by = person()
        return answer


class People:
    """The approvals of one run or test: the policy and the answerers."""

    def __init__(self, policy: ApprovalPolicy | None, tracer: Any, worker: bool = False,
                 answerer: Any = None) -> None:
        """`answerer`: who is asked instead of the terminal (a Host's `people`, with the Terminal's methods)."""
        self.policy = policy
        self.tracer = tracer
        self.answerers = Answerers(answerer if answerer is not None else
                                   Terminal(policy.prompt if policy is not None else "auto", worker))

    @property
    def active(self) -> bool:
        """Whether any call can need approval (else the chain has no approvals layer)."""
        return self.policy is not None and bool(self.policy.rules)

    def gate(self, ctx: Any, names: tuple[str, ...], tool: str, fn: str, label: str, source: str,
             arguments: Callable[[], Any], safety: Callable[[], str]) -> ApprovalStep | None:
        """The approval step a call needs, built before the call's own step so that it is numbered first; None
        when the call needs none. `names`: the keys the tool may be known by in `[approvals]`."""
        if self.policy is None or not self.policy.needs(names, fn, source, safety):
            return None
        request = ApprovalRequest(label, tool, fn, arguments(), source, self.answerers)
        return ApprovalStep(target=label, arguments={"arguments": request.arguments, "source": source}, agent=ctx,
                            person=request, number=next_number(ctx))

    # ---------------------------------------------------------------- ask (SPEC §17.2)
    def ask_question(self, ctx: Any, question: str, perform: Perform) -> str:
        """`ask(question)`: an `io` step down the chain (the mocks layer answers it under `sage test`, the
        journal replays or pauses, the real layer asks the terminal)."""
        step = IoStep(target="ask", arguments=[question], agent=ctx, person=Question(self.answerers),
                      number=next_number(ctx))
        self.tracer.emit(ctx, "ask.request", {})
        try:
            answer = perform(step)
        except NoOneToAsk:
            raise SageRaise(ErrorValue("Agent", NO_ONE_TO_ASK)) from None
        self.tracer.emit(ctx, "ask.answer", {"by": step.person.by or "journal"})
        return answer


class ApprovalLayer:
    """First in the chain when the policy covers some call: decides each call's approval step, then lets the
    call go on or denies it."""

    def __init__(self, people: People) -> None:
        self.people = people

    def perform(self, step: Step, next: Perform) -> Any:
        if isinstance(step, ApprovalStep):   # a decision taken on its own, ahead of its call (Effects.decide)
            return self._decide(step, next)
        approval = step.approval if isinstance(step, CallStep) else None
        if approval is None:
            return next(step)
        decision = step.decision if step.decision is not None else self._decide(approval, next)
        step.decision = decision
        if takes_number(decision):
            step.take_number()
        if decision.get("approved"):
            return next(step)
        request = approval.person
        reason = str(decision.get("reason") or "denied")
        message = f"{request.label} was denied: {reason}"
        if request.source == "model":   # the tool message the model reads (SPEC §17.1)
            raise SageRaise(ErrorValue("Tool", message, display_text=f"a person denied this call: {reason}"))
        raise SageRaise(ErrorValue("Tool", message))

    def _decide(self, approval: ApprovalStep, next: Perform) -> dict:
        people = self.people
        request = approval.person
        ctx = approval.agent
        people.tracer.emit(ctx, "approval.request", {"tool": request.tool, "fn": request.fn,
                                                     "source": request.source})
        try:
            decision = next(approval)
        except NoOneToAsk:
            decision = Decision.deny("policy", NO_ONE_TO_APPROVE).outcome()
        if not isinstance(decision, dict):   # a record written by hand: read as the decision it names
            decision = Decision.from_outcome(decision).outcome()
            decision.pop(NUMBERED, None)   # … numbered as every denial was before denials took no number
        people.answerers.learn(request.label, decision)
        event = {"tool": request.tool, "fn": request.fn, "approved": bool(decision.get("approved")),
                 "by": decision.get("by")}
        if not decision.get("approved"):
            event["reason"] = decision.get("reason") or "denied"
        people.tracer.emit(ctx, "approval.decision", event)
        return decision
