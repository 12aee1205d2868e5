"""`sage test` (SPEC §9.2–9.4): select, run and report tests; JUnit XML on request."""
from __future__ import annotations

import os
import sys
import time
from typing import Any

from ..diagnostics import format_diagnostics


def add_arguments(parser: Any) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="a *_test.sg file, a directory (default: .) or a test id FILE::NAME as --list prints it")
    parser.add_argument("--filter", metavar="S", help="run tests whose name contains S")
    parser.add_argument("-k", metavar="EXPR", dest="keyword",
                        help="run tests whose id matches the words of EXPR (and, or, not, parentheses)")
    parser.add_argument("-x", "--exitfirst", action="store_true", help="stop after the first failure")
    parser.add_argument("--lf", "--last-failed", action="store_true", dest="last_failed",
                        help="run only the tests that failed last time (all when none failed)")
    parser.add_argument("--file", metavar="F", help="run the files whose project-relative path is or ends with F")
    parser.add_argument("--list", action="store_true", help="list the selected tests and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show output and timing of every test")
    parser.add_argument("--serial", action="store_true", help="run every test alone")
    parser.add_argument("--real-llm", action="store_true", help="call the configured LLM when no divine mock is left")
    parser.add_argument("--replay", metavar="FILE", help="answer the model turns and tool calls that no mock "
                        "answers from the cassette FILE (written by `sage run --record`)")
    parser.add_argument("--junit-xml", metavar="PATH", help="also write JUnit XML to PATH")
    parser.add_argument("--timeout-ms", type=int, metavar="N", help="per-test time limit (default [test] timeout_ms "
                        "or 10000)")


def run_test_command(args: Any) -> int:
    from ..project import ProjectError
    from ..session import Session
    from ..testing.selection import SelectionError, split_test_id
    targets = [split_test_id(p) for p in args.paths or ["."]]
    try:
        session, _ = Session.open(targets[0][0])
        for path, _name in targets[1:]:
            if not os.path.exists(path):
                raise ProjectError(f"no such file or directory: {path}")
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    try:
        return _run(args, session, targets)
    except SelectionError as exc:
        sys.stderr.write(f"sage test: error: {exc}\n")
        return 2


def _run(args: Any, session: Any, targets: list[tuple[str, str | None]]) -> int:
    from ..testfiles import test_files
    from ..testing.runner import TestResult, format_result, load_test_file, run_all
    from ..testing.selection import Selection, read_last_failed
    started = time.monotonic()
    in_project = session.settings.grove_path is not None
    files: list[str] = []
    ids: dict[str, set[str] | None] = {}
    for path, name in targets:
        found = test_files(path, in_project) if os.path.isdir(path) else \
            [os.path.abspath(path)] if path.endswith("_test.sg") else []
        for f in found:
            if f not in ids:
                files.append(f)
            if name is None or (f in ids and ids[f] is None):
                ids[f] = None
            else:
                ids.setdefault(f, set()).add(name)
    if not files:
        sys.stderr.write("no test files found (files must end in _test.sg)\n")
        return 1
    last_failed = read_last_failed(session.root) if args.last_failed else None
    selection = Selection(session.root, filter_text=args.filter, file_filter=args.file, keyword=args.keyword,
                          ids=ids, last_failed=last_failed or None)
    entries: list = []
    deselected = 0
    file_count = 0
    diagnostics: dict[str, str] = {}
    for path in files:
        if not selection.keeps_file(path):
            continue
        loaded = load_test_file(path, session)
        if loaded.has_errors:
            errors = [r for r in loaded.error_results() if not r.name or selection.keeps(path, r.name)]
            deselected += len(loaded.error_results()) - len(errors)
            if errors:
                diagnostics[errors[0].label] = format_diagnostics(loaded.diagnostics) + "\n\n"
                file_count += 1
            entries.extend(errors)
            continue
        kept = [c for c in loaded.cases if selection.keeps(c.file, c.name)]
        deselected += len(loaded.cases) - len(kept)
        if kept:
            file_count += 1
        entries.extend(kept)
    if args.list:
        for e in entries:
            print(e.label)
        return 0
    if not entries:
        sys.stderr.write("no tests matched\n")
        return 1
    from ..render import test_line_writer, write_diagnostics
    write = test_line_writer()
    count = len(entries)
    header = f"running {count} test{'s' if count != 1 else ''} from {file_count} file{'s' if file_count != 1 else ''}"
    write(header + (f" ({deselected} deselected)" if deselected else ""))

    def emit(result: TestResult) -> None:
        for line in format_result(result, args.verbose):
            write(line)
        if result.label in diagnostics:
            write_diagnostics(diagnostics.pop(result.label))

    timeout_ms = args.timeout_ms or session.settings.test.timeout_ms
    results = run_all(entries, timeout_ms, args.real_llm, args.serial, emit, exit_first=args.exitfirst,
                      replay=args.replay)
    passed = sum(1 for r in results if r.status == "pass")
    failures = [r for r in results if r.status != "pass"]
    _remember_failures(session.root, selection, results)
    if failures:
        write("")
        write("failures:")
        for r in failures:
            write(f"    {r.label}")
        write("rerun them with: sage test --lf")
    elapsed = time.monotonic() - started
    verdict = "ok" if not failures else "FAILED"
    write("")
    write(f"test result: {verdict}. {passed} passed, {len(failures)} failed, 0 skipped [{elapsed:.2f}s]")
    if args.junit_xml:
        from ..testing.junit import write_junit
        write_junit(args.junit_xml, results)
    return 0 if not failures else 1


def _remember_failures(root: str, selection: Any, results: list) -> None:
    """`.sage/lastfailed` keeps failures of earlier runs that this run did not repeat, like pytest's cache."""
    from ..testing.selection import read_last_failed, write_last_failed
    previous = read_last_failed(root)
    ran = {selection.stored_id(r.file, r.name or "") for r in results}
    failed = {selection.stored_id(r.file, r.name or "") for r in results if r.status != "pass"}
    remembered = (previous - ran) | failed
    if remembered != previous:
        write_last_failed(root, sorted(remembered))
