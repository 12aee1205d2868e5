"""`sage new NAME`: create a project skeleton that runs, checks and tests cleanly (SPEC §10.2).

`sage new .` fills the current directory instead when it is empty (the project takes the directory's name),
for a user who made the directory, or cloned an empty repository, first."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

_GROVE_TOML = """\
[project]
name = "{name}"
version = "0.1.0"
entry = "src/main.sg"
"""

_MAIN_SG = """\
// Entry point of {name}: `sage run` starts the agent named by `run` on the last line.

fn greeting(name: String) -> String {{
    return "Hello, {{name}}!";
}}

agent Main {{
    on start {{
        print(greeting("world"));
        yield(0);
    }}
}}

run Main;
"""

_MAIN_TEST_SG = """\
// Tests for main.sg: a test file sees the private items of its sibling module.

test "greeting says hello" {
    assert_eq(greeting("world"), "Hello, world!");
}
"""

_GITIGNORE = """\
/.sage/
"""

_README = """\
# {name}

A Sage project, created by `sage new`.

```
sage run      # run src/main.sg
sage check    # check every file for errors
sage test     # run the tests in src/*_test.sg
```
"""


def _files(name: str) -> dict[str, str]:
    return {
        "grove.toml": _GROVE_TOML.format(name=name),
        "src/main.sg": _MAIN_SG.format(name=name),
        "src/main_test.sg": _MAIN_TEST_SG,
        ".gitignore": _GITIGNORE,
        "README.md": _README.format(name=name),
    }


def create_project(name: str, parent: Path) -> int:
    """Create the project directory `parent/name` (`.`: fill `parent` itself, which must be empty); return the
    process exit code (0, or 1 on error)."""
    if name == ".":
        return _fill_current_directory(parent)
    if not _NAME.fullmatch(name):
        return _fail(f"invalid project name '{name}': it must match [A-Za-z_][A-Za-z0-9_-]*")
    root = parent / name
    try:
        root.mkdir()
    except FileExistsError:
        return _fail(f"'{name}' already exists")
    except OSError as exc:
        return _fail(f"cannot create '{name}': {exc.strerror or exc}")
    try:
        _write_files(root, name)
    except OSError as exc:
        # The directory is ours (mkdir above refused an existing one), so a half-written project can go.
        shutil.rmtree(root, ignore_errors=True)
        return _fail(f"cannot create '{name}': {exc.strerror or exc}")
    print(f"created {name}")
    print(f"next: cd {name} && sage run   (then sage test, sage check)")
    return 0


def _fill_current_directory(directory: Path) -> int:
    name = directory.resolve().name
    if not _NAME.fullmatch(name):
        return _fail(f"invalid project name '{name}' (the directory's name): it must match "
                     "[A-Za-z_][A-Za-z0-9_-]*")
    if any(directory.iterdir()):
        return _fail("the current directory is not empty: `sage new .` fills an empty directory only")
    try:
        _write_files(directory, name)
    except OSError as exc:
        # The directory was empty, so everything in it now is what this command wrote.
        for child in directory.iterdir():
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
        return _fail(f"cannot create '{name}': {exc.strerror or exc}")
    print(f"created {name}")
    print("next: sage run   (then sage test, sage check)")
    return 0


def _write_files(root: Path, name: str) -> None:
    for relative, text in _files(name).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1
