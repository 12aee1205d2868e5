"""What each page of the console shows, read from the project's store: plain data for the templates, every
value from a run as text (the templates escape it) and secrets masked."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..secrecy import MASK, mask_passwords, mask_urls
from ..store.base import USAGE_PATH, RunRecord, StepRecord
from ..store.leases import FRESH_SECONDS, shown_status
from ..store.queue import DEFAULT_QUEUE, QUEUED, RunInfo

PAGE_SIZE = 50
STEPS_PAGE = 500   # journal steps on one page of a run
STATUSES = ("queued", "running", "interrupted", "paused", "halted", "completed", "failed", "cancelled")
SECRET_READS = ("env", "env_or")   # the journal keeps no variable name, only the value read: never shown


@dataclass
class RunRow:
    id: str
    status: str
    exit_code: int | None
    entry: str
    queue: str
    host: str
    started: str
    duration: str
    usage: str
    cost: str


@dataclass
class StepRow:
    path: str
    number: int
    kind: str
    target: str
    safety: str
    status: str
    args_hash: str
    arguments: str
    outcome: str
    waiting: bool


@dataclass
class RunsPage:
    rows: list[RunRow]
    total: int
    page: int
    pages: int
    filters: dict[str, str]
    queues: list[str]
    hosts: list[str]


@dataclass
class RunPage:
    run: RunRow
    arguments: list[str]
    version: str
    recoveries: int
    steps: list[StepRow]
    output: list[tuple[int, str, str]]
    usage: dict[str, Any] | None
    trace: str | None
    live: bool
    waiting: list[StepRow] = field(default_factory=list)
    total_steps: int = 0
    page: int = 1
    pages: int = 1
    first_step: int = 1


def utc(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def usage_records(store: Any) -> dict[str, Any]:
    """Run id -> its journaled usage record (SPEC §23), for every run of the project that has one."""
    reader = getattr(store, "usage_records", None)
    return reader() if reader is not None else {}


def usage_summary(record: Any) -> dict[str, Any] | None:
    """A usage record as `RunOutcome.usage` gives it (`turns`, `input_tokens`, `output_tokens`, `cost`…); None
    for a run without one."""
    if record is None:
        return None
    from ..llm.usage import summary_of
    return summary_of(record) or None


def _usage_text(usage: dict[str, Any] | None) -> tuple[str, str]:
    if not usage:
        return "-", "-"
    tokens = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out"
    cost = usage.get("cost")
    return tokens, "-" if cost is None else f"${cost:.4f}"


def run_row(run: RunRecord, info: RunInfo | None, now: float, usage: dict[str, Any] | None = None) -> RunRow:
    status = shown_status(run, now)
    info = info or RunInfo()
    duration = _duration(now - run.started_at) if status == "running" else "-"
    tokens, cost = _usage_text(usage)
    return RunRow(run.id, status, run.exit_code, run.entry, info.queue, run.lease_host or info.host or "-",
                  "-" if run.status == QUEUED else utc(run.started_at), duration, tokens, cost)


def listing(store: Any) -> list[tuple[RunRecord, str, str | None]]:
    """Every run of the project, newest first, with its queue and the host of its last owner."""
    if store is None:
        return []
    return [(run, queue or DEFAULT_QUEUE, run.lease_host or host) for run, queue, host in store.run_list()]


def runs_page(store: Any, filters: dict[str, str], page: int) -> RunsPage:
    now = time.time()
    wanted_status = filters.get("status", "")
    queue, host, entry = filters.get("queue", ""), filters.get("host", ""), filters.get("entry", "").lower()
    rows = listing(store)
    queues = sorted({q for _, q, _ in rows})
    hosts = sorted({h for _, _, h in rows if h})
    chosen = []
    for run, run_queue, run_host in rows:
        if wanted_status and shown_status(run, now) != wanted_status:
            continue
        if (queue and run_queue != queue) or (host and run_host != host):
            continue
        if entry and entry not in run.entry.lower() and entry not in run.id:
            continue
        chosen.append((run, run_queue, run_host))
    pages = max(1, -(-len(chosen) // PAGE_SIZE))
    page = min(max(1, page), pages)
    records = usage_records(store) if chosen else {}
    shown = [run_row(run, RunInfo(queue=run_queue, host=run_host), now, usage_summary(records.get(run.id)))
             for run, run_queue, run_host in chosen[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]]
    return RunsPage(shown, len(chosen), page, pages, filters, queues, hosts)


def shown_json(value: Any, limit: int | None = None) -> str:
    """A recorded value as compact JSON, with passwords of URLs and secret URL parameters masked."""
    text = mask_urls(mask_passwords(json.dumps(value, ensure_ascii=False, separators=(",", ":"))))
    if limit is not None and len(text) > limit:
        return text[:limit - 1] + "…"
    return text


def step_row(step: StepRecord) -> StepRow:
    waiting = step.status == "waiting"
    arguments = ""
    outcome = "" if step.status == "started" else shown_json(step.outcome)
    if waiting:   # a waiting record keeps what it asks: the call's arguments, or the question
        arguments, outcome = shown_json(step.outcome), ""
    elif step.kind == "io" and step.target in SECRET_READS and step.status != "started":
        outcome = MASK
    return StepRow(step.path, step.number, step.kind, step.target, step.safety, step.status, step.args_hash[:12],
                   arguments, outcome, waiting)


def trace_file(root: str, run_id: str) -> str | None:
    """The run's trace, when one was written where the console looks: `.sage/traces/<run id>.ndjson` (or
    `.jsonl`)."""
    for suffix in (".ndjson", ".jsonl"):
        path = os.path.join(root, ".sage", "traces", run_id + suffix)
        if os.path.isfile(path):
            return path
    return None


def run_page(store: Any, root: str, run: RunRecord, page: int = 1) -> RunPage:
    """The run's page; its journal paged STEPS_PAGE steps at a time (the steps waiting for a person always)."""
    info = store.run_info(run.id)
    now = time.time()
    records = store.steps(run.id)
    usage = usage_summary(next((s.outcome for s in records if s.path == USAGE_PATH), None))
    row = run_row(run, info, now, usage)
    pages = max(1, -(-len(records) // STEPS_PAGE))
    page = min(max(1, page), pages)
    steps = [step_row(step) for step in records[(page - 1) * STEPS_PAGE:page * STEPS_PAGE]]
    waiting = [step_row(step) for step in records if step.status == "waiting"]
    output = output_lines(store, run.id)
    live = row.status in ("running", "queued")
    return RunPage(row, list((info.args if info is not None else None) or []), info.version if info else "",
                   info.recoveries if info else 0, steps, output, usage, trace_file(root, run.id), live,
                   waiting, len(records), page, pages, (page - 1) * STEPS_PAGE + 1)


def output_lines(store: Any, run_id: str, after: int = 0) -> list[tuple[int, str, str]]:
    """The run's stored output lines numbered above `after`: (number, stream, text with secrets masked)."""
    return [(n, stream, mask_urls(mask_passwords(line))) for n, stream, line in store.output(run_id, after)]


@dataclass
class Worker:
    host: str
    pid: int
    runs: list[str]
    heartbeat_age: str


def workers(store: Any) -> list[Worker]:
    """The processes holding a fresh lease on a run of the project, by host and process id."""
    found: dict[tuple[str, int], Worker] = {}
    now = time.time()
    for run in store.list_runs() if store is not None else []:
        if run.lease_pid is None or run.lease_heartbeat is None or shown_status(run, now) != "running":
            continue
        age = run.lease_age if run.lease_age is not None else now - run.lease_heartbeat
        if age >= FRESH_SECONDS:
            continue
        key = (run.lease_host or "?", run.lease_pid)
        worker = found.setdefault(key, Worker(key[0], key[1], [], f"{age:.1f} s"))
        worker.runs.append(run.id)
    return sorted(found.values(), key=lambda w: (w.host, w.pid))


def fingerprint(store: Any, run_id: str | None) -> str:
    """What a page's live updates compare: changes whenever anything that page shows may have changed."""
    if store is None:
        return ""
    now = time.time()
    if run_id is None:
        return "|".join(f"{r.id}:{shown_status(r, now)}:{r.exit_code}:{h}" for r, _, h in listing(store))
    run = store.get_run(run_id)
    if run is None:
        return ""
    steps = store.steps(run_id)   # the output is not part of it: new lines reach the page on their own
    return f"{shown_status(run, now)}:{run.exit_code}:{len(steps)}:" \
           f"{sum(1 for s in steps if s.status != 'started')}:{run.lease_host}"
