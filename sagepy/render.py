"""Terminal rendering that needs rich. rich is imported here only, and only when something is drawn, so
commands that print plain text never pay for it (DESIGN: start-up speed).

Whether output is coloured is decided here, once per stream: `--color always|never` (set by the command line
through `choose_color`) wins; with `auto` (the default) `NO_COLOR` means never, `FORCE_COLOR` always, and
otherwise colour goes to terminals only (SPEC §10.2).
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

COLOR_CHOICES = ("auto", "always", "never")
_choice = "auto"


def choose_color(choice: str) -> None:
    """The command line's `--color` (once, before anything is drawn)."""
    global _choice
    _choice = choice


def colored(stream: Any) -> bool:
    if _choice != "auto":
        return _choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _console(stream: Any) -> Any:
    from rich.console import Console
    return Console(file=stream, highlight=False, soft_wrap=True, force_terminal=True, no_color=False)


@contextmanager
def spinner(message: str) -> Iterator[None]:
    """A spinner with `message` on stderr while the block runs; nothing at all when stderr is not a
    terminal, so redirected output and tests see only the command's own text."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    console = Console(stderr=True, no_color=not colored(sys.stderr))
    with console.status(message):
        yield


def write_diagnostics(text: str, stream: Any = None) -> None:
    """Diagnostics in the layout of SPEC §13.1: plain characters unless colour is on for `stream`; then the
    same characters, styled (the header by severity, locations and carets)."""
    stream = stream if stream is not None else sys.stderr
    if not colored(stream):
        stream.write(text)
        stream.flush()
        return
    from rich.text import Text
    console = _console(stream)
    for line in text.split("\n"):
        styled = Text(line)
        stripped = line.lstrip()
        if line.startswith("error"):
            styled.stylize("bold red", 0, line.find(":") + 1 if ":" in line else len(line))
        elif line.startswith("warning"):
            styled.stylize("bold yellow", 0, line.find(":") + 1 if ":" in line else len(line))
        elif stripped.startswith("-->"):
            styled.stylize("bold blue")
        elif stripped.startswith("= help") or stripped.startswith("= note"):
            styled.stylize("cyan")
        elif "^" in line and set(stripped.lstrip("|").strip()) == {"^"}:
            styled.stylize("bold red", line.index("^"))
        console.print(styled)


# `sage test` lines by their first word: the result words and the summary verdicts (SPEC §9.4).
_TEST_STYLES = (("PASS ", "green"), ("FAIL ", "bold red"), ("ERROR ", "bold red"), ("failures:", "bold red"),
                ("test result: ok.", "bold green"), ("test result: FAILED.", "bold red"))


def test_line_writer(stream: Any = None) -> Callable[[str], None]:
    """Writes `sage test` output lines to `stream` (stdout), the result words and the summary coloured when
    colour is on; each line is flushed, so results appear as tests finish."""
    stream = stream if stream is not None else sys.stdout
    if not colored(stream):
        def plain(line: str) -> None:
            stream.write(line + "\n")
            stream.flush()
        return plain
    from rich.text import Text
    console = _console(stream)

    def styled(line: str) -> None:
        text = Text(line)
        for prefix, style in _TEST_STYLES:
            if line.startswith(prefix):
                text.stylize(style, 0, len(prefix.rstrip()) if prefix.endswith(" ") else len(line))
                break
        console.print(text)
        stream.flush()
    return styled
