"""`sage eval` (SPEC §22.1): find the evals, check every dataset before anything runs, run each row's case
`--repeat` times with up to `--concurrency` at once (rows read one at a time), and report.

Exit codes: 0; 1 when a case failed to run (an error, not a false score), a `--fail-under` gate failed,
`--fail-on-regression` found a regression, or an eval file has errors; 2 usage errors (a bad option value, a
dataset that cannot be read: nothing runs); 3 no eval found; 130 when interrupted (the partial report is
written and marked incomplete).
"""
from __future__ import annotations

import datetime
import json
import os
import sys
import time
from typing import Any, Callable

from ..diagnostics import display_path
from .cases import CaseResult, CaseRunner, EvalSpec
from .datasets import DatasetError, open_dataset, rows
from .report import EvalReport, document, gate_failures, regressions, table_lines


class UsageError(Exception):
    """A bad option value: exit 2 with the message."""


def parse_gates(values: list[list[str]] | None) -> list[tuple[str, float]]:
    gates = []
    for value in [v for group in values or [] for v in group]:
        name, sep, number = value.partition("=")
        try:
            threshold = float(number)
        except ValueError:
            threshold = None
        if not sep or not name or threshold is None:
            raise UsageError(f"--fail-under takes NAME=X with X a number, not '{value}'")
        gates.append((name, threshold))
    return gates


def find_specs(session: Any, files: list[str], name_filter: str | None) -> tuple[list[EvalSpec], list]:
    """The compiled evals of `files` (declaration order), and the diagnostics of files that have errors."""
    from ..engine.program import CheckFailed, compile_session
    specs, problems = [], []
    for path in files:
        try:
            program = compile_session(session, path, require_run=False, test_file=True)
        except CheckFailed as failed:
            problems.extend(failed.diagnostics)
            continue
        for decl, body, env in program.code.evals:
            if os.path.abspath(env.path) != os.path.abspath(path):
                continue
            if name_filter is not None and name_filter not in decl.name:
                continue
            dataset = os.path.join(os.path.dirname(os.path.abspath(path)), decl.dataset)
            specs.append(EvalSpec(path, decl.name, dataset, decl.row_t, body, session))
    return specs, problems


def _started_at() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """One rich bar per eval on a terminal (cases done, failures, cost so far); nothing when piped."""

    def __init__(self) -> None:
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bars, TextColumn
            self.bar = Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failed]} failed  {task.fields[cost]}"),
                            console=Console(file=sys.stderr), transient=False)
            self.bar.start()

    def task(self, name: str, total: Callable[[], int | None]) -> Any:
        """The bar of an eval; `total` counts its cases, only when there is a bar to show them on."""
        if self.bar is None:
            return None
        return self.bar.add_task(name, total=total(), failed=0, cost="")

    def advance(self, task: Any, report: EvalReport) -> None:
        if task is None:
            return
        cost = report.cost()
        self.bar.update(task, advance=1, failed=report.failed, cost=f"${cost:.4f}" if cost is not None else "")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _expected_cases(path: str, limit: int | None, repeats: int) -> int | None:
    """How many cases an eval will have, for its bar: its rows (non-blank lines, less a CSV header), at most
    `limit` (counting stops there, so a huge dataset is not read through for it)."""
    header = 1 if path.endswith(".csv") else 0
    lines = 0
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    lines += 1
                    if limit is not None and lines >= limit + header:
                        break
    except OSError:
        return None
    return max(0, lines - header) * repeats


def run_evals(specs: list[EvalSpec], options: Any, out: Any) -> tuple[list[EvalReport], bool]:
    """Run every eval; (their reports, whether they were interrupted)."""
    for spec in specs:   # every dataset is checked before anything runs
        open_dataset(spec.dataset).close()
    runner = CaseRunner(options.record, options.replay)
    progress = Progress()
    reports: list[EvalReport] = []
    interrupted = False
    try:
        for spec in specs:
            report = EvalReport(spec.name, display_path(spec.file), display_path(spec.dataset))
            reports.append(report)
            task = progress.task(spec.name, lambda: _expected_cases(spec.dataset, options.limit, options.repeat))
            if _run_one(spec, report, runner, options, lambda: progress.advance(task, report)):
                interrupted = True
                break
    finally:
        progress.stop()
    return reports, interrupted


def _run_one(spec: EvalSpec, report: EvalReport, runner: CaseRunner, options: Any, advanced: Any) -> bool:
    """The cases of one eval, up to `--concurrency` at once (sagepy.evals.pool); True when Ctrl-C stopped
    them."""
    from .pool import CasePool

    def done(result: CaseResult) -> None:
        report.add(result)
        advanced()

    with open_dataset(spec.dataset) as handle:
        source = ((row, repeat) for row in rows(handle, spec.dataset, spec.row_type, options.limit)
                  for repeat in range(1, options.repeat + 1))
        return CasePool(spec, runner, source, options.concurrency, done).run()


def report_and_exit(reports: list[EvalReport], options: Any, session: Any, started_at: str,
                    interrupted: bool, elapsed: float) -> int:
    model = session.settings.llm.model
    data = document(reports, model, started_at, interrupted)
    baseline = None
    if options.baseline:
        baseline = _read_baseline(options.baseline)
    changes = regressions(data, baseline, options.repeat)
    summaries = {e["name"]: e["summary"] for e in data["evals"]}
    lines: list[str] = []
    for report in reports:
        lines.extend(table_lines(report, summaries[report.name], options.repeat, changes))
        lines.append("")
    gates = gate_failures(data, options.gates)
    lines.extend(gates)
    regressed = [f"regression: score \"{score}\" of eval \"{name}\" fell by {-change:.3f}"
                 for (name, score), (change, bad) in changes.items() if bad]
    errors = sum(r.errors for r in reports)
    cases = sum(r.count for r in reports)
    failed = sum(r.failed for r in reports)
    verdict = "incomplete" if interrupted else "FAILED" if (errors or gates or (
        regressed and options.fail_on_regression)) else "ok"
    lines.append(f"eval result: {verdict}. {len(reports)} eval{'s' * (len(reports) != 1)}, {cases} "
                 f"case{'s' * (cases != 1)}, {failed} failed, {errors} error{'s' * (errors != 1)} [{elapsed:.2f}s]")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    _write_reports(data, reports, changes, options, session)
    for report in reports:
        report.close()
    if interrupted:
        return 130
    if errors or gates or (regressed and options.fail_on_regression):
        return 1
    return 0


def _read_baseline(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise UsageError(f"baseline {path} not found") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"baseline {path} is not a JSON report of sage eval: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("evals"), list):
        raise UsageError(f"baseline {path} is not a JSON report of sage eval")
    return data


def _write_reports(data: dict, reports: list[EvalReport], changes: dict, options: Any, session: Any) -> None:
    """The JSON report is written once, under .sage/evals/, then copied to --json; the HTML page is made from
    it. A file that cannot be written is an error message; the others are still written."""
    import shutil
    from .report import write_json
    stamp = data["started_at"].replace("-", "").replace(":", "").replace("T", "-").rstrip("Z")
    folder = os.path.join(session.root, ".sage", "evals")
    kept = os.path.join(folder, f"{stamp}.json")
    try:
        os.makedirs(folder, exist_ok=True)
        # never over another report started in the same second: the next free name, which sorts after it
        n = 1
        while True:
            try:
                handle = open(kept, "x", encoding="utf-8")
                break
            except FileExistsError:
                n += 1
                kept = os.path.join(folder, f"{stamp}_{n}.json")
        with handle:
            write_json(handle, data, reports)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {kept}: {exc.strerror or exc}\n")
        return
    for path, make in ((options.json, lambda target: shutil.copyfile(kept, target)),
                       (options.html, lambda target: _write_html(kept, target, changes))):
        if not path:
            continue
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            make(path)
        except OSError as exc:
            sys.stderr.write(f"error: cannot write {path}: {exc.strerror or exc}\n")


def _write_html(source: str, target: str, changes: dict) -> None:
    from .html import render
    with open(source, encoding="utf-8") as handle:
        data = json.load(handle)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(render(data, changes))


def eval_command(options: Any) -> int:
    from ..project import ProjectError
    from ..session import Session
    from ..testfiles import EVAL_SUFFIX, test_files
    try:
        options.gates = parse_gates(options.fail_under)
        for name in ("repeat", "concurrency"):
            if getattr(options, name) < 1:
                raise UsageError(f"--{name} must be at least 1")
        if options.limit is not None and options.limit < 0:
            raise UsageError("--limit must not be negative")
    except UsageError as exc:
        sys.stderr.write(f"sage eval: error: {exc}\n")
        return 2
    try:
        session, explicit = Session.open(options.path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if explicit is not None and not explicit.endswith(EVAL_SUFFIX):
        sys.stderr.write(f"error: {display_path(explicit)} is not an eval file (its name must end in _eval.sg)\n")
        return 2
    target = options.path or "."
    files = [explicit] if explicit else test_files(target, session.settings.grove_path is not None, (EVAL_SUFFIX,))
    if not files:
        sys.stderr.write("no eval found (files must end in _eval.sg)\n")
        return 3
    if options.model:
        session.settings.llm.model = options.model
    specs, problems = find_specs(session, files, options.filter)
    if problems:
        from ..diagnostics import format_diagnostics
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics([d for d in problems if d.severity == "error"]) + "\n")
        return 1
    if not specs:
        sys.stderr.write("no eval matched\n" if options.filter is not None else "no eval found\n")
        return 3
    started_at, started = _started_at(), time.monotonic()
    try:
        if options.baseline:
            _read_baseline(options.baseline)
        reports, interrupted = run_evals(specs, options, sys.stdout)
        return report_and_exit(reports, options, session, started_at, interrupted, time.monotonic() - started)
    except DatasetError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except UsageError as exc:
        sys.stderr.write(f"sage eval: error: {exc}\n")
        return 2
