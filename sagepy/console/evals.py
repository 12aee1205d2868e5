"""The eval reports the console shows (SPEC §22.1, §24): every `--json` report under the project's `.sage/evals/`,
oldest first, and the trend of each eval's score means across them (an inline SVG line, no script)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

TREND_W, TREND_H = 160, 36


@dataclass
class EvalTable:
    name: str
    file: str
    dataset: str
    scores: list[tuple[str, str, str]]      # name, mean, stdev
    pass_rate: str
    usage: str
    latency: str
    failed: list[tuple[str, str]]          # row/repeat, error or false scores


@dataclass
class Report:
    file: str
    model: str
    started_at: str
    evals: list[EvalTable]


@dataclass
class Trend:
    eval: str
    score: str
    means: list[float]
    points: str                            # the SVG polyline's points
    last: str
    change: str


@dataclass
class EvalsPage:
    reports: list[Report]
    trends: list[Trend]
    problems: list[str] = field(default_factory=list)


def _number(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _usage(usage: Any) -> str:
    if not isinstance(usage, dict):
        return "-"
    text = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out"
    cost = usage.get("cost")
    return text + (f", ${cost:.4f}" if isinstance(cost, (int, float)) else "")


def _table(entry: dict) -> EvalTable:
    summary = entry.get("summary") if isinstance(entry.get("summary"), dict) else {}
    scores = summary.get("scores") if isinstance(summary.get("scores"), dict) else {}
    latency = summary.get("latency_ms") if isinstance(summary.get("latency_ms"), dict) else {}
    failed = []
    for case in entry.get("cases") or []:
        if not isinstance(case, dict) or case.get("passed", True):
            continue
        why = case.get("error") or ", ".join(f"{k} = {v}" for k, v in (case.get("scores") or {}).items()
                                             if v in (0, 0.0, False))
        failed.append((f"row {case.get('row')} repeat {case.get('repeat')}", str(why)))
    return EvalTable(str(entry.get("name", "?")), str(entry.get("file", "")), str(entry.get("dataset", "")),
                     [(str(name), _number(s.get("mean")), _number(s.get("stdev")))
                      for name, s in scores.items() if isinstance(s, dict)],
                     _number(summary.get("pass_rate"), 2), _usage(summary.get("usage")),
                     f"p50 {_number(latency.get('p50'), 0)} ms, p95 {_number(latency.get('p95'), 0)} ms",
                     failed)


def read_reports(root: str) -> EvalsPage:
    folder = os.path.join(root, ".sage", "evals")
    loaded: list[tuple[str, str, dict]] = []
    problems = []
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            problems.append(f"{name}: not a report ({exc})")
            continue
        if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("evals"), list):
            problems.append(f"{name}: not a version 1 eval report")
            continue
        loaded.append((str(data.get("started_at") or ""), name, data))
    loaded.sort(key=lambda item: (item[0], item[1]))
    reports = [Report(name, str(data.get("model") or "-"), started or "-",
                      [_table(e) for e in data["evals"] if isinstance(e, dict)]) for started, name, data in loaded]
    return EvalsPage(list(reversed(reports)), _trends(reports), problems)


def _trends(reports: list[Report]) -> list[Trend]:
    series: dict[tuple[str, str], list[float]] = {}
    for report in reports:   # oldest first
        for table in report.evals:
            for name, mean, _ in table.scores:
                if mean != "-":
                    series.setdefault((table.name, name), []).append(float(mean))
    trends = []
    for (eval_name, score), means in series.items():
        step = TREND_W / max(1, len(means) - 1)
        points = " ".join(f"{i * step:.1f},{(1 - min(1.0, max(0.0, m))) * (TREND_H - 4) + 2:.1f}"
                          for i, m in enumerate(means))
        change = "" if len(means) < 2 else f"{means[-1] - means[-2]:+.3f}"
        trends.append(Trend(eval_name, score, means, points, f"{means[-1]:.3f}", change))
    return trends
