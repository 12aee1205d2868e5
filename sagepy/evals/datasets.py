"""The rows of an eval's dataset (SPEC §22.1), read one at a time so that a dataset of any size keeps memory
flat and `--limit` stops reading early.

`.jsonl`: one JSON object per line (blank lines are skipped, and do not count as rows). `.csv`: RFC 4180 with a
header on line 1; a cell is the value of a `String` field as it is, and for a field of any other type is
parsed as JSON (as a string mock is, SPEC §9.3) before the row is converted to the declared type (§5). A row
that cannot be read or converted is that case's error, naming its line in the file; the rest still run.
"""
from __future__ import annotations

import csv
import json
from typing import Any, Iterator

from ..core import types as T
from ..core.convert import ConversionError, from_json


class DatasetError(Exception):
    """The dataset cannot be read at all (missing, unreadable, an unknown format): nothing runs."""


class Row:
    """One row: its number (from 1, in dataset order), its line in the file, and its Sage value or the
    reason it has none."""

    __slots__ = ("number", "line", "value", "error")

    def __init__(self, number: int, line: int, value: Any = None, error: str | None = None) -> None:
        self.number = number
        self.line = line
        self.value = value
        self.error = error


def open_dataset(path: str) -> Any:
    """The open file of a dataset; raises DatasetError naming the file when it cannot be read."""
    if not path.endswith((".jsonl", ".csv")):
        raise DatasetError(f"error: dataset {path}: unknown format (expected a .jsonl or .csv file)")
    try:
        return open(path, encoding="utf-8", newline="")
    except FileNotFoundError:
        raise DatasetError(f"error: dataset {path} not found") from None
    except IsADirectoryError:
        raise DatasetError(f"error: dataset {path} is a directory") from None
    except OSError as exc:
        raise DatasetError(f"error: cannot read dataset {path}: {exc.strerror or exc}") from None


def rows(handle: Any, path: str, row_type: T.Type, limit: int | None = None) -> Iterator[Row]:
    """The rows of an open dataset, converted to `row_type`, at most `limit` of them."""
    source = _csv_rows(handle, row_type) if path.endswith(".csv") else _jsonl_rows(handle)
    number = 0
    for line, data, error in source:
        if limit is not None and number >= limit:
            return
        number += 1
        if error is not None:
            yield Row(number, line, error=f"line {line}: {error}")
            continue
        try:
            yield Row(number, line, from_json(data, row_type))
        except ConversionError as exc:
            yield Row(number, line, error=f"line {line}: cannot convert the row to {T.type_name(row_type)}: {exc}")


def _jsonl_rows(handle: Any) -> Iterator[tuple[int, Any, str | None]]:
    for line, text in enumerate(_lines(handle), 1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            yield line, None, f"not a JSON object: {exc}"
            continue
        if not isinstance(data, dict):
            yield line, None, "not a JSON object"
            continue
        yield line, data, None


def _lines(handle: Any) -> Iterator[str]:
    try:
        yield from handle
    except UnicodeDecodeError as exc:
        raise DatasetError(f"error: dataset {handle.name} is not UTF-8 text: {exc}") from None


def _csv_rows(handle: Any, row_type: T.Type) -> Iterator[tuple[int, Any, str | None]]:
    reader = csv.reader(_lines(handle), strict=True)
    fields = dict(row_type.fields()) if isinstance(row_type, T.RecordT) else {}
    try:
        header = next(reader, None)
    except csv.Error as exc:
        yield 1, None, f"the header cannot be read: {exc}"
        return
    if header is None:
        return
    end = reader.line_num
    while True:
        start = end + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            end = reader.line_num
            yield start, None, f"malformed CSV: {exc}"
            continue
        end = reader.line_num
        if cells is None:
            return
        if not cells:   # a blank line
            continue
        if len(cells) != len(header):
            yield start, None, f"{len(cells)} cells, but the header has {len(header)}"
            continue
        yield start, *_cells(header, cells, fields)


def _cells(header: list[str], cells: list[str], fields: dict[str, T.Type]) -> tuple[Any, str | None]:
    data = {}
    for name, cell in zip(header, cells):
        t = fields.get(name)
        if t is None or t == T.STRING:
            data[name] = cell
            continue
        try:
            data[name] = json.loads(cell)
        except ValueError:
            return None, f"cell `{name}` is not JSON for type {T.type_name(t)}: {cell[:200]!r}"
    return data, None
