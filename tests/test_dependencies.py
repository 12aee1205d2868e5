"""Every third-party module sagepy imports comes from a distribution pyproject.toml declares (a main dependency,
or the extra of the feature that uses it), not from whatever another package happens to pull in (issue 31:
`jsonschema`, which the MCP elicitation form validates answers with, was declared only for the tests)."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The types and transports of the libraries sagepy's clients are built on: sagepy.mcp speaks the MCP SDK's
# API (its task groups, models, message types and OAuth tokens), sagepy.lsp pygls's. They come and go with the
# pinned `mcp` and `pygls`, so they are not declared apart.
API_OF_A_DECLARED_LIBRARY = {"anyio": "mcp", "pydantic": "mcp", "mcp_types": "mcp", "httpx2": "mcp", "jwt": "mcp",
                             "lsprotocol": "pygls"}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()


def declared(*, for_tests: bool) -> set[str]:
    """The distributions pyproject.toml declares: main and extras; the `test` extra only `for_tests` (what
    sagepy's pytest plugin imports), since a user's run never has it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra, listed in project["optional-dependencies"].items():
        if extra != "test" or for_tests:
            requirements += listed
    return {_name(r) for r in requirements}


def imported_modules() -> dict[str, str]:
    """Top-level third-party module -> the first sagepy file importing it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "sagepy").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "sagepy" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_library_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in sorted(imported_modules().items()):
        wanted = declared(for_tests=where.startswith("sagepy/testing/"))
        if module == "tomli":   # the 3.10 fallback of tomllib: declared with a marker, absent on this Python
            assert "tomli" in wanted
            continue
        if module in API_OF_A_DECLARED_LIBRARY:
            assert API_OF_A_DECLARED_LIBRARY[module] in wanted
            continue
        dists = {_name(d) for d in distributions.get(module, [])}
        if not dists & wanted:
            undeclared.append(f"  {module} ({where}; distribution {', '.join(sorted(dists)) or 'unknown'})")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)
