"""`sage check`: load and resolve the entry module tree and every test file, report diagnostics (SPEC §10.2)."""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic, display_path, format_diagnostics

if TYPE_CHECKING:
    from ..session import Session


def discover_test_files(root: str) -> list[str]:
    start = os.path.join(root, "src") if os.path.isdir(os.path.join(root, "src")) else root
    found = []
    for directory, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in files:
            if f.endswith("_test.sg"):
                found.append(os.path.join(directory, f))
    return sorted(found)


def check_files(session: Session, entry: str | None, test_files: list[str],
                verify_tools: bool = False) -> tuple[list[Diagnostic], set[str]]:
    diags: list[Diagnostic] = []
    files: set[str] = set()
    described: dict = {}   # each verified server is contacted once per command
    targets = ([entry] if entry else []) + test_files
    for path in targets:
        program, found = session.analyze(path, test_file=path.endswith("_test.sg"))
        files.update(os.path.abspath(m.path) for m in program.modules)
        diags.extend(found)
        if verify_tools:
            from ..mcp.verify import verify_tool_blocks
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
    if explicit and explicit.endswith("_test.sg"):
        entry_file, tests = None, [explicit]
    else:
        entry_file = entry if os.path.isfile(entry) else None
        tests = [] if explicit else discover_test_files(session.root)
    if entry_file is None and not tests:
        sys.stderr.write(f"error: no entry file found (looked for {display_path(entry)})\n")
        return 1
    diags, files = check_files(session, entry_file, tests, verify_tools=args.verify_tools)
    errors = [d for d in diags if d.severity == "error"]
    warnings = [d for d in diags if d.severity != "error"]
    if args.format == "json":
        for d in sorted(diags, key=Diagnostic.sort_key):
            sys.stdout.write(json.dumps(_as_json(d), ensure_ascii=False) + "\n")
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
    return out
