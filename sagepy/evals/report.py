"""The report of `sage eval` (SPEC §22.1): each eval's summary (score means and their standard deviation
across repeats, pass rate, usage, latency percentiles), the table printed on stdout with the failed cases, the
JSON document of `--json` (and of the copy kept under `.sage/evals/`), and the comparison with a baseline.
"""
from __future__ import annotations

import heapq
import json
import math
from array import array
from typing import Any, Iterator, TextIO

from .cases import CaseResult

FAILED_SHOWN = 20   # failed cases listed per eval; the JSON report has them all


class EvalReport:
    """The cases of one eval, as they finish: counted and summed at once, each written to a temporary file
    (so that an eval of 100,000 cases keeps little in memory), read back in row order for the JSON report."""

    def __init__(self, name: str, file: str, dataset: str) -> None:
        import tempfile
        self.name = name
        self.file = file
        self.dataset = dataset
        self.count = 0
        self.passed = 0
        self.errors = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._cost: float | None = None
        self.latencies = array("l")
        self.names: list[str] = []                       # score names, in order of first appearance
        self.sums: dict[str, dict[int, list[float]]] = {}   # score -> repeat -> [sum, count]
        self.first_failed: list[tuple[int, int, CaseResult]] = []   # the FAILED_SHOWN first by (row, repeat)
        self.spill = tempfile.TemporaryFile("w+b")
        self.index = array("q")   # (row, repeat, offset in the spill file) of each case, flat

    def add(self, case: CaseResult) -> None:
        self.count += 1
        self.passed += case.passed
        self.errors += case.error is not None
        self.input_tokens += case.usage.get("input_tokens") or 0
        self.output_tokens += case.usage.get("output_tokens") or 0
        if case.usage.get("cost") is not None:
            self._cost = (self._cost or 0.0) + case.usage["cost"]
        self.latencies.append(case.latency_ms)
        for name, value in case.scores.items():
            if name not in self.sums:
                self.names.append(name)
                self.sums[name] = {}
            total = self.sums[name].setdefault(case.repeat, [0.0, 0])
            total[0] += value
            total[1] += 1
        if not case.passed:
            heapq.heappush(self.first_failed, (-case.row, -case.repeat, case))
            if len(self.first_failed) > FAILED_SHOWN:
                heapq.heappop(self.first_failed)
        self.index.extend((case.row, case.repeat, self.spill.tell()))
        self.spill.write(json.dumps(case.as_json(), ensure_ascii=False).encode("utf-8") + b"\n")

    @property
    def failed(self) -> int:
        return self.count - self.passed

    def cost(self) -> float | None:
        return self._cost

    def failed_cases(self) -> list[CaseResult]:
        """The first failed cases in row order (at most FAILED_SHOWN)."""
        return [c for _, _, c in sorted(self.first_failed, key=lambda t: (-t[0], -t[1]))]

    def summary(self) -> dict:
        scores = {}
        for name in self.names:
            by_repeat = self.sums[name]
            total = sum(t[0] for t in by_repeat.values())
            count = sum(t[1] for t in by_repeat.values())
            means = [t[0] / t[1] for _, t in sorted(by_repeat.items())]
            scores[name] = {"mean": _round(total / count), "stdev": _round(_pstdev(means))}
        latencies = sorted(self.latencies)
        return {"scores": scores,
                "pass_rate": _round(self.passed / self.count) if self.count else 0.0,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "cost": self._cost},
                "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)}}

    def case_lines(self) -> Iterator[str]:
        """Every case's JSON text, in row order, read back one at a time from the temporary file."""
        index = self.index
        order = sorted(range(0, len(index), 3), key=lambda i: (index[i], index[i + 1]))
        for i in order:
            self.spill.seek(index[i + 2])
            yield self.spill.readline().decode("utf-8").rstrip("\n")
        self.spill.seek(0, 2)

    def header(self) -> dict:
        return {"name": self.name, "file": self.file, "dataset": self.dataset, "summary": self.summary()}

    def close(self) -> None:
        self.spill.close()


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
    """The report without its cases: what the table, the baseline comparison and the gates read."""
    data: dict[str, Any] = {"version": 1, "evals": [r.header() for r in reports], "model": model,
                            "started_at": started_at}
    if incomplete:
        data["incomplete"] = True
    return data


def write_json(handle: TextIO, data: dict, reports: list[EvalReport]) -> None:
    """Write the JSON report (`--json`, and the copy under .sage/evals/): `data` with every eval's cases in row
    order, each put in as the JSON text it was written as, one at a time."""
    handle.write('{"version": 1, "evals": [')
    for n, (header, report) in enumerate(zip(data["evals"], reports)):
        head = json.dumps({k: header[k] for k in ("name", "file", "dataset")}, ensure_ascii=False)[:-1]
        handle.write((", " if n else "") + head + ', "cases": [')
        for k, line in enumerate(report.case_lines()):
            handle.write((", " if k else "") + line)
        handle.write('], "summary": ' + json.dumps(header["summary"], ensure_ascii=False) + "}")
    rest = json.dumps({k: v for k, v in data.items() if k not in ("version", "evals")}, ensure_ascii=False)[1:]
    handle.write("], " + rest + "\n")


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
    cases = report.count
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
    passed = report.passed
    cost = f"${usage['cost']:.4f}" if usage["cost"] is not None else "-"
    lines.append(f"  pass rate {summary['pass_rate'] * 100:.1f}% ({passed}/{cases})  tokens "
                 f"{usage['input_tokens']} in / {usage['output_tokens']} out  cost {cost}  latency p50 "
                 f"{summary['latency_ms']['p50']} ms  p95 {summary['latency_ms']['p95']} ms")
    failed = report.failed_cases()
    if failed:
        lines.append("  failed cases:")
        for case in failed:
            lines.extend(_failed_lines(case))
        if report.failed > len(failed):
            lines.append(f"    … and {report.failed - len(failed)} more (see the JSON report)")
    return lines


def _failed_lines(case: CaseResult) -> list[str]:
    what = case.error if case.error is not None else ", ".join(case.false_scores)
    first, *rest = what.split("\n")
    lines = [f"    row {case.row} (repeat {case.repeat}): {first}"]
    lines.extend(f"      {line}" for line in rest)
    if case.value:
        lines.append(f"      value: {case.value!r}"[:240])
    return lines
