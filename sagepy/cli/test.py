"""`sage test` (SPEC §9.2–9.4): select, run and report tests; JUnit XML on request."""
from __future__ import annotations

import sys
import time
from typing import Any

from ..diagnostics import display_path, format_diagnostics


def add_arguments(parser: Any) -> None:
    parser.add_argument("path", nargs="?", default=".", metavar="PATH",
                        help="a *_test.sg file or a directory (default: .)")
    parser.add_argument("--filter", metavar="S", help="run tests whose name contains S")
    parser.add_argument("--file", metavar="F", help="run the files whose project-relative path is or ends with F")
    parser.add_argument("--list", action="store_true", help="list the selected tests and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show output and timing of every test")
    parser.add_argument("--serial", action="store_true", help="run every test alone")
    parser.add_argument("--real-llm", action="store_true", help="call the configured LLM when no divine mock is left")
    parser.add_argument("--junit-xml", metavar="PATH", help="also write JUnit XML to PATH")
    parser.add_argument("--timeout-ms", type=int, metavar="N", help="per-test time limit (default [test] timeout_ms "
                        "or 10000)")


def run_test_command(args: Any) -> int:
    from ..project import ProjectError
    from ..session import Session
    from ..testing.runner import Selection, TestResult, discover, format_result, load_test_file, run_all
    try:
        session, _ = Session.open(args.path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    started = time.monotonic()
    files = discover(args.path)
    if not files:
        sys.stderr.write("no test files found (files must end in _test.sg)\n")
        return 1
    selection = Selection(args.filter, args.file, session.root)
    timeout_ms = args.timeout_ms or session.settings.test.timeout_ms
    entries: list = []
    skipped: list[TestResult] = []
    file_count = 0
    for path in files:
        if not selection.keeps_file(path):
            continue
        loaded = load_test_file(path, session)
        if loaded.has_errors:
            from ..render import write_diagnostics
            write_diagnostics(format_diagnostics(loaded.diagnostics) + "\n\n")
            entries.append(TestResult(f"{display_path(path)}: file has errors", "fail", "file has errors",
                                      file=path))
            file_count += 1
            continue
        kept = [c for c in loaded.cases if selection.keeps(c)]
        skipped.extend(TestResult(c.label, "skip", name=c.name, file=c.file) for c in loaded.cases
                       if not selection.keeps(c))
        if kept:
            file_count += 1
        entries.extend(kept)
    selected = [e for e in entries]
    if args.list:
        for e in selected:
            print(e.label)
        return 0
    if not selected:
        sys.stderr.write("no tests matched\n")
        return 1
    count = len(selected)
    print(f"running {count} test{'s' if count != 1 else ''} from {file_count} file{'s' if file_count != 1 else ''}",
          flush=True)

    def emit(result: TestResult) -> None:
        if result.detail == "file has errors" and result.status == "fail":
            print(f"FAIL {result.label}", flush=True)
            return
        for line in format_result(result, args.verbose):
            print(line, flush=True)

    results = run_all(selected, timeout_ms, args.real_llm, args.serial, emit)
    if args.verbose:
        for s in skipped:
            print(f"SKIP {s.label}")
    passed = sum(1 for r in results if r.status == "pass")
    failed = sum(1 for r in results if r.status == "fail")
    elapsed = time.monotonic() - started
    verdict = "ok" if failed == 0 else "FAILED"
    print(f"\ntest result: {verdict}. {passed} passed, {failed} failed, {len(skipped)} skipped [{elapsed:.2f}s]")
    if args.junit_xml:
        from ..testing.junit import write_junit
        write_junit(args.junit_xml, results + skipped)
    return 0 if failed == 0 else 1
