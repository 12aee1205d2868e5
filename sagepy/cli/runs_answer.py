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
    """Record the answer through the run service; exit 1 with `error: …` when the run or the waiting step is not
    there."""
    from ..decisions import Decision, person
    from ..runs import service
    path, number = args.step
    command = args.runs_command
    try:
        if command == "answer":
            done = service.answer(store, args.run_id, path, number, args.text)
        elif command == "approve":
            done = service.decide(store, args.run_id, path, number, Decision.approve(person(), args.always))
        else:
            done = service.decide(store, args.run_id, path, number, Decision.deny(person(), args.reason))
    except service.NoRun as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except service.NotWaiting as exc:
        sys.stderr.write(f"error: {path} step {number} of run {exc.run_id} is not waiting for "
                         f"{'an answer' if exc.question else 'approval'}\n")
        return 1
    except service.AlreadyEnded as exc:   # a cancelled run too, as `sage runs cancel` says
        sys.stderr.write(f"error: run {exc.run_id} already ended with exit code {exc.exit_code}\n")
        return 1
    if done.requeued:   # a worker was executing it: a worker resumes it
        print(f"{done.done} {path}:{number} of run {done.run_id}; the run is queued again for a worker")
    else:
        print(f"{done.done} {path}:{number} of run {done.run_id}; continue with `sage run --resume {done.run_id}`")
    return 0
