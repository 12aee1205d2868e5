"""Which tests a `sage test` command runs (SPEC §9.2, §10.2): test ids given as paths (`file::name`),
`--filter`, `--file`, `-k EXPR` and `--lf`. Tests left out are *deselected*: not run and not counted.

A test's id is `<file>::<name>` with the file relative to the current directory (as `--list` prints it); the
last-failed list in `<root>/.sage/lastfailed` keeps ids relative to the project root instead, so that it
holds wherever the command is run from.
"""
from __future__ import annotations

import json
import os
import re
from typing import Callable

from ..diagnostics import display_path

LASTFAILED = os.path.join(".sage", "lastfailed")


class SelectionError(Exception):
    """A usage error in a selection option (exit 2)."""


def split_test_id(argument: str) -> tuple[str, str | None]:
    """`file::name` -> (file, name); a plain path -> (path, None)."""
    path, sep, name = argument.partition("::")
    return (path, name) if sep else (argument, None)


def compile_keyword(expression: str) -> Callable[[str], bool]:
    """pytest's `-k`: words matched case-insensitively as substrings of the test id, combined with `and`,
    `or`, `not` and parentheses."""
    tokens = re.findall(r"\(|\)|[^\s()]+", expression)
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def parse_or() -> Callable[[str], bool]:
        left = parse_and()
        while peek() == "or":
            take()
            a, b = left, parse_and()
            left = lambda text, a=a, b=b: a(text) or b(text)
        return left

    def parse_and() -> Callable[[str], bool]:
        left = parse_not()
        while peek() == "and":
            take()
            a, b = left, parse_not()
            left = lambda text, a=a, b=b: a(text) and b(text)
        return left

    def parse_not() -> Callable[[str], bool]:
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda text: not inner(text)
        return parse_atom()

    def parse_atom() -> Callable[[str], bool]:
        token = peek()
        if token is None or token in ("and", "or", ")"):
            raise SelectionError(f"-k: wrong expression '{expression}': expected a word")
        take()
        if token == "(":
            inner = parse_or()
            if peek() != ")":
                raise SelectionError(f"-k: wrong expression '{expression}': missing ')'")
            take()
            return inner
        word = token.lower()
        return lambda text: word in text.lower()

    matcher = parse_or()
    if peek() is not None:
        raise SelectionError(f"-k: wrong expression '{expression}': unexpected '{peek()}'")
    return matcher


class Selection:
    """The options that choose tests. `ids` maps an absolute file to the names asked for (None: all)."""

    def __init__(self, root: str, *, filter_text: str | None = None, file_filter: str | None = None,
                 keyword: str | None = None, ids: dict[str, set[str] | None] | None = None,
                 last_failed: set[str] | None = None) -> None:
        self.root = root
        self.filter_text = filter_text
        self.file_filter = file_filter
        self.keyword = compile_keyword(keyword) if keyword else None
        self.ids = ids or {}
        self.last_failed = last_failed

    def keeps_file(self, path: str) -> bool:
        if not self.file_filter:
            return True
        rel = self.relative(path)
        wanted = self.file_filter.replace(os.sep, "/")
        return rel == wanted or rel.endswith("/" + wanted)

    def keeps(self, path: str, name: str) -> bool:
        if not self.keeps_file(path):
            return False
        names = self.ids.get(os.path.abspath(path))
        if names is not None and name not in names:
            return False
        if self.filter_text and self.filter_text not in name:
            return False
        if self.keyword and not self.keyword(f"{display_path(path)}::{name}"):
            return False
        return self.last_failed is None or self.stored_id(path, name) in self.last_failed

    def relative(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")

    def stored_id(self, path: str, name: str) -> str:
        return f"{self.relative(path)}::{name}"


def read_last_failed(root: str) -> set[str]:
    """The ids that failed in the project's last `sage test` (empty when none or never run)."""
    try:
        with open(os.path.join(root, LASTFAILED), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return set()
    return {item for item in data if isinstance(item, str)} if isinstance(data, list) else set()


def write_last_failed(root: str, ids: list[str]) -> None:
    """Best effort: a read-only project still runs its tests, it only loses `--lf`."""
    from ..secrecy import private_directory
    path = os.path.join(root, LASTFAILED)
    try:
        private_directory(os.path.dirname(path))   # .sage/ is private (docs/configuration.md)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(sorted(ids), fh, indent=0)
    except OSError:
        pass
