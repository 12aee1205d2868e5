"""A trace file (SPEC §4.11) read into what the viewer draws: lanes (one per agent path, in summon order,
each under its parent, with the agent's lifetime from its spawn to its stop; and one per MCP server, with its
connecting time and its connection's life), bars (model turns, tool calls, `span`s, MCP connecting) and
marks (spawns, results, dropped messages, approvals and questions, user `trace` events), and the totals of
the header.

A line is a trace event when it is a JSON object with a string `kind`, a finite number `t` (Unix
milliseconds, within ±2^53), a string or null `agent` and `path`, and numbers (or null) wherever the viewer
counts or places something (durations, token counts, the exit code); every other line is skipped and
counted, however it is malformed (deep nesting, NaN, wrong types), so a page's size and the time to write
it follow the number of events, never the time they span."""
from __future__ import annotations

import json
import math
from typing import Any

SAFETY = ("read_only", "idempotent", "destructive")
MARK_KINDS = {"agent.spawn": "spawn", "agent.result": "result", "message.dropped": "dropped",
              "approval.request": "approval", "approval.decision": "approval", "ask.request": "ask",
              "ask.answer": "ask", "user": "user"}
NO_AGENT = "(no agent)"
T_LIMIT = 2 ** 53                # |t| beyond it is no Unix time in milliseconds (and no exact float)
NUMBERS = ("duration_ms", "prompt_tokens", "completion_tokens", "exit_code", "prompt_chars", "chars",
           "attempts", "progress", "total")
TEXTS = ("kind", "agent", "path", "tool", "fn", "name", "model", "safety", "server", "entry", "parent")


class Bar:
    __slots__ = ("kind", "label", "start", "end", "safety", "error", "fields", "row")

    def __init__(self, kind: str, label: str, start: int, fields: dict, safety: str | None = None) -> None:
        self.kind = kind            # llm | tool | span | connect | life
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
    """An agent's lane (`server` False: `path` is its agent path) or an MCP server's (`path` is its name).
    `lives` are the agent's lifetime (spawn, else its first event, to its stop) or the server's connections
    (connected to disconnected), drawn in the lane's top row with the marks."""
    __slots__ = ("path", "agent", "depth", "bars", "marks", "rows", "children", "server", "lives")

    def __init__(self, path: str, agent: str | None, server: bool = False) -> None:
        self.path = path
        self.agent = agent
        self.server = server
        self.depth = 0 if path == NO_AGENT or server else path.count("/")
        self.bars: list[Bar] = []
        self.marks: list[Mark] = []
        self.rows = 1
        self.children: list[Lane] = []
        self.lives: list[Bar] = []


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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        abs(value) <= T_LIMIT


def usable(event: Any) -> bool:
    """Whether a parsed line is a trace event the viewer can place and count (the module's docstring)."""
    if not isinstance(event, dict) or not isinstance(event.get("kind"), str) or not _number(event.get("t")):
        return False
    if any(event.get(key) is not None and not isinstance(event[key], str) for key in TEXTS):
        return False
    return all(event.get(key) is None or _number(event[key]) for key in NUMBERS)


def read_events(text: str) -> tuple[list[dict], int]:
    """(the trace events of a file's text, how many non-blank lines were not trace events)."""
    events: list[dict] = []
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):   # not JSON, or nested deeper than the parser goes
            skipped += 1
            continue
        if usable(event):
            event["t"] = int(event["t"])
            events.append(event)
        else:
            skipped += 1
    return events, skipped


def build(events: list[dict]) -> Trace:
    if not events:
        raise NoEvents()
    trace = Trace()
    lanes: dict[str, Lane] = {}
    servers: dict[str, Lane] = {}
    open_llm: dict[str, list[Bar]] = {}
    open_tools: dict[tuple[str, str, str], list[Bar]] = {}
    open_spans: dict[tuple[str, str], list[Bar]] = {}
    connecting: dict[str, Bar] = {}
    run_start: list[int] = []
    totals = {"agents": 0, "model_turns": 0, "tokens": 0, "tool_calls": {s: 0 for s in SAFETY}, "errors": 0,
              "duration_ms": 0, "events": len(events)}

    def lane_of(event: dict) -> Lane:
        path = event.get("path") or NO_AGENT
        lane = lanes.get(path)
        if lane is None:
            lane = lanes[path] = Lane(path, event.get("agent"))
            if path != NO_AGENT:   # the entry agent lives from the run's start, a summoned one from its spawn
                start = run_start[0] if "/" not in path and run_start else event["t"]
                lane.lives.append(Bar("life", path, start,
                                      {"path": path, "agent": event.get("agent"), "unfinished": True}))
        return lane

    def server_of(event: dict) -> Lane:
        name = str(event.get("server"))
        lane = servers.get(name)
        if lane is None:
            lane = servers[name] = Lane(name, None, server=True)
        return lane

    trace.start = min(e["t"] for e in events)
    trace.end = max(e["t"] for e in events)
    for event in events:
        kind = event["kind"]
        t = event["t"]
        if kind == "run.start":
            trace.entry = event.get("entry")
            run_start.append(t)
            continue
        if kind == "run.end":
            trace.exit_code = event.get("exit_code")
            totals["duration_ms"] = event.get("duration_ms") or 0
            continue
        if kind.startswith("mcp."):
            _server_event(server_of(event), kind, t, event, connecting, totals, trace.start)
            continue
        lane = lane_of(event)
        if kind == "agent.stop":
            for life in lane.lives:
                _end_life(life, t, event)
            continue
        if kind == "agent.spawn" and lane.lives and not lane.marks and not lane.bars:
            lane.lives[0].fields["parent"] = event.get("parent")
        if kind == "llm.request":
            totals["model_turns"] += 1
            bar = Bar("llm", f"chat {event.get('model') or ''}".strip(), t, dict(event))
            lane.bars.append(bar)
            open_llm.setdefault(lane.path, []).append(bar)
        elif kind in ("llm.response", "llm.error"):
            pending = open_llm.get(lane.path)
            if pending:
                bar = pending.pop(0)
                _close(bar, t, event)
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
                _close(bar, t, event)
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
                for life in lane.lives:
                    life.error = True
            lane.marks.append(Mark(MARK_KINDS[kind], t, dict(event), failed))
    for pending_bars in (*open_llm.values(), *open_tools.values(), *open_spans.values(), connecting.values()):
        for bar in pending_bars:   # never closed: the run ended (or crashed) while it was going on
            bar.end = trace.end
            bar.fields["unfinished"] = True
    for lane in (*lanes.values(), *servers.values()):
        for life in lane.lives:
            if life.fields.get("unfinished"):
                life.end = trace.end   # still alive (or connected) when the trace ends
    totals["agents"] = len([p for p in lanes if p != NO_AGENT])
    if not totals["duration_ms"]:
        totals["duration_ms"] = trace.end - trace.start
    trace.totals = totals
    trace.lanes = [*servers.values(), *_ordered(lanes)]
    for lane in trace.lanes:
        _pack(lane)
    return trace


def _close(bar: Bar, t: int, event: dict) -> None:
    bar.end = max(t, bar.start)
    bar.fields.update({k: v for k, v in event.items() if k not in ("t", "kind")})


def _end_life(life: Bar, t: int, event: dict) -> None:
    if not life.fields.get("unfinished"):
        return
    life.end = max(t, life.start)
    life.fields.pop("unfinished", None)
    life.fields["ended"] = t
    life.fields.update({k: v for k, v in event.items() if k not in ("t", "kind", "path", "agent")})


def _server_event(lane: Lane, kind: str, t: int, event: dict, connecting: dict[str, Bar], totals: dict,
                  first: int) -> None:
    """MCP events in the server's lane: `mcp.connecting`…`mcp.connect` (or `mcp.connect_failed`) is the
    connecting bar — from a trace without `mcp.connecting`, the `duration_ms` before `mcp.connect` —, the
    connection's life runs on to `mcp.disconnect`, and the rest are marks."""
    fields = {k: v for k, v in event.items() if k != "t"}
    if kind == "mcp.connecting":
        bar = connecting[lane.path] = Bar("connect", f"connecting to {lane.path}", t, fields)
        lane.bars.append(bar)
    elif kind in ("mcp.connect", "mcp.connect_failed"):
        bar = connecting.pop(lane.path, None)
        if bar is None:
            start = max(first, t - int(event.get("duration_ms") or 0))
            bar = Bar("connect", f"connecting to {lane.path}", start, fields)
            lane.bars.append(bar)
        _close(bar, t, event)
        bar.fields["end_kind"] = kind
        if kind == "mcp.connect_failed":
            bar.error = True
            totals["errors"] += 1
        else:
            lane.lives.append(Bar("life", f"connected to {lane.path}", t, dict(fields, unfinished=True)))
    elif kind == "mcp.disconnect":
        for life in lane.lives:
            _end_life(life, t, event)
    else:
        lane.marks.append(Mark("mcp", t, fields))


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
