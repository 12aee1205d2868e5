"""One entry of the error-code table (its own module so the section modules need not import the package)."""
from __future__ import annotations

import re

_FILE_MARKER = re.compile(r"^(?://|#) file: (\S+)$")


class ErrorCode:
    """One code. `command` says how the examples show it: `check` (reported by `sage check`), `run`
    (reported by `sage run`), `test` (reported by `sage test`), or None when they cannot run on their own
    (they need a live MCP server, or the code is planned)."""

    __slots__ = ("code", "title", "explanation", "wrong", "fixed", "file", "command")

    def __init__(self, code: str, title: str, explanation: str, wrong: str | None = None,
                 fixed: str | None = None, file: str = "main.sg", command: str | None = "check") -> None:
        self.code = code
        self.title = title
        self.explanation = " ".join(explanation.split())
        self.wrong = wrong
        self.fixed = fixed
        self.file = file
        self.command = command if (wrong or fixed) else None

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W") else "error"

    def files(self, example: str) -> list[tuple[str, str]]:
        """The example split into (file name, text) pairs, in order."""
        files: list[tuple[str, list[str]]] = [(self.file, [])]
        for line in example.splitlines():
            marker = _FILE_MARKER.match(line)
            if marker:
                if not files[-1][1] and len(files) == 1:
                    files.pop()
                files.append((marker.group(1), []))
            else:
                files[-1][1].append(line)
        return [(name, "\n".join(lines).strip("\n") + "\n") for name, lines in files]
