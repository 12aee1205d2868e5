"""Which test files `sage test` and `sage check` take from a directory (SPEC §9.2, §10.2).

The search starts at DIR/src when it exists, else at DIR. Inside a project (a grove.toml in DIR or above) it
recurses; outside one it takes the files directly in the start directory only, so that running in a folder of
unrelated projects (a home directory, /tmp) does not sweep them all in. Dot-directories and the folders of
other tool chains (`node_modules`, virtual environments, build output) are never searched.
"""
from __future__ import annotations

import os

NEVER_SEARCHED = frozenset({"node_modules", "venv", ".venv", "build", "dist"})
TEST_SUFFIX = "_test.sg"
EVAL_SUFFIX = "_eval.sg"


def test_files(directory: str, in_project: bool, suffixes: tuple[str, ...] = (TEST_SUFFIX,)) -> list[str]:
    """The absolute paths of the `*_test.sg` files (or of the files ending in one of `suffixes`: `sage check`
    and `sage eval` take the `*_eval.sg` files) `directory` holds, sorted by path."""
    src = os.path.join(directory, "src")
    start = os.path.abspath(src if os.path.isdir(src) else directory)
    found = []
    for current, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if in_project and not d.startswith(".") and d not in NEVER_SEARCHED)
        found.extend(os.path.join(current, f) for f in files if f.endswith(suffixes))
    return sorted(found)
