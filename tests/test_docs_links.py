"""The documentation is reachable and self-contained: README links the three documents, every relative link
(and `#anchor`) in README.md and docs/ resolves, and no help text sends users to the specification, which
is not part of the repository."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


def test_readme_links_the_documents() -> None:
    readme = REPO / "README.md"
    targets = set(LINK.findall(readme.read_text(encoding="utf-8")))
    assert {"docs/guide.md", "docs/configuration.md", "docs/errors.md"} <= targets
    assert "SPEC" not in readme.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part) if path_part else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def _help(argv: list[str]) -> str:
    from sagepy.cli.main import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(argv)
    return out.getvalue()


@pytest.mark.parametrize("command", [[], ["run"], ["check"], ["test"], ["tools"], ["runs"], ["new"],
                                     ["explain"], ["version"], ["tools", "list"], ["tools", "inspect"],
                                     ["tools", "generate"], ["tools", "verify"]], ids=" ".join)
def test_help_texts_do_not_cite_the_specification(command: list[str]) -> None:
    text = _help([*command, "--help"])
    assert "usage:" in text
    assert "SPEC" not in text and "§" not in text, text
