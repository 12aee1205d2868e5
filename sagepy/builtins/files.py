"""File-system builtins (SPEC §6.1). Failures are `Agent` errors `failed to <action> '<path>': <reason>`,
where the reason is the operating system's description of the error (`No such file or directory`).

Text is read and written as UTF-8 without newline translation, so a file round-trips byte for byte. A lone
surrogate in written text is written as U+FFFD (sagepy.core.text).
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ..core.errors import SageRaise, agent_error
from ..core.text import printable_text
from ..core.values import UNIT

# Rust's wording, which upstream Sage reports for a file that is not valid UTF-8.
_NOT_UTF8 = "stream did not contain valid UTF-8"


def _failure(action: str, path: str, exc: Exception) -> SageRaise:
    if isinstance(exc, UnicodeDecodeError):
        reason = _NOT_UTF8
    elif isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    else:
        reason = str(exc)
    return agent_error(f"failed to {action} '{path}': {reason}")


def read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except (OSError, ValueError) as exc:
        raise _failure("read file", path, exc) from None


def _write(path: str, text: str, mode: str, action: str) -> Any:
    try:
        with open(path, mode, encoding="utf-8", newline="") as f:
            f.write(printable_text(text))
    except (OSError, ValueError) as exc:
        raise _failure(action, path, exc) from None
    return UNIT


def write_file(path: str, text: str) -> Any:
    return _write(path, text, "w", "write file")


def append_file(path: str, text: str) -> Any:
    return _write(path, text, "a", "append to file")


def delete_file(path: str) -> Any:
    try:
        os.remove(path)
    except (OSError, ValueError) as exc:
        raise _failure("delete file", path, exc) from None
    return UNIT


def make_dir(path: str) -> Any:
    try:
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as exc:
        raise _failure("create directory", path, exc) from None
    return UNIT


def list_dir(path: str) -> list:
    try:
        return sorted(os.listdir(path))
    except (OSError, ValueError) as exc:
        raise _failure("list directory", path, exc) from None


def file_exists(path: str) -> bool:
    return os.path.exists(path)


# Each call is an `io` step (SPEC §14): the compiler passes it through the agent's effects chain, whose real
# layer calls these functions.
BUILTINS: dict[str, Callable[..., Any]] = {
    "read_file": read_file,
    "write_file": write_file,
    "append_file": append_file,
    "delete_file": delete_file,
    "make_dir": make_dir,
    "list_dir": list_dir,
    "file_exists": file_exists,
}
