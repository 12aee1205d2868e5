"""Diagnostics: what the parser and checker report, and their plain-text layout (SPEC §13.1).

Styled output (rich) lives in sagepy/render.py; this module only builds the exact characters.
"""
from __future__ import annotations

import os
from typing import Any


def did_you_mean(name: str, candidates: Any, cutoff: float = 0.75) -> str | None:
    """The hint for a misspelt `name`: the closest of `candidates`, if one is close enough."""
    import difflib
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=cutoff)
    return f"did you mean `{close[0]}`?" if close else None


class Diagnostic:
    __slots__ = ("code", "message", "file", "span", "severity", "hint", "notes")

    def __init__(self, code: str, message: str, file: str | None, span: tuple | None,
                 severity: str = "error", hint: str | None = None, notes: list[str] | None = None) -> None:
        self.code = code
        self.message = message
        self.file = file
        self.span = span
        self.severity = severity
        self.hint = hint
        self.notes = notes or []

    def sort_key(self) -> tuple:
        line, col = (self.span[0], self.span[1]) if self.span else (0, 0)
        return (self.file or "", line, col, self.code)

    def __repr__(self) -> str:
        return f"Diagnostic({self.code}, {self.message!r}, {self.file}:{self.span})"


class SageSyntaxError(Exception):
    """Raised by the loader when a file cannot be parsed; carries every diagnostic found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(f"{len(diagnostics)} error(s)")
        self.diagnostics = diagnostics


def display_path(path: str | None) -> str:
    """Relative to the current directory when the file lies inside it, else absolute (SPEC §10.1)."""
    if not path:
        return "<unknown>"
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd).replace(os.sep, "/")
    return absolute


_SOURCES: dict[str, list[str]] = {}


def remember_source(path: str, text: str) -> None:
    """Keep a file's lines so that diagnostics and runtime reports can show them."""
    _SOURCES[os.path.abspath(path)] = text.split("\n")


def source_line(path: str | None, line: int) -> str | None:
    if not path:
        return None
    absolute = os.path.abspath(path)
    lines = _SOURCES.get(absolute)
    if lines is None:
        try:
            with open(absolute, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().split("\n")
        except OSError:
            return None
        _SOURCES[absolute] = lines
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r")
    return None


def format_location_block(file: str | None, span: tuple | None, head: str,
                          hint: str | None = None, notes: list[str] | None = None) -> str:
    """The five-line layout shared by diagnostics and runtime error reports."""
    out = [head]
    if span is None:
        if file:
            out.append(f" --> {display_path(file)}")
        for note in notes or []:
            out.append(f"  = note: {note}")
        if hint:
            out.append(f"  = help: {hint}")
        return "\n".join(out)
    line, col = span[0], span[1]
    width = len(str(line))
    pad = " " * width
    out.append(f"{pad}--> {display_path(file)}:{line}:{col}")
    text = source_line(file, line)
    if text is not None:
        out.append(f"{pad} |")
        out.append(f"{line} | {text}")
        if span[2] == line:
            length = max(1, span[3] - col)
        else:
            length = max(1, len(text) - col + 1)
        length = max(1, min(length, len(text) - col + 1)) if len(text) >= col else 1
        out.append(f"{pad} | " + " " * (col - 1) + "^" * length)
    for note in notes or []:
        out.append(f"{pad} = note: {note}")
    if hint:
        out.append(f"{pad} = help: {hint}")
    return "\n".join(out)


def format_diagnostic(d: Diagnostic) -> str:
    head = f"{d.severity}[{d.code}]: {d.message}"
    return format_location_block(d.file, d.span, head, d.hint, d.notes)


def format_diagnostics(diags: list[Diagnostic]) -> str:
    return "\n\n".join(format_diagnostic(d) for d in sorted(diags, key=Diagnostic.sort_key))
