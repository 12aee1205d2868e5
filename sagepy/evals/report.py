"""The report of `sage eval` (SPEC §22.1): each eval's summary (score means and their standard deviation
across repeats, pass rate, usage, latency percentiles), the table printed on stdout with the failed cases, the
JSON document of `--json` (and of the copy kept under `.sage/evals/`), and the comparison with a baseline.
"""
from __future__ import annotations

import math
from typing import Any

from .cases import CaseResult

FAILED_SHOWN = 20   # failed cases listed per eval; the JSON report has them all


class EvalReport:
    """The cases of one eval, as they finish."""

    def __init__(self, name: str, file: str, dataset: str) -> None:
        self.name = name
        self.file = file
        self.dataset = dataset
        self.cases: list[CaseResult] = []

    def add(self, case: CaseResult) -> None:
        self.cases.append(case)

    @property
    def failed(self) -> int:
        return sum(1 for c in self.cases if not c.passed)

    @property
    def errors(self) -> int:
        return sum(1 for c in self.cases if c.error is not None)

    def cost(self) -> float | None:
        costs = [c.usage.get("cost") for c in self.cases]
        known = [c for c in costs if c is not None]
        return sum(known) if known else None

    def summary(self) -> dict:
        ordered = sorted(self.cases, key=lambda c: (c.row, c.repeat))
        names: list[str] = []
        for case in ordered:
            names.extend(n for n in case.scores if n not in names)
        scores = {}
        for name in names:
            values = [c.scores[name] for c in ordered if name in c.scores]
            by_repeat: dict[int, list[float]] = {}
            for c in ordered:
                if name in c.scores:
                    by_repeat.setdefault(c.repeat, []).append(c.scores[name])
            means = [sum(v) / len(v) for v in by_repeat.values()]
            scores[name] = {"mean": _round(sum(values) / len(values)), "stdev": _round(_pstdev(means))}
        latencies = sorted(c.latency_ms for c in ordered)
        total = len(ordered)
        return {"scores": scores,
                "pass_rate": _round(sum(1 for c in ordered if c.passed) / total) if total else 0.0,
                "usage": {"input_tokens": sum(c.usage.get("input_tokens") or 0 for c in ordered),
                          "output_tokens": sum(c.usage.get("output_tokens") or 0 for c in ordered),
                          "cost": self.cost()},
                "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)}}

    def as_json(self) -> dict:
        return {"name": self.name, "file": self.file, "dataset": self.dataset,
                "cases": [c.as_json() for c in sorted(self.cases, key=lambda c: (c.row, c.repeat))],
                "summary": self.summary()}


def _round(x: float) -> float:
    return round(x, 6)


def _pstdev(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _percentile(ordered: list[int], p: int) -> int:
    """The nearest-rank percentile of sorted values (0 for none)."""
    if not ordered:
        return 0
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def document(reports: list[EvalReport], model: str | None, started_at: str, incomplete: bool) -> dict:
    data: dict[str, Any] = {"version": 1, "evals": [r.as_json() for r in reports], "model": model,
                            "started_at": started_at}
    if incomplete:
        data["incomplete"] = True
    return data


# ---------------------------------------------------------------- baseline and gates
def regressions(data: dict, baseline: dict | None, repeats: int) -> dict[tuple[str, str], tuple[float, bool]]:
    """(eval, score) -> (signed change of the mean, whether it is a regression), for the scores the baseline
    has too: a regression is a fall of more than twice the larger stdev, or of more than 0.05 with one repeat."""
    if baseline is None:
        return {}
    before = {e.get("name"): e.get("summary", {}).get("scores", {}) for e in baseline.get("evals", [])
              if isinstance(e, dict)}
    changes = {}
    for e in data["evals"]:
        old = before.get(e["name"])
        if not isinstance(old, dict):
            continue
        for name, now in e["summary"]["scores"].items():
            was = old.get(name)
            if not isinstance(was, dict) or not isinstance(was.get("mean"), (int, float)):
                continue
            change = now["mean"] - was["mean"]
            limit = 0.05 if repeats == 1 else 2 * max(now["stdev"], float(was.get("stdev") or 0.0))
            changes[(e["name"], name)] = (change, -change > limit)
    return changes


def gate_failures(data: dict, gates: list[tuple[str, float]]) -> list[str]:
    """`--fail-under NAME=X`: every eval that has score NAME needs a mean of at least X."""
    failed = []
    for name, threshold in gates:
        for e in data["evals"]:
            score = e["summary"]["scores"].get(name)
            if score is not None and score["mean"] < threshold:
                failed.append(f"gate failed: score \"{name}\" of eval \"{e['name']}\" has mean "
                              f"{score['mean']:.3f}, under {threshold:g}")
    return failed


# ---------------------------------------------------------------- the table
def table_lines(report: EvalReport, summary: dict, repeats: int,
                changes: dict[tuple[str, str], tuple[float, bool]]) -> list[str]:
    cases = len(report.cases)
    rows = cases // repeats if repeats else cases
    lines = [f"eval \"{report.name}\" ({report.file}: {rows} row{'s' * (rows != 1)} x {repeats} "
             f"repeat{'s' * (repeats != 1)})"]
    scores = summary["scores"]
    width = max([len("score")] + [len(n) for n in scores])
    baseline = any((report.name, n) in changes for n in scores)
    head = f"  {'score':<{width}}  {'mean':>6}  {'stdev':>6}" + ("  baseline" if baseline else "")
    lines.append(head.rstrip())
    for name, s in scores.items():
        line = f"  {name:<{width}}  {s['mean']:>6.3f}  {s['stdev']:>6.3f}"
        change = changes.get((report.name, name))
        if change is not None:
            line += f"  {change[0]:+.3f}" + (" regression" if change[1] else "")
        lines.append(line)
    usage = summary["usage"]
    passed = sum(1 for c in report.cases if c.passed)
    cost = f"${usage['cost']:.4f}" if usage["cost"] is not None else "-"
    lines.append(f"  pass rate {summary['pass_rate'] * 100:.1f}% ({passed}/{cases})  tokens "
                 f"{usage['input_tokens']} in / {usage['output_tokens']} out  cost {cost}  latency p50 "
                 f"{summary['latency_ms']['p50']} ms  p95 {summary['latency_ms']['p95']} ms")
    failed = [c for c in sorted(report.cases, key=lambda c: (c.row, c.repeat)) if not c.passed]
    if failed:
        lines.append("  failed cases:")
        for case in failed[:FAILED_SHOWN]:
            lines.extend(_failed_lines(case))
        if len(failed) > FAILED_SHOWN:
            lines.append(f"    … and {len(failed) - FAILED_SHOWN} more (see the JSON report)")
    return lines


def _failed_lines(case: CaseResult) -> list[str]:
    what = case.error if case.error is not None else ", ".join(case.false_scores)
    first, *rest = what.split("\n")
    lines = [f"    row {case.row} (repeat {case.repeat}): {first}"]
    lines.extend(f"      {line}" for line in rest)
    if case.value:
        lines.append(f"      value: {case.value!r}"[:240])
    return lines
