"""`sage runs list|show|resolve|prune` (SPEC §14) and `approve|deny|answer` (§17.4, runs_answer.py): the durable runs of the project in the current directory.

Runs, their journal steps and leases are read through the store interface (sagepy/store/base.py), from the
store of `[persistence]` (a SQLite file, or a PostgreSQL database that shows the runs of every machine). A project without that table has no durable runs. Reports go to stdout,
errors to stderr (exit 1); bad arguments are usage errors (exit 2).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from ..core.text import escape_surrogates
from ..secrecy import PASSWORD_MASK, shown_journal_value
from .groups import open_group

if TYPE_CHECKING:
    from ..store.base import RunRecord, StepRecord, Store

OUTCOME_WIDTH = 80


class RunsError(Exception):
    """A user-facing error of `sage runs`: str() is the message after `error: `."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommands of the `runs` parser that `sage` creates."""
    sub = parser.add_subparsers(dest="runs_command", metavar="COMMAND", parser_class=type(parser))
    listing = sub.add_parser("list", help="one line per run, newest first",
                             description="One line per durable run of the project, newest first: id, start "
                                         "time (UTC), status, exit code, entry file.")
    _add_format(listing)
    show = sub.add_parser("show", help="the journal of one run",
                          description="Each agent path of the run and its journaled steps: number, kind, "
                                      "target, safety class, status and outcome.")
    show.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    _add_format(show)
    resolve = sub.add_parser("resolve", help="record the outcome of the step a halted run stopped at",
                             description="Record what happened to the destructive step a halted run stopped "
                                         "at, then resume the run with `sage run --resume RUN_ID`.")
    resolve.add_argument("run_id", metavar="RUN_ID", help="a run id, or `last` for the newest run")
    resolve.add_argument("step", metavar="PATH:N", type=_step_key,
                         help="the agent path and step number the halt message names (e.g. Main:3)")
    outcome = resolve.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--ok", metavar="JSON", type=_json_value,
                         help="the call succeeded and returned this JSON value")
    outcome.add_argument("--failed", metavar="MESSAGE", help="the call failed with this message")
    outcome.add_argument("--not-run", action="store_true", help="the call did not happen: the next resume "
                                                                "performs it")
    prune = sub.add_parser("prune", help="delete old ended runs",
                           description="Delete completed and failed runs beyond the newest N; running, "
                                       "interrupted and halted runs are always kept.")
    prune.add_argument("--keep", metavar="N", type=_count, default=50, help="how many ended runs to keep "
                                                                             "(default 50)")
    from .queue import add_arguments as add_queue_arguments
    add_queue_arguments(sub)
    from .runs_answer import add_arguments as add_answer_arguments
    add_answer_arguments(sub, _step_key)


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="text (default) or one JSON array")


def _step_key(text: str) -> tuple[str, int]:
    path, colon, number = text.rpartition(":")
    if not colon or not path or not number.isdigit() or int(number) < 1:
        raise argparse.ArgumentTypeError(f"expected PATH:N (an agent path and a step number), found '{text}'")
    return path, int(number)


def _json_value(text: str) -> Any:
    from ..core.json_text import parse_json
    try:
        return parse_json(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, found '{text}'")
    return int(text)


def run_runs_command(args: argparse.Namespace) -> int:
    from .queue import COMMANDS as QUEUE_COMMANDS
    if args.runs_command in QUEUE_COMMANDS:
        from .queue import run_queue_command
        return run_queue_command(args.runs_command, args)
    from .runs_answer import COMMANDS as ANSWER_COMMANDS, run_answer
    opened = open_group(args, "runs", ("list", "show", "resolve", "prune", *QUEUE_COMMANDS, *ANSWER_COMMANDS))
    if isinstance(opened, int):
        return opened
    command, session = opened
    settings = session.settings
    if settings.store_diagnostics:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(settings.store_diagnostics) + "\n")
        return 1
    from ..session import store_open_failure
    from ..store.base import Busy, NewerFormat, Unavailable
    from ..store.config import StoreConfigError, open_store
    target = None
    handler = {"list": _list, "show": _show, "resolve": _resolve, "prune": _prune,
               **dict.fromkeys(ANSWER_COMMANDS, run_answer)}[command]
    try:
        target = settings.state_target()
        if target is None:
            from ..runtime.durable import NEEDS_PERSISTENCE
            sys.stderr.write(NEEDS_PERSISTENCE + "\n")
            return 1
        store = open_store(target, create=False)   # looking creates no SQLite file
        try:
            return handler(args, store)
        finally:
            if store is not None:
                store.close()
    except RunsError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except (NewerFormat, Busy, Unavailable, StoreConfigError) as exc:   # worded as `sage run` words them
        sys.stderr.write(store_open_failure(target, exc) + "\n")
        return 1


def find_run(store: Store | None, run_id: str) -> RunRecord:
    """The run `run_id` names (`last`: the newest run of the project), found by the run service; RunsError when
    there is none."""
    from ..runs.service import NoRun, find_run as find_service_run
    try:
        return find_service_run(store, run_id)
    except NoRun as exc:
        raise RunsError(str(exc)) from None


# ---------------------------------------------------------------- list

def _list(args: argparse.Namespace, store: Store | None) -> int:
    runs = store.list_runs() if store is not None else []
    now = time.time()
    if args.format == "json":
        infos = store.run_infos() if store is not None else {}
        usage = store.usage_records() if hasattr(store, "usage_records") else {}
        print(escape_surrogates(json.dumps([_run_json(run, now, infos.get(run.id), usage.get(run.id))
                                            for run in runs], ensure_ascii=False)))
        return 0
    if not runs:
        print("no durable runs yet")
        return 0
    for line in _run_lines(runs, now):
        print(line)
    return 0


def _run_lines(runs: list[RunRecord], now: float) -> list[str]:
    """id, start time, status, exit code and entry file of each run, in aligned columns."""
    from ..store.leases import shown_status
    from ..store.queue import QUEUED
    rows = [(run.id, "-".ljust(19) if run.status == QUEUED else _utc(run.started_at), shown_status(run, now),
             "-" if run.exit_code is None else str(run.exit_code), run.entry) for run in runs]
    status_width = max(len(row[2]) for row in rows)
    code_width = max(len(row[3]) for row in rows)
    return [f"{rid}  {started}  {status:<{status_width}}  {code:>{code_width}}  {entry}"
            for rid, started, status, code, entry in rows]


def _run_json(run: RunRecord, now: float, info: Any = None, usage: Any = None) -> dict[str, Any]:
    """The object of `list --format json`; `info`: the run's queue row (store.queue.RunInfo), if any;
    `usage`: its usage record (SPEC §23), if any."""
    from ..llm.usage import summary_of
    from ..store.leases import shown_status
    from ..store.queue import QUEUED, RunInfo
    info = info or RunInfo()
    return {"id": run.id, "started_at": None if run.status == QUEUED else _utc(run.started_at, iso=True),
            "status": shown_status(run, now), "exit_code": run.exit_code, "entry": run.entry,
            "queue": info.queue, "version": info.version or None, "host": run.lease_host or info.host,
            "recoveries": info.recoveries, "usage": summary_of(usage if usage is not None else {})}


def _utc(stamp: float, iso: bool = False) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ" if iso else "%Y-%m-%d %H:%M:%S", time.gmtime(stamp))


# ---------------------------------------------------------------- show

def _show(args: argparse.Namespace, store: Store | None) -> int:
    run = find_run(store, args.run_id)
    assert store is not None   # find_run found the run in it
    from ..store.base import USAGE_PATH
    steps = store.steps(run.id)
    usage = next((step.outcome for step in steps if step.path == USAGE_PATH), None)
    steps = [step for step in steps if step.path != USAGE_PATH]
    if args.format == "json":
        print(escape_surrogates(json.dumps([_step_json(step) for step in steps], ensure_ascii=False)))
        return 0
    print(_run_lines([run], time.time())[0])
    if usage is not None:
        from ..llm.usage import models_line, summary_of, usage_line
        print(usage_line(summary_of(usage)))
        print(models_line(usage))
    if not steps:
        print("  (no journaled steps)")
    path = None
    for step in steps:
        if step.path != path:
            path = step.path
            print(path)
        line = f"  {step.number} {step.kind} {step.target} {step.safety} {step.status}"
        if step.status != "started":
            shown = shown_journal_value(step.kind, step.target, step.outcome)
            line += " " + (PASSWORD_MASK if shown is PASSWORD_MASK
                           else _cut(escape_surrogates(json.dumps(shown, ensure_ascii=False))))
        print(line)
    return 0


def _step_json(step: StepRecord) -> dict[str, Any]:
    return {"path": step.path, "step": step.number, "kind": step.kind, "target": step.target,
            "args_hash": step.args_hash, "class": step.safety, "status": step.status,
            "outcome": shown_journal_value(step.kind, step.target, step.outcome)}


def _cut(text: str) -> str:
    return text if len(text) <= OUTCOME_WIDTH else text[:OUTCOME_WIDTH - 1] + "…"


# ---------------------------------------------------------------- resolve

def _resolve(args: argparse.Namespace, store: Store | None) -> int:
    from ..runs import service
    path, number = args.step
    if args.not_run:
        resolution = service.Resolution.not_run()
    elif args.failed is not None:
        resolution = service.Resolution.failed(args.failed)
    else:
        resolution = service.Resolution.returned(args.ok)
    try:
        resolved = service.resolve(store, args.run_id, path, number, resolution)
    except service.NoRun as exc:
        raise RunsError(str(exc)) from None
    except service.NotHalted as exc:
        raise RunsError(f"run {exc.run_id} is {exc.status}, not halted: only the step a halted run stopped "
                        "at can be resolved") from None
    except service.NoSuchStep as exc:
        raise RunsError(f"run {exc.run_id} has no step {path}:{number} (`sage runs show {exc.run_id}` lists its "
                        "steps)") from None
    except service.NotUnknown as exc:
        raise RunsError(f"step {path}:{number} of run {exc.run_id} is already {exc.status}: only a step whose "
                        "outcome is unknown (started) can be resolved") from None
    rid = resolved.run_id
    done = "not run: the next resume performs it" if resolved.done == "not run" else resolved.done
    if resolved.requeued:   # a worker was executing it: a worker resumes it
        print(f"recorded {path}:{number} of run {rid} as {done}; the run is queued again for a worker")
    else:
        print(f"recorded {path}:{number} of run {rid} as {done}; continue with `sage run --resume {rid}`")
    return 0


# ---------------------------------------------------------------- prune

def _prune(args: argparse.Namespace, store: Store | None) -> int:
    pruned = store.prune_runs(args.keep) if store is not None else []
    print(f"pruned {len(pruned)} run{'' if len(pruned) == 1 else 's'}")
    return 0
