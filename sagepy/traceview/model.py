"""A trace file (SPEC §4.11) read into what the viewer draws: lanes (one per agent path, in summon order,
each under its parent), bars (model turns, tool calls, `span`s) and marks (spawns, results, dropped
messages, approvals and questions, user `trace` events), and the totals of the header."""
from __future__ import annotations

import json
from typing import Any

SAFETY = ("read_only", "idempotent", "destructive")
MARK_KINDS = {"agent.spawn": "spawn", "agent.result": "result", "message.dropped": "dropped",
              "approval.request": "approval", "approval.decision": "approval", "ask.request": "ask",
              "ask.answer": "ask", "user": "user"}
NO_AGENT = "(no agent)"


class Bar:
    __slots__ = ("kind", "label", "start", "end", "safety", "error", "fields", "row")

    def __init__(self, kind: str, label: str, start: int, fields: dict, safety: str | None = None) -> None:
        self.kind = kind            # llm | tool | span
        self.label = label
        self.start = start
        self.end = start
        self.safety = safety
        self.error = False
        self.fields = fields        # the opening event, then the closing one's fields merged in
        self.row = 0                # the sub-row of its lane, so that concurrent bars do not overlap


class Mark:
    __slots__ = ("kind", "t", "fields", "error")

    def __init__(self, kind: str, t: int, fields: dict, error: bool = False) -> None:
        self.kind = kind
        self.t = t
        self.fields = fields
        self.error = error


class Lane:
    __slots__ = ("path", "agent", "depth", "bars", "marks", "rows", "children")

    def __init__(self, path: str, agent: str | None) -> None:
        self.path = path
        self.agent = agent
        self.depth = 0 if path == NO_AGENT else path.count("/")
        self.bars: list[Bar] = []
        self.marks: list[Mark] = []
        self.rows = 1
        self.children: list[Lane] = []


class Trace:
    """Lanes in display order, the time range and the totals."""

    def __init__(self) -> None:
        self.lanes: list[Lane] = []
        self.start = 0
        self.end = 0
        self.entry: str | None = None
        self.exit_code: int | None = None
        self.totals: dict[str, Any] = {}


class NoEvents(Exception):
    """The file holds no trace event."""


def read_events(text: str) -> tuple[list[dict], int]:
    """(the trace events of a file's text, how many non-blank lines were not trace events)."""
    events: list[dict] = []
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(event, dict) and isinstance(event.get("t"), (int, float)) and isinstance(event.get("kind"), str):
            events.append(event)
        else:
            skipped += 1
    return events, skipped


def build(events: list[dict]) -> Trace:
    if not events:
        raise NoEvents()
    trace = Trace()
    lanes: dict[str, Lane] = {}
    open_llm: dict[str, list[Bar]] = {}
    open_tools: dict[tuple[str, str, str], list[Bar]] = {}
    open_spans: dict[tuple[str, str], list[Bar]] = {}
    totals = {"agents": 0, "model_turns": 0, "tokens": 0, "tool_calls": {s: 0 for s in SAFETY}, "errors": 0,
              "duration_ms": 0, "events": len(events)}

    def lane_of(event: dict) -> Lane:
        path = event.get("path") or NO_AGENT
        lane = lanes.get(path)
        if lane is None:
            lane = lanes[path] = Lane(path, event.get("agent"))
        return lane

    times = [int(e["t"]) for e in events]
    trace.start, trace.end = min(times), max(times)
    for event in events:
        kind = event["kind"]
        t = int(event["t"])
        if kind == "run.start":
            trace.entry = event.get("entry")
            continue
        if kind == "run.end":
            trace.exit_code = event.get("exit_code")
            totals["duration_ms"] = event.get("duration_ms") or 0
            continue
        if kind.startswith("mcp.") or kind == "agent.stop":
            if kind == "agent.stop" and event.get("path"):
                lane_of(event)
            continue
        lane = lane_of(event)
        if kind == "llm.request":
            totals["model_turns"] += 1
            bar = Bar("llm", f"chat {event.get('model') or ''}".strip(), t, dict(event))
            lane.bars.append(bar)
            open_llm.setdefault(lane.path, []).append(bar)
        elif kind in ("llm.response", "llm.error"):
            pending = open_llm.get(lane.path)
            if pending:
                bar = pending.pop(0)
                bar.end = t
                bar.fields.update({k: v for k, v in event.items() if k not in ("t", "kind")})
                bar.fields["end_kind"] = kind
                if kind == "llm.error":
                    bar.error = True
                    totals["errors"] += 1
            totals["tokens"] += int(event.get("prompt_tokens") or 0) + int(event.get("completion_tokens") or 0)
        elif kind == "tool.call":
            safety = event.get("safety") if event.get("safety") in SAFETY else "destructive"
            totals["tool_calls"][safety] += 1
            bar = Bar("tool", f"{event.get('tool')}.{event.get('fn')}", t, dict(event), safety)
            lane.bars.append(bar)
            open_tools.setdefault((lane.path, str(event.get("tool")), str(event.get("fn"))), []).append(bar)
        elif kind == "tool.result":
            pending = open_tools.get((lane.path, str(event.get("tool")), str(event.get("fn"))))
            if pending:
                bar = pending.pop(0)
                bar.end = t
                bar.fields.update({k: v for k, v in event.items() if k not in ("t", "kind")})
                if event.get("ok") is False:
                    bar.error = True
                    totals["errors"] += 1
        elif kind == "span.start":
            bar = Bar("span", str(event.get("name")), t, dict(event))
            lane.bars.append(bar)
            open_spans.setdefault((lane.path, str(event.get("name"))), []).append(bar)
        elif kind == "span.end":
            pending = open_spans.get((lane.path, str(event.get("name"))))
            if pending:
                bar = pending.pop()
                bar.end = t
                bar.fields["duration_ms"] = event.get("duration_ms")
        elif kind in MARK_KINDS:
            failed = kind == "agent.result" and event.get("ok") is False
            if failed:
                totals["errors"] += 1
            lane.marks.append(Mark(MARK_KINDS[kind], t, dict(event), failed))
    for pending_bars in (*open_llm.values(), *open_tools.values(), *open_spans.values()):
        for bar in pending_bars:   # never closed: the run ended (or crashed) while it was going on
            bar.end = trace.end
            bar.fields["unfinished"] = True
    totals["agents"] = len([p for p in lanes if p != NO_AGENT])
    if not totals["duration_ms"]:
        totals["duration_ms"] = trace.end - trace.start
    trace.totals = totals
    trace.lanes = _ordered(lanes)
    for lane in trace.lanes:
        _pack(lane)
    return trace


def _ordered(lanes: dict[str, Lane]) -> list[Lane]:
    """Each lane after its parent (the path without its last part), children in summon order (the order
    their first events came), lanes without a known parent at the top level."""
    roots: list[Lane] = []
    for path, lane in lanes.items():
        parent = lanes.get(path.rsplit("/", 1)[0]) if "/" in path else None
        (parent.children if parent is not None else roots).append(lane)
    ordered: list[Lane] = []
    stack = list(reversed(roots))
    while stack:
        lane = stack.pop()
        ordered.append(lane)
        stack.extend(reversed(lane.children))
    return ordered


def _pack(lane: Lane) -> None:
    """Give each bar the first sub-row where it overlaps no other bar (spans keep a row of their own)."""
    ends: list[int] = []
    for bar in sorted((b for b in lane.bars if b.kind != "span"), key=lambda b: (b.start, b.end)):
        for row, end in enumerate(ends):
            if end <= bar.start:
                bar.row = row
                ends[row] = max(bar.end, bar.start + 1)
                break
        else:
            bar.row = len(ends)
            ends.append(max(bar.end, bar.start + 1))
    span_ends: list[int] = []
    for bar in sorted((b for b in lane.bars if b.kind == "span"), key=lambda b: (b.start, -b.end)):
        for row, end in enumerate(span_ends):
            if end <= bar.start:
                bar.row = row
                span_ends[row] = bar.end
                break
        else:
            bar.row = len(span_ends)
            span_ends.append(bar.end)
    lane.rows = max(1, len(ends)) + len(span_ends)
    for bar in lane.bars:   # spans above the calls
        if bar.kind != "span":
            bar.row += len(span_ends)
