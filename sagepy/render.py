"""Terminal rendering that needs rich. rich is imported here only, and only when something is drawn, so
commands that print plain text never pay for it (DESIGN: start-up speed)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def spinner(message: str) -> Iterator[None]:
    """A spinner with `message` on stderr while the block runs; nothing at all when stderr is not a
    terminal, so redirected output and tests see only the command's own text."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
    with console.status(message):
        yield


def write_diagnostics(text: str, stream: Any = None) -> None:
    """Diagnostics in the layout of SPEC §13.1: plain characters when `stream` is not a terminal or NO_COLOR
    is set; on a terminal the same characters, styled (the header by severity, locations and carets)."""
    stream = stream if stream is not None else sys.stderr
    if not _styled(stream):
        stream.write(text)
        stream.flush()
        return
    from rich.console import Console
    from rich.text import Text
    console = Console(file=stream, highlight=False, soft_wrap=True)
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


def _styled(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class StatusLine:
    """One line at the bottom of a terminal, redrawn in place: a spinner and a text. `show` draws it (again),
    `clear` erases it; the caller serialises them with whatever else writes to the same terminal."""

    def __init__(self, stream: Any) -> None:
        from rich.console import Console
        from rich.spinner import Spinner
        self.stream = stream
        self._console = Console(file=stream, force_terminal=True, highlight=False,
                                no_color=not _styled(stream))
        self._spinner = Spinner("dots", style="cyan")

    def show(self, text: str, now: float) -> None:
        from rich.text import Text
        self._spinner.update(text=Text(text))
        width = max(self._console.width - 1, 10)
        with self._console.capture() as captured:
            self._console.print(self._spinner.render(now), end="", no_wrap=True, overflow="ellipsis",
                                crop=True, width=width)
        self.stream.write("\r" + captured.get() + "\x1b[K")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()
