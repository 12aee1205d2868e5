"""The HTML page of a trace (SPEC §18.2): a header with the totals and the timeline as inline SVG, one lane
per agent path. Everything is in the page — styles, the few lines of script that show a selected bar's
fields — so it opens offline. Each bar and mark carries its event fields in a `<title>` (the hover text)."""
from __future__ import annotations

import json
from html import escape

from .model import SAFETY, Bar, Lane, Mark, Trace

LABEL_W = 260       # the lane labels' column
PLOT_W = 1100       # the timeline's width
ROW_H = 16          # one sub-row of a lane
LANE_PAD = 6
AXIS_H = 28

COLOURS = {"llm": "#7b5fc7", "span": "#9aa3ad", "read_only": "#3a9d5d", "idempotent": "#d9a21b",
           "destructive": "#d0453b"}
MARK_COLOURS = {"spawn": "#2b6cb0", "result": "#2f855a", "dropped": "#b7791f", "approval": "#805ad5",
                "ask": "#805ad5", "user": "#4a5568"}

STYLE = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1a202c;background:#fff}
header{padding:12px 16px;border-bottom:1px solid #e2e8f0;background:#f7fafc}
header h1{font-size:16px;margin:0 0 6px}
header dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}
header dt{color:#718096;font-size:11px;text-transform:uppercase;letter-spacing:.04em}
header dd{margin:0;font-weight:600}
.legend{display:flex;gap:14px;padding:6px 16px;font-size:12px;color:#4a5568}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
#timeline{overflow-x:auto;padding:0 16px 8px}
svg text{font-size:11px;fill:#2d3748}
.lane-bg{fill:#fff}.lane:nth-child(even) .lane-bg{fill:#f7fafc}
.bar{stroke:none;cursor:pointer}.bar.error{stroke:#742a2a;stroke-width:2}
.bar.replayed{opacity:.45}.bar:hover,.mark:hover{opacity:.75}
.mark{cursor:pointer}.mark.error{fill:#c53030}
.tick{stroke:#e2e8f0}
#detail{margin:0 16px 16px;padding:8px;background:#f7fafc;border:1px solid #e2e8f0;min-height:2em;
white-space:pre-wrap;font:12px ui-monospace,monospace}
"""

SCRIPT = """
document.getElementById('timeline').addEventListener('click',function(e){
var t=e.target.closest('.bar,.mark');if(!t)return;
document.getElementById('detail').textContent=t.querySelector('title').textContent;});
"""


def _ms(value: float) -> str:
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.0f} ms"


def _fields(fields: dict) -> str:
    return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in fields.items())


def _header(trace: Trace, source: str) -> str:
    totals = trace.totals
    calls = totals["tool_calls"]
    by_class = ", ".join(f"{calls[s]} {s}" for s in SAFETY if calls[s]) or "none"
    items = [("Duration", _ms(totals["duration_ms"])), ("Agents", str(totals["agents"])),
             ("Model turns", str(totals["model_turns"])), ("Tokens", str(totals["tokens"])),
             ("Tool calls", f"{sum(calls.values())} ({by_class})"), ("Errors", str(totals["errors"])),
             ("Events", str(totals["events"]))]
    if trace.exit_code is not None:
        items.append(("Exit code", str(trace.exit_code)))
    cells = "".join(f'<div class="total" data-total="{escape(k.lower().replace(" ", "_"))}"><dt>{escape(k)}</dt>'
                    f"<dd>{escape(v)}</dd></div>" for k, v in items)
    return f"<header><h1>{escape(source)}</h1><dl>{cells}</dl></header>"


def _legend() -> str:
    entries = [("model turn", COLOURS["llm"]), ("span", COLOURS["span"])] + \
        [(f"tool call, {s}", COLOURS[s]) for s in SAFETY]
    return '<div class="legend">' + "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>'
                                            for n, c in entries) + \
        "<span>▲ spawn ● result ◆ approval/ask ■ dropped ▼ trace</span></div>"


def _axis(trace: Trace, scale: float, height: int) -> list[str]:
    span_ms = max(1, trace.end - trace.start)
    step = 1
    for candidate in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 300_000,
                      600_000, 1_800_000, 3_600_000):
        step = candidate
        if span_ms / candidate <= 12:
            break
    out = []
    t = 0
    while t <= span_ms:
        x = LABEL_W + t * scale
        label = f'<text x="{x + 2:.1f}" y="{AXIS_H - 10}">{escape(_ms(t))}</text>' \
            if x + 48 < LABEL_W + PLOT_W else ""   # no label cut off at the right edge
        out.append(f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 6}" x2="{x:.1f}" y2="{height}"/>{label}')
        t += step
    return out


def _bar(bar: Bar, x0: float, y: float, scale: float) -> str:
    x = LABEL_W + (bar.start - x0) * scale
    width = max(2.0, (bar.end - bar.start) * scale)
    colour = COLOURS[bar.safety or "destructive"] if bar.kind == "tool" else COLOURS[bar.kind]
    classes = f"bar {bar.kind}" + (f" {bar.safety}" if bar.safety else "") + (" error" if bar.error else "") + \
        (" replayed" if bar.fields.get("replayed") else "")
    height = ROW_H - 4 if bar.kind != "span" else ROW_H - 8
    title = f"{bar.label} — {_ms(bar.end - bar.start)}\n{_fields(bar.fields)}"
    return (f'<rect class="{classes}" x="{x:.1f}" y="{y + bar.row * ROW_H + 2:.1f}" width="{width:.1f}" '
            f'height="{height}" fill="{colour}"><title>{escape(title)}</title></rect>')


_SHAPES = {"spawn": "M{x},{y1}l-5,9h10z", "result": "M{x},{y2}m-4,0a4,4 0 1,0 8,0a4,4 0 1,0 -8,0",
           "approval": "M{x},{y1}l5,5l-5,5l-5,-5z", "ask": "M{x},{y1}l5,5l-5,5l-5,-5z",
           "dropped": "M{xm},{y1}h8v8h-8z", "user": "M{x},{y3}l-5,-9h10z"}


def _mark(mark: Mark, x0: float, top: float, scale: float) -> str:
    x = LABEL_W + (mark.t - x0) * scale
    d = _SHAPES[mark.kind].format(x=f"{x:.1f}", xm=f"{x - 4:.1f}", y1=f"{top + 1:.1f}", y2=f"{top + 6:.1f}",
                                  y3=f"{top + 11:.1f}")
    title = f"{mark.fields.get('kind')}\n{_fields(mark.fields)}"
    classes = f"mark {mark.kind}" + (" error" if mark.error else "")
    return (f'<path class="{classes}" d="{d}" fill="{MARK_COLOURS[mark.kind]}">'
            f"<title>{escape(title)}</title></path>")


def _lane(lane: Lane, y: float, x0: float, scale: float) -> tuple[str, float]:
    marks_h = ROW_H if lane.marks else 0
    height = lane.rows * ROW_H + marks_h + LANE_PAD
    indent = 8 + 10 * lane.depth
    room = (LABEL_W - indent - 8) // 6   # characters that fit at 11 px
    label = lane.path if len(lane.path) <= room else "…" + lane.path[-(room - 1):]
    parts = [f'<g class="lane" data-path="{escape(lane.path)}" data-depth="{lane.depth}">',
             f'<rect class="lane-bg" x="0" y="{y:.1f}" width="{LABEL_W + PLOT_W}" height="{height}"/>',
             f'<text class="lane-label" x="{indent}" y="{y + 13:.1f}">{escape(label)}'
             f"<title>{escape(lane.path)}</title></text>"]
    for mark in lane.marks:
        parts.append(_mark(mark, x0, y, scale))
    for bar in lane.bars:
        parts.append(_bar(bar, x0, y + marks_h, scale))
    parts.append("</g>")
    return "".join(parts), height


def render(trace: Trace, source: str) -> str:
    scale = PLOT_W / max(1, trace.end - trace.start)
    lanes_svg = []
    y = float(AXIS_H)
    for lane in trace.lanes:
        svg, height = _lane(lane, y, trace.start, scale)
        lanes_svg.append(svg)
        y += height
    height = int(y) + 4
    width = LABEL_W + PLOT_W + 10
    svg = (f'<svg width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">' + "".join(_axis(trace, scale, height)) + "".join(lanes_svg) + "</svg>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(source)} — sage trace</title><style>{STYLE}</style></head><body>"
            f"{_header(trace, source)}{_legend()}<div id=\"timeline\">{svg}</div>"
            f"<pre id=\"detail\">Select a bar or mark to see its event fields.</pre>"
            f"<script>{SCRIPT}</script></body></html>\n")
