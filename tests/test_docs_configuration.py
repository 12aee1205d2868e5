"""docs/configuration.md documents every grove.toml key the validator accepts, nothing it rejects, and every
`SAGE_*` environment variable the source reads; its prose never says that an accepted key is rejected or that
a variable the source reads is ignored."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "configuration.md"
ENV_NAME = re.compile(r"\bSAGE_[A-Z0-9_]+\b")
SECTION_HEADING = re.compile(r"^### `\[([a-z.<>A-Z]+)\]`")
KEY_ROW = re.compile(r"^\| `([a-z_]+)` \|")
DENIAL = re.compile(r"\b(?:rejects?|rejected|not (?:yet )?(?:built|read|accepted|supported)|ignored)\b")


def accepted_keys() -> dict[str, set[str]]:
    """The validator's key tables: section name -> keys (`tools.<Name>` for an MCP server entry)."""
    from sagepy.grove import _SECTIONS
    from sagepy.grove.servers import _MCP_KEYS, _SERVER_KEYS
    tables = {section: set(keys) for section, keys in _SECTIONS.items()}
    tables["mcp"] = set(_MCP_KEYS)
    tables["tools.<Name>"] = set(_SERVER_KEYS)
    from sagepy.approval_policy import SETTINGS
    tables["approvals"] = set(SETTINGS)   # every other key names a tool
    from sagepy.grove import LLM_OWN_KEYS
    from sagepy.grove.llm import PRICE_KEYS, PROVIDER_KEYS
    tables["llm"] |= set(LLM_OWN_KEYS) - {"providers", "prices"}   # those two are tables of their own
    tables["llm.providers.<provider>"] = set(PROVIDER_KEYS)
    tables["llm.prices.<model>"] = set(PRICE_KEYS)
    return tables


def documented_keys() -> dict[str, set[str]]:
    """Each `### `[section]`` heading of the page and the keys in the first column of its tables."""
    tables: dict[str, set[str]] = {}
    section = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        heading = SECTION_HEADING.match(line)
        if heading:
            section = heading.group(1)
            tables[section] = set()
        elif line.startswith("#"):
            section = None
        elif section is not None and (row := KEY_ROW.match(line)):
            tables[section].add(row.group(1))
    return tables


def test_every_accepted_grove_key_is_documented() -> None:
    documented = documented_keys()
    missing = {section: sorted(keys - documented.get(section, set()))
               for section, keys in accepted_keys().items() if keys - documented.get(section, set())}
    assert not missing, f"grove.toml keys missing from docs/configuration.md: {missing}"


def test_every_documented_grove_key_is_accepted() -> None:
    accepted = accepted_keys()
    extra = {section: sorted(keys - accepted.get(section, set()))
             for section, keys in documented_keys().items() if keys - accepted.get(section, set())}
    assert not extra, f"docs/configuration.md documents keys the validator rejects: {extra}"


def variables_read() -> dict[str, str]:
    """Every `SAGE_*` name in the source, with the first file that names it."""
    read: dict[str, str] = {}
    for path in (REPO / "sagepy").rglob("*.py"):
        for name in ENV_NAME.findall(path.read_text(encoding="utf-8")):
            read.setdefault(name, str(path.relative_to(REPO)))
    return read


def prose_paragraphs() -> list[str]:
    """The page's paragraphs of running text: no tables, headings or code blocks."""
    paragraphs, current, in_code = [], [], False
    for line in PAGE.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.startswith(("|", "#")) or not line.strip():
            if current:
                paragraphs.append(" ".join(current))
            current = []
            continue
        current.append(line)
    return paragraphs


def test_every_environment_variable_is_documented() -> None:
    page = PAGE.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(SAGE_[A-Z0-9_]+)` \|", page, flags=re.M))
    read = variables_read()
    missing = {name: where for name, where in read.items() if name not in documented}
    assert not missing, f"environment variables missing from docs/configuration.md: {missing}"


def test_prose_never_denies_an_accepted_key_or_a_variable_read() -> None:
    live = set().union(*accepted_keys().values()) | set(variables_read())
    contradictions = []
    for paragraph in prose_paragraphs():
        if DENIAL.search(paragraph):
            named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", paragraph)) & live
            if named:
                contradictions.append((sorted(named), paragraph[:160]))
    assert not contradictions, f"docs/configuration.md says these are rejected or ignored, yet they work: {contradictions}"
