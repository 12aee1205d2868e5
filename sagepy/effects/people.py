"""A person at the terminal (SPEC §17.3 item 2): the approval prompt and the question of `ask`.

sagepy asks on stderr and reads stdin, one prompt at a time across all agents (the lock elicitation forms take
too, §8.7), with the status line put away meanwhile. While it waits it watches the asking agent: Ctrl-C stops
the run as it does elsewhere, and an agent told to stop stops waiting at once. When nobody can answer here
(no terminal, a worker's run, `[approvals] prompt = "never"`), `NoOneToAsk` goes up to the journal, which
pauses a durable run, or to the approvals layer, which denies the call.
"""
from __future__ import annotations

import sys
from typing import Any, TextIO

from ..core.errors import AgentCancelled, SageRaise
from ..core.values import ErrorValue
from ..decisions import Decision, person
from ..terminal import wait_for_line




# A denial records `"call_step": false`: the denied call, never made, took no step number, so the step after
# the approval is the next number (SPEC §17.1). A denial without it was recorded by a sagepy that gave the call
# its number all the same: replayed, the call takes that number again, so that the steps after it keep theirs.
class NoOneToAsk(BaseException):
    """No one can answer here and now. `request` is what a waiting journal record keeps: the call's arguments
    (an approval) or the question (`ask`). A BaseException: no layer between the answerer and the journal
    may take it for a failure of the step."""

    def __init__(self, request: Any) -> None:
        super().__init__(request)
        self.request = request


class Terminal:
    """The answerer at the terminal; `available` says whether one may be asked."""

    def __init__(self, prompt_setting: str = "auto", worker: bool = False, stdin: TextIO | None = None,
                 stderr: TextIO | None = None) -> None:
        self.prompt_setting = prompt_setting
        self.worker = worker
        self.stdin = stdin
        self.stderr = stderr

    def _in(self) -> TextIO:
        return self.stdin if self.stdin is not None else sys.stdin

    def _err(self) -> TextIO:
        return self.stderr if self.stderr is not None else sys.stderr

    @property
    def available(self) -> bool:
        return self.prompt_setting != "never" and not self.worker and _isatty(self._in()) and _isatty(self._err())

    def approve(self, ctx: Any, label: str, arguments_json: str, source: str) -> dict:
        """Ask whether to make the call: `{"approved", "by", "at", "always"?, "reason"?}`."""
        from ..mcp.elicitation import FORM_LOCK
        from ..progress import paused
        question = (f"approve {label} {arguments_json} (asked by the {source})? "
                    "[y]es / [n]o / [a]lways in this run: ")
        with FORM_LOCK, paused():
            while True:
                line = self._line(ctx, question)
                answer = "n" if line is None else line.strip().lower()
                if answer in ("y", "yes", "a", "always"):
                    return Decision.approve(person(), always=answer in ("a", "always")).outcome()
                if answer in ("n", "no"):
                    reason = None if line is None else self._line(ctx, "reason (optional): ")
                    reason = (reason or "").strip() or None
                    return Decision.deny(person(), reason).outcome()

    def ask(self, ctx: Any, question: str) -> str:
        """One line of text, without its newline; end of input fails as `read_line` does."""
        from ..mcp.elicitation import FORM_LOCK
        from ..progress import paused
        with FORM_LOCK, paused():
            line = self._line(ctx, f"{question} ")
        if line is None:
            raise SageRaise(ErrorValue("Agent", "end of input"))
        return line

    def _line(self, ctx: Any, prompt: str) -> str | None:
        """One line typed after `prompt`, or None at end of input."""
        err = self._err()
        err.write(prompt)
        err.flush()
        stream = self._in()
        if not wait_for_line(stream, lambda: ctx is not None and ctx.cancelled):
            raise AgentCancelled()
        line = stream.readline()
        if line == "":
            err.write("\n")
            err.flush()
            return None
        return line.rstrip("\r\n")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
