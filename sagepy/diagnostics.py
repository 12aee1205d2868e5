"""Diagnostics: what the parser and checker report, and their plain-text layout (SPEC §13.1).

Styled output (rich) lives in sagepy/render.py; this module only builds the exact characters.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
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

    @property
    def line(self) -> int | None:
        """The 1-based line the diagnostic points at, or None."""
        return self.span[0] if self.span else None

    @property
    def column(self) -> int | None:
        """The 1-based column the diagnostic points at, or None."""
        return self.span[1] if self.span else None

    def sort_key(self) -> tuple:
        line, col = (self.span[0], self.span[1]) if self.span else (0, 0)
        return (self.file or "", line, col, self.code)

    def __repr__(self) -> str:
        return f"Diagnostic({self.code}, {self.message!r}, {self.file}:{self.span})"


class InvalidUtf8(ValueError):
    """Text that is not UTF-8: the line and column (1-based, in characters) of the first invalid byte."""

    def __init__(self, byte: int, line: int, col: int) -> None:
        super().__init__(f"invalid UTF-8: byte 0x{byte:02x} (at line {line}, column {col})")
        self.byte = byte
        self.line = line
        self.col = col

    @property
    def span(self) -> tuple[int, int, int, int]:
        return (self.line, self.col, self.line, self.col + 1)

    @property
    def reason(self) -> str:
        return f"invalid UTF-8: byte 0x{self.byte:02x}"


def decode_utf8(data: bytes) -> str:
    """`data` as UTF-8 text. Raises InvalidUtf8 pointing at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start].decode("utf-8")
        line = before.count("\n") + 1
        col = len(before) - (before.rfind("\n") + 1) + 1
        raise InvalidUtf8(data[exc.start], line, col) from None


def display_path(path: str | None) -> str:
    """Relative to the current directory when the file lies inside it, else absolute (SPEC §10.1)."""
    if not path:
        return "<unknown>"
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd).replace(os.sep, "/")
    return absolute


# The lines of the files most recently loaded or shown, newest last: the text as sagepy read it (a file that
# is not valid UTF-8 as decoded, grove.toml with its passwords masked, an editor's unsaved buffer), which a
# report quotes rather than what is on disk now. Bounded, so that a process compiling many programs (an
# evaluation, a language server) keeps the sources of the latest ones only.
_SOURCES: OrderedDict[str, list[str]] = OrderedDict()
_SOURCES_KEPT = 256
_SOURCES_LOCK = threading.Lock()


def remember_source(path: str, text: str) -> None:
    """Keep a file's lines so that diagnostics and runtime reports can show them."""
    _keep(os.path.abspath(path), text.split("\n"))


def _keep(absolute: str, lines: list[str]) -> None:
    with _SOURCES_LOCK:
        _SOURCES[absolute] = lines
        _SOURCES.move_to_end(absolute)
        while len(_SOURCES) > _SOURCES_KEPT:
            _SOURCES.popitem(last=False)


def source_line(path: str | None, line: int) -> str | None:
    if not path:
        return None
    absolute = os.path.abspath(path)
    with _SOURCES_LOCK:
        lines = _SOURCES.get(absolute)
    if lines is None:
        try:
            with open(absolute, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().split("\n")
        except OSError:
            return None
        _keep(absolute, lines)
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r")
    return None


TAB_WIDTH = 4


def display_cells(text: str) -> tuple[str, list[int]]:
    """The line as shown (tabs expanded to the next multiple of TAB_WIDTH) and, for each code point index and
    the end, the terminal cell it starts at: East Asian wide characters take two cells, combining marks none.
    Carets are placed and sized by these cells, so they stand under what they mark (SPEC §13.1)."""
    shown: list[str] = []
    cells = [0]
    for ch in text:
        at = cells[-1]
        if ch == "\t":
            width = TAB_WIDTH - at % TAB_WIDTH
            shown.append(" " * width)
        else:
            width = _cell_width(ch)
            shown.append(ch)
        cells.append(at + width)
    return "".join(shown), cells


def _cell_width(ch: str) -> int:
    if ch.isascii():
        return 1
    import unicodedata  # only for lines with non-ASCII text: most diagnostics never need it
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# A source line longer than this is shown as a window around the span: a file of thousands of diagnostics on
# one very long line (a generated literal, a minified table) would otherwise print that line thousands of times.
LONG_LINE = 400
_CONTEXT = 120     # code points kept on each side of the span
_SPAN_SHOWN = 160  # code points of a longer span that are shown (and marked)


def _window(text: str, start: int, end: int) -> tuple[str, int, int]:
    """`text` cut to the part around code points [start, end), `…` marking each cut, with the span's new
    bounds. Lines up to LONG_LINE code points are shown whole, as SPEC's layout has them."""
    if len(text) <= LONG_LINE:
        return text, start, end
    end = min(end, start + _SPAN_SHOWN)
    left = max(0, start - _CONTEXT)
    right = min(len(text), end + _CONTEXT)
    prefix = "…" if left > 0 else ""
    suffix = "…" if right < len(text) else ""
    shift = left - len(prefix)
    return prefix + text[left:right] + suffix, start - shift, end - shift


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
        end = span[3] if span[2] == line else len(text) + 1
        start = min(col, len(text) + 1) - 1
        end = min(max(end - 1, start + 1), len(text)) if start < len(text) else start + 1
        text, start, end = _window(text, start, end)
        shown, cells = display_cells(text)
        out.append(f"{pad} |")
        out.append(f"{line} | {shown}")
        before = cells[start] if start < len(text) else cells[-1] + (start - len(text))
        width = max(1, cells[end] - cells[start]) if start < len(text) else 1
        out.append(f"{pad} | " + " " * before + "^" * width)
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
