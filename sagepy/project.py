"""Project and entry resolution (SPEC §10.1) and grove.toml loading (SPEC §11)."""
from __future__ import annotations

import os
from typing import Any

from .diagnostics import Diagnostic, InvalidUtf8, decode_utf8


class ProjectError(Exception):
    """A one-line user error (`error: …`, exit 1)."""


class Project:
    """Where a command's project is: its root directory and grove.toml as read (not yet interpreted: a
    `Session` turns it into typed settings, sagepy.settings)."""

    def __init__(self, root: str, config: dict, config_path: str | None, toml_error: Exception | None = None) -> None:
        self.root = root
        self.config = config
        self.config_path = config_path
        self.toml_error = toml_error
        self.dotenv_error: Diagnostic | None = None    # E090 for a .env it cannot load (sagepy.settings)


def find_project(path: str | None) -> tuple[Project, str | None]:
    """(project, entry file given as PATH or None). Raises ProjectError for a missing PATH."""
    root, grove_path, explicit_file = locate_project(path)
    if grove_path is not None:
        config, error = load_config(grove_path)
        project = Project(root, config, grove_path, error)
    else:
        project = Project(root, {}, None)
    project.dotenv_error = load_dotenv(project.root)
    return project, explicit_file


def locate_project(path: str | None) -> tuple[str, str | None, str | None]:
    """(project root, its grove.toml or None, entry file given as PATH or None), without reading anything."""
    if path is not None and not os.path.exists(path):
        raise ProjectError(f"no such file or directory: {path}")
    start = os.path.abspath(path) if path is not None else os.getcwd()
    explicit_file = start if os.path.isfile(start) else None
    search = os.path.dirname(start) if explicit_file else start
    directory = search
    while True:
        candidate = os.path.join(directory, "grove.toml")
        if os.path.isfile(candidate):
            return directory, candidate, explicit_file
        parent = os.path.dirname(directory)
        if parent == directory:
            return search, None, explicit_file
        directory = parent


def load_config(path: str) -> tuple[dict, Exception | None]:
    """The parsed grove.toml, or ({}, the error) when it is not valid TOML (reported later as E090)."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.loads(decode_utf8(fh.read()))
    except OSError as exc:
        raise ProjectError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:   # InvalidUtf8 too: both say where
        return {}, exc
    except RecursionError:      # tomllib parses nested arrays and inline tables recursively
        return {}, ValueError("arrays or inline tables nested too deeply")
    return data, None


def load_dotenv(root: str) -> Diagnostic | None:
    """`.env` in the project root: KEY=VALUE lines; variables already set win. A file that is not UTF-8 (none
    of it is loaded), or a line the environment cannot hold (loading stops there), is an E090."""
    path = os.path.join(root, ".env")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            lines = decode_utf8(fh.read()).splitlines()
    except OSError:
        return None
    except InvalidUtf8 as exc:
        return _dotenv_error(path, exc.reason, exc.line, exc.col)
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip()
        if key.startswith("export "):
            key = key[len("export "):].strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if not key or "\0" in key + value:
            return _dotenv_error(path, "a variable needs a name, and no NUL byte", number, 1)
        os.environ.setdefault(key, value)
    return None


def _dotenv_error(path: str, reason: str, line: int, col: int) -> Diagnostic:
    """E090 with the place in the message rather than as a span: a span would print the line, and a
    `.env` line holds a secret."""
    return Diagnostic("E090", f"invalid .env: {reason} (at line {line}, column {col})", path, None)
