"""`sage runs approve|deny|answer` (SPEC §17.4): a person's answer to a step a paused run waits on.

The decision (or the answer) replaces the step's `waiting` record, with who gave it (`$USER@<host>`) and when,
in the same transaction that makes a paused run resumable again: `sage run --resume RUN_ID` then replays it
and carries on.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store.base import Store

COMMANDS = ("approve", "deny", "answer")


def add_arguments(sub: Any, step_key: Any) -> None:
    """The three subcommands, on the `sage runs` subparsers `sub`; `step_key` parses PATH:N."""
    approve = sub.add_parser("approve", help="approve the call a paused run waits on",
                             description="Approve the call a paused run waits on, then resume the run with "
                                         "`sage run --resume RUN_ID`.")
    _common(approve, step_key)
    approve.add_argument("--always", action="store_true",
                         help="also approve that function for the rest of the run")
    deny = sub.add_parser("deny", help="deny the call a paused run waits on",
                          description="Deny the call a paused run waits on, then resume the run with "
                                      "`sage run --resume RUN_ID`: the call fails as denied.")
    _common(deny, step_key)
    deny.add_argument("--reason", metavar="TEXT", help="why (the program, or the model, is told; default: denied)")
    answer = sub.add_parser("answer", help="answer the question a paused run waits on",
                            description="Answer the question (`ask`) a paused run waits on, then resume the run "
                                        "with `sage run --resume RUN_ID`.")
    _common(answer, step_key)
    answer.add_argument("text", metavar="TEXT", help="the answer: what `ask` returns")


def _common(parser: argparse.ArgumentParser, step_key: Any) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    parser.add_argument("step", metavar="PATH:N", type=step_key,
                        help="the agent path and step number the pause message names (e.g. Main:3)")


def run_answer(args: argparse.Namespace, store: Store | None) -> int:
    """Record the answer; exit 1 with `error: …` when the run or the waiting step is not there."""
    from ..effects.people import NUMBERED, now_utc, person
    from ..runtime.durable import DurableExit, find_run
    from ..store.base import DONE, WAITING
    from ..store.queue import ENDED
    path, number = args.step
    command = args.runs_command
    kind = "io" if command == "answer" else "approval"
    try:
        if store is None:   # no store file yet: no runs
            raise DurableExit(1, f"error: no run {args.run_id} in this project" if args.run_id != "last"
                              else "error: no durable run in this project yet")
        run = find_run(store, args.run_id)
    except DurableExit as exc:
        sys.stderr.write(exc.message + "\n")
        return 1
    not_waiting = (f"error: {path} step {number} of run {run.id} is not waiting for "
                   f"{'an answer' if kind == 'io' else 'approval'}\n")
    ended = f"error: run {run.id} already ended with exit code {{}}\n"   # cancelled too, like `sage runs cancel`
    if run.status in ENDED:
        sys.stderr.write(ended.format(run.exit_code if run.exit_code is not None else 0))
        return 1
    step = next((s for s in store.steps(run.id) if s.path == path and s.number == number), None)
    if step is None or step.status != WAITING or step.kind != kind or (kind == "io" and step.target != "ask"):
        sys.stderr.write(not_waiting)
        return 1
    by, at = person(), now_utc()
    if command == "answer":
        step.outcome = args.text
        done = "answered"
    elif command == "approve":
        step.outcome = {"approved": True, "by": by, "at": at, **({"always": True} if args.always else {})}
        done = "approved"
    else:
        step.outcome = {"approved": False, "by": by, "at": at, "reason": args.reason or "denied", NUMBERED: False}
        done = "denied"
    step.status = DONE
    status = store.decide_step(run.id, step)
    if status is None:   # answered meanwhile
        sys.stderr.write(not_waiting)
        return 1
    if status in ENDED:   # cancelled meanwhile
        again = find_run(store, run.id)
        sys.stderr.write(ended.format(again.exit_code if again.exit_code is not None else 0))
        return 1
    if status == "queued":   # a worker was executing it: a worker resumes it
        print(f"{done} {path}:{number} of run {run.id}; the run is queued again for a worker")
    else:
        print(f"{done} {path}:{number} of run {run.id}; continue with `sage run --resume {run.id}`")
    return 0
