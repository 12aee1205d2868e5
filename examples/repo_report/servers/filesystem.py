"""Start the Node reference server @modelcontextprotocol/server-filesystem wherever npm installed it.

The package is found, in this order, under:
  1. node_modules/ of the project (`npm install @modelcontextprotocol/server-filesystem` here);
  2. tests/mcp/node/node_modules/ of a sagepy checkout that contains the project (its examples/);
  3. tests/mcp/node/node_modules/ of the sagepy checkout this Python imports sagepy from (an editable
     install; this covers a copy of the example made outside the checkout).
The launcher then replaces itself with `node <entry script> ARGS...`, so the server keeps this process, its
stdio pipes and its process group. It runs in the project root, sagepy's default server working directory.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ENTRY = Path("@modelcontextprotocol", "server-filesystem", "dist", "index.js")
TEST_MODULES = Path("tests", "mcp", "node", "node_modules")


def candidates() -> list[Path]:
    project = Path.cwd()
    found = [project / "node_modules" / ENTRY]
    found += [directory / TEST_MODULES / ENTRY for directory in (project, *project.parents)]
    spec = importlib.util.find_spec("sagepy")  # locates the package without importing it
    if spec is not None and spec.origin is not None:
        found.append(Path(spec.origin).resolve().parent.parent / TEST_MODULES / ENTRY)
    return found


def main() -> None:
    for entry in candidates():
        if entry.is_file():
            os.execvp("node", ["node", str(entry), *sys.argv[1:]])
    sys.exit("server-filesystem is not installed: run `npm install @modelcontextprotocol/server-filesystem` in "
             "the project, or `npm ci` in tests/mcp/node of the sagepy checkout")


if __name__ == "__main__":
    main()
