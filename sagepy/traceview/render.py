"""The HTML page of a trace (SPEC §18.2): a header with the totals and the timeline as inline SVG, one lane
per MCP server and per agent path. Everything is in the page — styles, and a short script that fits the
chart to the window's width, zooms it and shows a selected bar's fields — so it opens offline; without the
script the chart is drawn at a fixed width and scaled down to the window. Each bar and mark carries its
event fields in a `<title>` (the hover text) and its time in `data-s`/`data-e` (milliseconds from the
trace's start), which is all the script needs to lay it out again."""
from __future__ import annotations

import json
import re
from html import escape

from .model import SAFETY, Bar, Lane, Mark, Trace

LABEL_W = 260       # the lane labels' column
PLOT_W = 1100       # the timeline's width without the script
ROW_H = 16          # one sub-row of a lane
LANE_PAD = 6
AXIS_H = 28
MAX_TICKS = 12

COLOURS = {"llm": "#7b5fc7", "span": "#9aa3ad", "read_only": "#3a9d5d", "idempotent": "#d9a21b",
           "destructive": "#d0453b", "connect": "#4a90c2", "life": "#a0aec0"}
MARK_COLOURS = {"spawn": "#2b6cb0", "result": "#2f855a", "dropped": "#b7791f", "approval": "#805ad5",
                "ask": "#805ad5", "user": "#4a5568", "mcp": "#4a90c2"}

STYLE = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1a202c;background:#fff}
header{padding:12px 16px;border-bottom:1px solid #e2e8f0;background:#f7fafc}
header h1{font-size:16px;margin:0 0 6px}
header dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}
header dt{color:#718096;font-size:11px;text-transform:uppercase;letter-spacing:.04em}
header dd{margin:0;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:14px;padding:6px 16px;font-size:12px;color:#4a5568}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
#zoom{padding:0 16px 6px;font-size:12px;color:#4a5568}#zoom button{font:inherit;margin-right:4px}
#timeline{overflow-x:auto;padding:0 16px 8px}
#chart{max-width:100%;height:auto}#chart.fitted{max-width:none}
svg text{font-size:11px;fill:#2d3748}
.lane-bg{fill:#fff}.lane:nth-child(even) .lane-bg{fill:#f7fafc}.server-lane .lane-bg{fill:#edf5fb}
.bar,.life{stroke:none;cursor:pointer}.bar.error,.life.error{stroke:#742a2a;stroke-width:2}
.bar.replayed{opacity:.45}.bar:hover,.mark:hover,.life:hover{opacity:.75}
.life.unfinished{fill-opacity:.5}
.mark{cursor:pointer}.mark.error{fill:#c53030}
.tick{stroke:#e2e8f0}
#detail{margin:0 16px 16px;padding:8px;background:#f7fafc;border:1px solid #e2e8f0;min-height:2em;
white-space:pre-wrap;font:12px ui-monospace,monospace}
"""

# Lays every [data-s] element out again for the chart's width: the window's (less the labels) times the zoom.
SCRIPT = """
(function(){
var L=%(label)d,SPAN=%(span)d,N=%(ticks)d,zoom=1;
var svg=document.getElementById('chart'),box=document.getElementById('timeline');
var items=svg.querySelectorAll('[data-s]'),bgs=svg.querySelectorAll('.lane-bg');
function ms(v){return v>=60000?(v/60000).toFixed(1)+' min':v>=1000?(v/1000).toFixed(2)+' s':Math.round(v)+' ms';}
function step(n){var s=1;while(SPAN/s>n)s=String(s)[0]==='2'?s*5/2:s*2;return s;}
function layout(){
var plot=Math.max(200,(box.clientWidth-32-L-10)*zoom),scale=plot/Math.max(1,SPAN),w=L+plot+10,h=svg.viewBox.baseVal.height;
svg.setAttribute('width',w);svg.setAttribute('viewBox','0 0 '+w+' '+h);svg.classList.add('fitted');
for(var i=0;i<bgs.length;i++)bgs[i].setAttribute('width',L+plot);
for(i=0;i<items.length;i++){var e=items[i],x=L+e.getAttribute('data-s')*scale;
if(e.hasAttribute('data-e')){e.setAttribute('x',x.toFixed(1));
e.setAttribute('width',Math.max(2,(e.getAttribute('data-e')-e.getAttribute('data-s'))*scale).toFixed(1));}
else e.setAttribute('transform','translate('+x.toFixed(1)+',0)');}
var axis=document.getElementById('axis'),st=step(N*zoom),out='';
for(var t=0;t<=SPAN;t+=st){var x=L+t*scale;out+='<line class="tick" x1="'+x+'" y1="%(axis_top)d" x2="'+x+'" y2="'+h+'"/>'+
(x+48<L+plot?'<text x="'+(x+2)+'" y="%(axis_text)d">'+ms(t)+'</text>':'');}
axis.innerHTML=out;document.getElementById('zoom-level').textContent=zoom===1?'fit to window':zoom+'x';}
var bar=document.getElementById('zoom');bar.hidden=false;
bar.addEventListener('click',function(e){var b=e.target.closest('button');if(!b)return;
var a=b.getAttribute('data-zoom');zoom=a==='in'?Math.min(64,zoom*2):a==='out'?Math.max(1,zoom/2):1;layout();});
window.addEventListener('resize',layout);layout();
box.addEventListener('click',function(e){
var t=e.target.closest('.bar,.mark,.life');if(!t)return;
document.getElementById('detail').textContent=t.querySelector('title').textContent;});
})();
"""

_SURROGATE = re.compile("[\ud800-\udfff]")


def _ms(value: float) -> str:
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.0f} ms"


def _value(v: object) -> str:
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False)
    except (ValueError, RecursionError):   # nested deeper than the encoder goes
        return "…"


def _fields(fields: dict) -> str:
    return "\n".join(f"{k}: {_value(v)}" for k, v in fields.items())


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
    entries = [("agent alive / server connected", COLOURS["life"]), ("model turn", COLOURS["llm"]),
               ("span", COLOURS["span"]), ("connecting to an MCP server", COLOURS["connect"])] + \
        [(f"tool call, {s}", COLOURS[s]) for s in SAFETY]
    return '<div class="legend">' + "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>'
                                            for n, c in entries) + \
        "<span>▲ spawn ● result ◆ approval/ask ■ dropped ▼ trace</span></div>"


def tick_step(span_ms: int) -> int:
    """The axis' step: 1, 2 or 5 times a power of ten, the smallest giving at most MAX_TICKS steps (so
    the axis costs the same whatever time the trace spans)."""
    step = 1
    while span_ms / step > MAX_TICKS:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def _axis(trace: Trace, scale: float, height: int) -> str:
    span_ms = max(1, trace.end - trace.start)
    step = tick_step(span_ms)
    out = []
    for t in range(0, span_ms + 1, step):
        x = LABEL_W + t * scale
        label = f'<text x="{x + 2:.1f}" y="{AXIS_H - 10}">{escape(_ms(t))}</text>' \
            if x + 48 < LABEL_W + PLOT_W else ""   # no label cut off at the right edge
        out.append(f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 6}" x2="{x:.1f}" y2="{height}"/>{label}')
    return '<g id="axis">' + "".join(out) + "</g>"


def _bar(bar: Bar, x0: int, y: float, scale: float) -> str:
    x = LABEL_W + (bar.start - x0) * scale
    width = max(2.0, (bar.end - bar.start) * scale)
    colour = COLOURS[bar.safety or "destructive"] if bar.kind == "tool" else COLOURS[bar.kind]
    classes = ("life" if bar.kind == "life" else f"bar {bar.kind}") + (f" {bar.safety}" if bar.safety else "") + \
        (" error" if bar.error else "") + (" replayed" if bar.fields.get("replayed") else "") + \
        (" unfinished" if bar.fields.get("unfinished") else "")
    if bar.kind == "life":
        top, height = y + 5, 5
    else:
        top, height = y + bar.row * ROW_H + 2, (ROW_H - 4 if bar.kind != "span" else ROW_H - 8)
    title = f"{bar.label} — {_ms(bar.end - bar.start)}\n{_fields(bar.fields)}"
    return (f'<rect class="{classes}" data-s="{bar.start - x0}" data-e="{bar.end - x0}" x="{x:.1f}" '
            f'y="{top:.1f}" width="{width:.1f}" height="{height}" fill="{colour}"><title>{escape(title)}</title></rect>')


_SHAPES = {"spawn": "M0,{y1}l-5,9h10z", "result": "M0,{y2}m-4,0a4,4 0 1,0 8,0a4,4 0 1,0 -8,0",
           "approval": "M0,{y1}l5,5l-5,5l-5,-5z", "ask": "M0,{y1}l5,5l-5,5l-5,-5z",
           "dropped": "M-4,{y1}h8v8h-8z", "user": "M0,{y3}l-5,-9h10z", "mcp": "M0,{y1}l4,5l-4,5l-4,-5z"}


def _mark(mark: Mark, x0: int, top: float, scale: float) -> str:
    x = LABEL_W + (mark.t - x0) * scale
    d = _SHAPES[mark.kind].format(y1=f"{top + 1:.1f}", y2=f"{top + 6:.1f}", y3=f"{top + 11:.1f}")
    title = f"{mark.fields.get('kind')}\n{_fields(mark.fields)}"
    classes = f"mark {mark.kind}" + (" error" if mark.error else "")
    return (f'<path class="{classes}" data-s="{mark.t - x0}" transform="translate({x:.1f},0)" d="{d}" '
            f'fill="{MARK_COLOURS[mark.kind]}"><title>{escape(title)}</title></path>')


def _lane(lane: Lane, y: float, x0: int, scale: float) -> tuple[str, float]:
    marks_h = ROW_H if lane.marks or lane.lives else 0
    height = lane.rows * ROW_H + marks_h + LANE_PAD
    indent = 8 + 10 * lane.depth
    name = f"MCP {lane.path}" if lane.server else lane.path
    room = (LABEL_W - indent - 8) // 6   # characters that fit at 11 px
    label = name if len(name) <= room else "…" + name[-(room - 1):]
    kind = ' class="server-lane" data-server' if lane.server else ' class="lane" data-path'
    parts = [f'<g{kind}="{escape(lane.path)}" data-depth="{lane.depth}">',
             f'<rect class="lane-bg" x="0" y="{y:.1f}" width="{LABEL_W + PLOT_W}" height="{height}"/>',
             f'<text class="lane-label" x="{indent}" y="{y + 13:.1f}">{escape(label)}'
             f"<title>{escape(name)}</title></text>"]
    for life in lane.lives:
        parts.append(_bar(life, x0, y, scale))
    for mark in lane.marks:
        parts.append(_mark(mark, x0, y, scale))
    for bar in lane.bars:
        parts.append(_bar(bar, x0, y + marks_h, scale))
    parts.append("</g>")
    return "".join(parts), height


def render(trace: Trace, source: str) -> str:
    span_ms = max(1, trace.end - trace.start)
    scale = PLOT_W / span_ms
    lanes_svg = []
    y = float(AXIS_H)
    for lane in trace.lanes:
        svg, height = _lane(lane, y, trace.start, scale)
        lanes_svg.append(svg)
        y += height
    height = int(y) + 4
    width = LABEL_W + PLOT_W + 10
    svg = (f'<svg id="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}">' +
           _axis(trace, scale, height) + "".join(lanes_svg) + "</svg>")
    script = SCRIPT % {"label": LABEL_W, "span": span_ms, "ticks": MAX_TICKS,
                       "axis_top": AXIS_H - 6, "axis_text": AXIS_H - 10}
    zoom = ('<div id="zoom" hidden>Zoom: <button type="button" data-zoom="out">−</button>'
            '<button type="button" data-zoom="in">+</button><button type="button" data-zoom="fit">Fit</button>'
            '<span id="zoom-level"></span></div>')
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(source)} — sage trace</title><style>{STYLE}</style></head><body>"
            f"{_header(trace, source)}{_legend()}{zoom}<div id=\"timeline\">{svg}</div>"
            f"<pre id=\"detail\">Select a bar or mark to see its event fields.</pre>"
            f"<script>{script}</script></body></html>\n")
    return _SURROGATE.sub("\ufffd", page)   # a lone surrogate from a `\ud800` escape: not writable as UTF-8
