"""`sage fmt [PATH…] [--check] [--diff] [--stdin]`: rewrite Sage source in the canonical layout (SPEC §19.1).

Without PATH the project's `.sg` files are formatted (the discovery of `sage check`: under `src/` when the project
has one, recursively inside a project, the start directory alone outside one); a directory PATH is searched
recursively. A file is replaced atomically (a temporary file beside it, renamed over it, its mode kept) and
only after the formatter's own check that the output means the same program.
"""
from __future__ import annotations

import difflib
import os
import stat
import sys
import tempfile
from typing import Any

from ..diagnostics import Diagnostic, InvalidUtf8, decode_utf8, display_path, format_diagnostics, remember_source
from ..testfiles import NEVER_SEARCHED


def run_fmt(args: Any) -> int:
    if args.stdin:
        return _format_stdin()
    try:
        files = _files(args.paths)
    except FileNotFoundError as exc:
        sys.stderr.write(f"error: no such file or directory: {exc.args[0]}\n")
        return 1
    status = 0
    unchanged = 0
    for path in files:
        outcome = _format_file(path, args)
        if outcome == "unchanged":
            unchanged += 1
        elif outcome != "written":
            status = 1
    if not (args.check or args.diff):
        print(f"formatted {_count(len(files), 'file')} ({unchanged} unchanged)")
    return status


def _format_file(path: str, args: Any) -> str:
    """'unchanged', 'written', 'would change' or 'failed'."""
    from ..fmt import SyntaxErrors, UnsafeFormat, format_source
    shown = display_path(path)
    try:
        with open(path, "rb") as fh:
            text = decode_utf8(fh.read())
    except InvalidUtf8 as exc:
        _report([Diagnostic("E001", exc.reason, path, exc.span)])
        return "failed"
    except OSError as exc:
        sys.stderr.write(f"error: cannot read {shown}: {exc.strerror}\n")
        return "failed"
    try:
        formatted = format_source(text, path)
    except SyntaxErrors as exc:
        remember_source(path, text)
        _report(exc.diagnostics)
        return "failed"
    except UnsafeFormat:
        sys.stderr.write(f"error: internal error: formatting would change {shown}\n")
        return "failed"
    if formatted == text:
        return "unchanged"
    if args.check:
        print(f"would reformat {shown}")
        return "would change"
    if args.diff:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), formatted.splitlines(True),
                                                   f"{shown} (original)", f"{shown} (formatted)"))
        if not formatted.endswith("\n") or not text.endswith("\n"):
            sys.stdout.write("\n")
        return "would change"
    try:
        _write_atomically(path, formatted)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {shown}: {exc.strerror}\n")
        return "failed"
    return "written"


def _format_stdin() -> int:
    from ..fmt import SyntaxErrors, UnsafeFormat, format_source
    path = "<stdin>"
    try:
        text = decode_utf8(sys.stdin.buffer.read())
    except InvalidUtf8 as exc:
        _report([Diagnostic("E001", exc.reason, path, exc.span)])
        return 1
    try:
        formatted = format_source(text, path)
    except SyntaxErrors as exc:
        remember_source(path, text)
        _report(exc.diagnostics)
        return 1
    except UnsafeFormat:
        sys.stderr.write(f"error: internal error: formatting would change {path}\n")
        return 1
    sys.stdout.write(formatted)
    return 0


def _report(diagnostics: list[Diagnostic]) -> None:
    from ..render import write_diagnostics
    write_diagnostics(format_diagnostics(sorted(diagnostics, key=Diagnostic.sort_key)) + "\n\n")


def _write_atomically(path: str, text: str) -> None:
    path = os.path.realpath(path)   # a symlink keeps pointing at the file it names
    directory = os.path.dirname(path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=".sage-fmt-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _files(paths: list[str]) -> list[str]:
    """The `.sg` files to format, each once, in order."""
    if not paths:
        from ..project import locate_project
        root, grove, _ = locate_project(None)
        src = os.path.join(root, "src")
        start = src if os.path.isdir(src) else root
        return _search(start, recursive=grove is not None)
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(_search(path, recursive=True))
        elif os.path.exists(path):
            found.append(path)
        else:
            raise FileNotFoundError(path)
    return list(dict.fromkeys(found))


def _search(directory: str, recursive: bool) -> list[str]:
    found = []
    for current, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if recursive and not d.startswith(".") and d not in NEVER_SEARCHED)
        found.extend(os.path.join(current, f) for f in sorted(files) if f.endswith(".sg"))
    return found


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
