"""`sage check`: load and resolve the entry module tree and every test file, report diagnostics (SPEC §10.2)."""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, display_path, format_diagnostics

if TYPE_CHECKING:
    from ..session import Session


def check_files(session: Session, entry: str | None, test_files: list[str],
                verify_tools: bool = False) -> tuple[list[Diagnostic], set[str]]:
    diags: list[Diagnostic] = []
    files: set[str] = set()
    described: dict = {}   # each verified server is contacted once per command
    targets = ([entry] if entry else []) + test_files
    from ..engine import analyze
    for path in targets:
        program, found = analyze(session, path)
        files.update(os.path.abspath(m.path) for m in program.modules)
        diags.extend(found)
        if verify_tools:
            from ..mcptools.verify import verify_tool_blocks
            diags.extend(verify_tool_blocks(program, session.settings, described))
    unique: dict[tuple, Diagnostic] = {}
    for d in diags:
        unique.setdefault((os.path.abspath(d.file or ""), d.span, d.code), d)
    return list(unique.values()), files


def run_check(args: Any) -> int:
    from ..project import ProjectError
    from ..session import Session
    try:
        session, explicit = Session.open(args.path)
    except ProjectError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    entry = explicit or session.entry_file()
    if explicit and explicit.endswith(("_test.sg", "_eval.sg")):
        entry_file, tests = None, [explicit]
    else:
        entry_file = entry if os.path.isfile(entry) else None
        from ..testfiles import EVAL_SUFFIX, TEST_SUFFIX, test_files
        tests = [] if explicit else test_files(session.root, session.settings.grove_path is not None,
                                               (TEST_SUFFIX, EVAL_SUFFIX))
    if entry_file is None and not tests:
        sys.stderr.write(f"error: no entry file found (looked for {display_path(entry)})\n")
        return 1
    diags, files = check_files(session, entry_file, tests, verify_tools=args.verify_tools)
    errors = [d for d in diags if d.severity == "error"]
    warnings = [d for d in diags if d.severity != "error"]
    if args.format == "json":
        document = {"ok": not errors, "files": len(files), "errors": len(errors), "warnings": len(warnings),
                    "diagnostics": [_as_json(d) for d in sorted(diags, key=Diagnostic.sort_key)]}
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        if errors:
            sys.stderr.write(f"check failed: {_count(len(errors), 'error')}, {_count(len(warnings), 'warning')}\n")
        return 1 if errors else 0
    if args.format == "github":
        for d in sorted(diags, key=Diagnostic.sort_key):
            sys.stdout.write(_as_github(d) + "\n")
    elif diags:
        from ..render import write_diagnostics
        write_diagnostics(format_diagnostics(diags) + "\n\n")
    if errors:
        sys.stderr.write(f"check failed: {_count(len(errors), 'error')}, {_count(len(warnings), 'warning')}\n")
        return 1
    print(f"check passed: {_count(len(files), 'file')}, {_count(len(warnings), 'warning')}")
    return 0


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _as_json(d: Diagnostic) -> dict:
    line, col, end_line, end_col = d.span if d.span else (0, 0, 0, 0)
    out = {"file": display_path(d.file), "line": line, "col": col, "end_line": end_line, "end_col": end_col,
           "code": d.code, "severity": d.severity, "message": d.message}
    if d.hint:
        out["hint"] = d.hint
    if d.notes:
        out["notes"] = list(d.notes)
    return out


def _as_github(d: Diagnostic) -> str:
    """A GitHub Actions workflow command: the annotation shows on the line in a pull request."""
    line, col, end_line, end_col = d.span if d.span else (1, 1, 1, 1)
    level = "error" if d.severity == "error" else "warning"
    where = f"file={_github_property(display_path(d.file))},line={line},col={col},endLine={end_line},endColumn={end_col}"
    message = d.message + (f"\n= help: {d.hint}" if d.hint else "")
    return f"::{level} {where},title={_github_property(d.code)}::{_github_data(message)}"


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")
