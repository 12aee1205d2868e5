"""Project and entry resolution (SPEC §10.1) and grove.toml loading (SPEC §11)."""
from __future__ import annotations

import os
from typing import Any


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


def find_project(path: str | None) -> tuple[Project, str | None]:
    """(project, entry file given as PATH or None). Raises ProjectError for a missing PATH."""
    root, grove_path, explicit_file = locate_project(path)
    if grove_path is not None:
        config, error = load_config(grove_path)
        project = Project(root, config, grove_path, error)
    else:
        project = Project(root, {}, None)
    load_dotenv(project.root)
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
            data: dict[str, Any] = tomllib.load(fh)
    except OSError as exc:
        raise ProjectError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        return {}, exc
    return data, None


def load_dotenv(root: str) -> None:
    """`.env` in the project root: KEY=VALUE lines; variables already set win."""
    path = os.path.join(root, ".env")
    if not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return
    for line in lines:
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
        os.environ.setdefault(key, value)
