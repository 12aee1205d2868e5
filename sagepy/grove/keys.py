"""Checking the keys of a grove.toml table (SPEC §11): the value parsers, where a table or key is in the file,
and the collector of E090 diagnostics. Every section of grove.toml (sagepy.grove) and the JSON object of
`mcp_connect` (§8.5) are checked with it.

A key table maps each key to (parser, description of the expected value); a parser returns the typed value,
or None for a value of the wrong type or range. A table-valued parser may carry `entry_ok`, the test of one
entry, so that a diagnostic can point at the bad entry of a sub-table such as `[tools.X.safety]`.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Mapping

from ..diagnostics import Diagnostic, did_you_mean

Parser = Callable[[Any], Any]
KeyTable = dict[str, tuple[Parser, str]]


def string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def string_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    return None


def string_table(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    return None


def boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def non_negative_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def port(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535:
        return value
    return None


def one_of(choices: tuple[str, ...]) -> Parser:
    def parse(value: Any) -> str | None:
        return value if isinstance(value, str) and value in choices else None
    parse.choices = choices  # type: ignore[attr-defined]
    return parse


def table_of(choices: tuple[str, ...]) -> Parser:
    """A table whose values are each one of `choices`."""
    def parse(value: Any) -> dict[str, str] | None:
        table = string_table(value)
        if table is None or any(v not in choices for v in table.values()):
            return None
        return table
    parse.entry_ok = lambda v: isinstance(v, str) and v in choices  # type: ignore[attr-defined]
    return parse


def toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


# ---------------------------------------------------------------- grove.toml positions

class Locator:
    """Finds the line of a table header or key in grove.toml, so that diagnostics can point at it.

    tomllib reports no positions; a line scan is enough for the plain `[tools.X]` / `key = …` layout that
    grove.toml files use, and when it finds nothing the diagnostic simply carries no span.
    """

    def __init__(self, path: str | None) -> None:
        self.lines: list[str] = []
        if path:
            try:
                with open(path, encoding="utf-8") as fh:
                    self.lines = fh.read().split("\n")
            except OSError:
                pass

    def _header_line(self, table: str) -> int | None:
        pattern = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(map(_key_pattern, table.split("."))) + r"\s*\]")
        for i, line in enumerate(self.lines):
            if pattern.match(line):
                return i
        return None

    def span(self, table: str, key: str | None = None, nested: bool = True) -> tuple | None:
        if nested and key is not None and "." in key:
            sub, entry = key.split(".", 1)
            if self._header_line(f"{table}.{sub}") is not None:
                return self.span(f"{table}.{sub}", entry, nested=False)
            key = sub
        header = self._header_line(table)
        if key is None or header is None:
            if header is None:
                return None
            text = self.lines[header]
            col = len(text) - len(text.lstrip()) + 1
            return (header + 1, col, header + 1, len(text.rstrip()) + 1)
        key_re = re.compile(r"(\s*)(" + _key_pattern(key) + r")\s*=")
        for i in range(header + 1, len(self.lines)):
            line = self.lines[i]
            if line.lstrip().startswith("["):
                break
            m = key_re.match(line)
            if m:
                col = len(m.group(1)) + 1
                return (i + 1, col, i + 1, col + len(m.group(2)))
        return self.span(table)


def _key_pattern(key: str) -> str:
    return "(?:" + re.escape(key) + '|"' + re.escape(key) + '"' + ")"


# ---------------------------------------------------------------- checking

class Collector:
    """The E090 diagnostics of one grove.toml, each pointing at its table or key."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.file = os.path.basename(path) if path else "grove.toml"
        self.locator = Locator(path)
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, table: str, key: str | None = None, hint: str | None = None) -> None:
        span = self.locator.span(table, key)
        self.diagnostics.append(Diagnostic("E090", message, self.path, span, hint=hint))


def apply_keys(data: Mapping[str, Any], keys: KeyTable, table: str, report: Any, target: Any) -> bool:
    """Copy every valid key onto target; report each unknown key or bad value. True when all were valid."""
    clean = True
    for key, value in data.items():
        spec = keys.get(key)
        if spec is None:
            report(f"unknown key `{key}` in [{table}]", key, did_you_mean(key, keys, cutoff=0.6))
            clean = False
            continue
        parse, expected = spec
        parsed = parse(value)
        if parsed is None:
            where = key
            if isinstance(value, dict):   # point at the bad entry of a sub-table such as [tools.X.safety]
                bad = _bad_entry(value, parse)
                if bad is not None:
                    where = f"{key}.{bad}"
            report(f"[{table}] {key} must be {expected}, found {_describe(value, parse)}", where, None)
            clean = False
            continue
        setattr(target, key, parsed)
    return clean


def _bad_entry(table: dict, parse: Parser) -> str | None:
    entry_ok = getattr(parse, "entry_ok", None) or (lambda v: isinstance(v, str))
    return next((k for k, v in table.items() if not entry_ok(v)), None)


def _describe(value: Any, parse: Parser) -> str:
    if isinstance(value, str) and hasattr(parse, "choices"):
        return f'"{value}"'
    if isinstance(value, dict):
        bad = _bad_entry(value, parse)
        if bad is not None:
            return f"an invalid entry `{bad}`"
    if isinstance(value, list) and any(not isinstance(v, str) for v in value):
        return "an array with a non-string element"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return toml_type(value)
