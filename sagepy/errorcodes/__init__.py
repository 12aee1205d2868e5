"""The table of diagnostic and runtime error codes: one entry per code, with a title, an explanation and, where
it helps, a wrong and a fixed example.

One table feeds both `sage explain CODE` and docs/errors.md (regenerate the page with
`python -m sagepy.errorcodes > docs/errors.md`); tests check that the page is up to date, that every code
the parser, checker and runtime can report is here, and that each example really reports its code (wrong) or
checks clean (fixed).

An example may span several files: a line `// file: NAME` (or `# file: NAME` in TOML and Python) starts a
new file; text before the first such line is `main.sg` (`main_test.sg` for entries whose `file` says so).
"""
from __future__ import annotations

import re
import textwrap

from .entry import ErrorCode


def _sections() -> list[tuple[str, str, list[ErrorCode]]]:
    from . import agents, config, modules_tools_tests, names_types, runtime, syntax
    return [syntax.SECTION, names_types.SECTION, agents.SECTION, modules_tools_tests.SECTION, config.SECTION,
            runtime.SECTION]


def all_codes() -> list[ErrorCode]:
    """Every code, in the order of docs/errors.md."""
    return [entry for _, _, entries in _sections() for entry in entries]


def lookup(code: str) -> ErrorCode | None:
    wanted = code.strip().upper()
    return next((entry for entry in all_codes() if entry.code == wanted), None)


def explain_text(entry: ErrorCode) -> str:
    """What `sage explain CODE` prints: the title, the explanation wrapped to 100 columns, the examples."""
    lines = [f"{entry.code}: {entry.title}", ""]
    lines += textwrap.wrap(entry.explanation, 100)
    for label, example in (("Wrong", entry.wrong), ("Fixed", entry.fixed)):
        if example:
            lines += ["", f"{label}:", ""]
            lines += [f"    {line}" if line else "" for line in example.strip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def _fence(entry: ErrorCode, example: str) -> list[str]:
    """Markdown for an example: one fenced block per file, each named when the example has several."""
    files = entry.files(example)
    out: list[str] = []
    for name, text in files:
        language = "toml" if name.endswith(".toml") else "python" if name.endswith(".py") else "sage"
        if len(files) > 1:
            out += [f"`{name}`:", ""]
        out += [f"```{language}", text.rstrip("\n"), "```", ""]
    return out


def markdown() -> str:
    """docs/errors.md."""
    lines = ["# Error codes", "",
             "<!-- Generated from sagepy/errorcodes/ by `python -m sagepy.errorcodes > docs/errors.md`; "
             "do not edit by hand. -->", "",
             "Every diagnostic and runtime error that sagepy reports carries a code: `error[E013]: …` in a "
             "diagnostic, `error[E201]: …` in the report of an unhandled runtime error. `sage explain CODE` "
             "prints the same explanation as this page.", ""]
    for title, intro, entries in _sections():
        lines += [f"- [{title}](#{_anchor(title)}): " + ", ".join(f"[{e.code}](#{e.code.lower()})"
                                                                 for e in entries)]
    lines.append("")
    for title, intro, entries in _sections():
        lines += [f"## {title}", "", intro, ""]
        for entry in entries:
            lines += [f"### {entry.code}", "", f"**{entry.title}**", "", entry.explanation, ""]
            if entry.wrong:
                lines += ["Wrong:", ""] + _fence(entry, entry.wrong)
            if entry.fixed:
                lines += ["Fixed:", ""] + _fence(entry, entry.fixed)
    return "\n".join(lines).rstrip("\n") + "\n"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
