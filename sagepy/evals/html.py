"""`sage eval --html FILE`: the report as one self-contained page (inline style, no script, no external URL)."""
from __future__ import annotations

from html import escape
from typing import Any

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1d1d1f; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { border: 1px solid #d0d0d7; padding: .25em .7em; text-align: left; vertical-align: top; }
th { background: #f2f2f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.fail { color: #b3261e; } .pass { color: #1b6e33; } .regression { color: #b3261e; font-weight: 600; }
.meta { color: #555; } pre { margin: 0; white-space: pre-wrap; font-size: 12px; }
"""


def render(data: dict, changes: dict) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>sage eval report</title>", f"<style>{_STYLE}</style></head><body>",
             "<h1>sage eval report</h1>",
             f'<p class="meta">model {escape(str(data.get("model")))} · started {escape(data["started_at"])}'
             + (" · <strong>incomplete</strong>" if data.get("incomplete") else "") + "</p>"]
    for e in data["evals"]:
        parts.extend(_eval(e, changes))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _eval(e: dict, changes: dict) -> list[str]:
    summary = e["summary"]
    usage = summary["usage"]
    cost = f"${usage['cost']:.4f}" if usage.get("cost") is not None else "–"
    out = [f"<h2>{escape(e['name'])}</h2>",
           f'<p class="meta">{escape(e["file"])} · dataset {escape(e["dataset"])} · {len(e["cases"])} cases</p>',
           '<table class="summary"><thead><tr><th>score</th><th>mean</th><th>stdev</th><th>change</th></tr>'
           "</thead><tbody>"]
    for name, s in summary["scores"].items():
        change = changes.get((e["name"], name))
        shown = ""
        if change is not None:
            shown = f"{change[0]:+.3f}" + (' <span class="regression">regression</span>' if change[1] else "")
        out.append(f"<tr><td>{escape(name)}</td><td class=\"num\">{s['mean']:.3f}</td>"
                   f"<td class=\"num\">{s['stdev']:.3f}</td><td>{shown}</td></tr>")
    out.append("</tbody></table>")
    out.append(f'<p>pass rate <strong>{summary["pass_rate"] * 100:.1f}%</strong> · tokens '
               f'{usage["input_tokens"]} in / {usage["output_tokens"]} out · cost {cost} · latency p50 '
               f'{summary["latency_ms"]["p50"]} ms, p95 {summary["latency_ms"]["p95"]} ms</p>')
    names = list(summary["scores"])
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    out.append(f'<table class="cases"><thead><tr><th>row</th><th>repeat</th>{head}<th>result</th>'
               "<th>latency</th><th>error</th></tr></thead><tbody>")
    for case in e["cases"]:
        cells = "".join(f'<td class="num">{_number(case["scores"].get(n))}</td>' for n in names)
        result = '<span class="pass">pass</span>' if case["passed"] else '<span class="fail">fail</span>'
        error = f"<pre>{escape(case['error'])}</pre>" if case["error"] else ""
        out.append(f"<tr><td class=\"num\">{case['row']}</td><td class=\"num\">{case['repeat']}</td>{cells}"
                   f"<td>{result}</td><td class=\"num\">{case['latency_ms']} ms</td><td>{error}</td></tr>")
    out.append("</tbody></table>")
    return out


def _number(value: Any) -> str:
    return "" if value is None else f"{value:.3f}"
