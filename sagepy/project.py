"""Project and entry resolution (SPEC §10.1) and grove.toml loading (SPEC §11)."""
from __future__ import annotations

import os
from typing import Any


class ProjectError(Exception):
    """A one-line user error (`error: …`, exit 1)."""


class Project:
    def __init__(self, root: str, config: dict, config_path: str | None) -> None:
        self.root = root
        self.config = config
        self.config_path = config_path

    @property
    def name(self) -> str:
        return self.config.get("project", {}).get("name") or os.path.basename(self.root)

    def entry_file(self) -> str:
        entry = self.config.get("project", {}).get("entry", "src/main.sg")
        return os.path.join(self.root, entry)

    def section(self, name: str) -> dict:
        value = self.config.get(name, {})
        return value if isinstance(value, dict) else {}


def find_project(path: str | None) -> tuple[Project, str | None]:
    """(project, entry file given as PATH or None). Raises ProjectError for a missing PATH."""
    if path is not None and not os.path.exists(path):
        raise ProjectError(f"no such file or directory: {path}")
    start = os.path.abspath(path) if path is not None else os.getcwd()
    explicit_file = start if os.path.isfile(start) else None
    search = os.path.dirname(start) if explicit_file else start
    directory = search
    while True:
        candidate = os.path.join(directory, "grove.toml")
        if os.path.isfile(candidate):
            project = Project(directory, load_config(candidate), candidate)
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            project = Project(search, {}, None)
            break
        directory = parent
    load_dotenv(project.root)
    return project, explicit_file


def load_config(path: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except (OSError, ValueError) as exc:
        raise ProjectError(f"invalid grove.toml ({path}): {exc}") from None
    return data


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
