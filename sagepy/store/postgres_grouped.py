"""Grouped writes in the PostgreSQL store (SPEC §14): the statements that write what the journals of runs held
back — outcome records and output lines, each run's fenced by its own lease — as one statement per table over
arrays (`unnest`), so that a group of any size, of one run or of a thousand, costs the same few statements, all
sent in one round trip (PostgresStore's `_round_trip`).

A row is written only while its run's lease carries the token the row names: the statement locks the run's row
FOR SHARE until the transaction ends, so a takeover waits for it, and a run taken over meanwhile gets nothing.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..core.json_text import compact_json
from ..core.text import storable_line
from .base import Pending, StepRecord

STEP_COLUMNS = "path, number, kind, target, args_hash, safety, status, outcome"
# an upsert's update of a record (a `started` intent replaced by its outcome, a usage record written over)
UPDATE_STEP = ("DO UPDATE SET kind = excluded.kind, target = excluded.target, args_hash = excluded.args_hash, "
               "safety = excluded.safety, status = excluded.status, outcome = excluded.outcome, "
               "token = excluded.token")


def _fenced_by(s: str) -> str:
    return (f"WHERE EXISTS (SELECT 1 FROM {s}.runs r WHERE r.project = %s AND r.id = u.run_id "
            "AND r.lease_token = u.token FOR SHARE)")


def steps_statement(s: str, project: str, records: list[tuple[str, str | None, StepRecord]]) -> tuple[str, tuple, int]:
    """The upsert of `records` (run id, the token its lease must carry, record), a record met twice (the run's
    usage, written over) as its last; and how many rows it writes while every lease holds."""
    latest = {(run_id, step.path, step.number): (run_id, token, step) for run_id, token, step in records}
    columns: list[list[Any]] = [[] for _ in range(10)]
    for run_id, token, step in latest.values():
        for column, value in zip(columns, (run_id, token, step.path, step.number, step.kind, step.target,
                                           step.args_hash, step.safety, step.status, compact_json(step.outcome))):
            column.append(value)
    query = (f"INSERT INTO {s}.steps (project, run_id, {STEP_COLUMNS}, token) SELECT %s, u.run_id, u.path, "
             "u.number, u.kind, u.target, u.args_hash, u.safety, u.status, u.outcome, u.token FROM unnest(%s::text[], "
             "%s::text[], %s::text[], %s::integer[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
             "%s::text[]) AS u(run_id, token, path, number, kind, target, args_hash, safety, status, outcome) "
             f"{_fenced_by(s)} ON CONFLICT (project, run_id, path, number) {UPDATE_STEP}")
    return query, (project, *columns, project), len(latest)


def output_statement(s: str, project: str, lines: list[tuple[str, str | None, str, str]]) -> tuple[str, tuple]:
    """The insert of output `lines` (run id, the token its lease must carry, stream, line), numbered after each
    run's lines stored before, in order."""
    run_ids: list[str] = []
    tokens: list[str | None] = []
    places: list[int] = []
    streams: list[str] = []
    texts: list[str] = []
    counted: dict[str, int] = {}
    for run_id, token, stream, line in lines:
        counted[run_id] = counted.get(run_id, 0) + 1
        run_ids.append(run_id)
        tokens.append(token)
        places.append(counted[run_id])
        streams.append(stream)
        texts.append(storable_line(line))
    # the statement's snapshot does not see its own rows: every line of a run counts from the same highest number
    query = (f"INSERT INTO {s}.run_output (project, run_id, number, stream, line) SELECT %s, u.run_id, "
             f"COALESCE((SELECT MAX(o.number) FROM {s}.run_output o WHERE o.project = %s AND o.run_id = u.run_id), 0) "
             "+ u.place, u.stream, u.line FROM unnest(%s::text[], %s::text[], %s::integer[], %s::text[], %s::text[]) "
             f"AS u(run_id, token, place, stream, line) {_fenced_by(s)}")
    return query, (project, project, run_ids, tokens, places, streams, texts, project)


def pending_statements(s: str, project: str, tokens: Mapping[str, str],
                       pending: Mapping[str, Pending]) -> list[tuple[str, tuple]]:
    """The statements that write what `pending` holds for each run, fenced by the run's token in `tokens`."""
    statements = []
    records = [(run_id, tokens.get(run_id), step) for run_id, each in pending.items() for step in each.steps]
    if records:
        query, args, _ = steps_statement(s, project, records)
        statements.append((query, args))
    lines = [(run_id, tokens.get(run_id), stream, line) for run_id, each in pending.items()
             for stream, line in each.output]
    if lines:
        statements.append(output_statement(s, project, lines))
    return statements
