"""The `Fs` tool (SPEC §7): file access confined to the root directory `SAGE_FS_ROOT` (default: cwd).

Paths are relative to the root. An absolute path, a `..` that climbs above the root, or a symlink whose
target lies outside the root is refused before anything is touched; such a symlink is never followed, in
any component of the path. Symlinks that stay inside the root work as usual. The root is the session's
SAGE_FS_ROOT; a call from outside a session reads the environment at each call.

Text is UTF-8 without newline translation, so a file round-trips byte for byte.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from ..runtime.values import UNIT
from . import setting, tool_error


def _root(where: str) -> str:
    root = setting("SAGE_FS_ROOT") or os.getcwd()
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        raise tool_error(where, f"SAGE_FS_ROOT '{root}' is not a directory")
    return real


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _resolve(where: str, path: str) -> str:
    """Map `path` onto the file system, refusing any way out of the root.

    Walks the path one component at a time, the way the kernel would: a symlink is replaced by its
    resolved target (which must be inside the root) and `..` goes to the parent of wherever the walk is,
    so `link/..` means the target's parent, as for the kernel. The last component is kept as a name (not
    replaced by its target) so that `delete` removes a symlink itself; its target was checked all the same.
    """
    if "\0" in path:
        raise tool_error(where, "path contains a NUL character")
    if os.path.isabs(path):
        raise tool_error(where, f"path '{path}' is absolute (paths are relative to SAGE_FS_ROOT)")
    root = _root(where)
    parts = [part for part in path.split(os.sep) if part not in ("", ".")]
    current = root
    for index, part in enumerate(parts):
        if part == "..":
            if current == root:
                raise tool_error(where, f"path '{path}' leaves the root")
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            target = os.path.realpath(candidate)
            if not _inside(target, root):
                link = os.sep.join(parts[:index + 1])
                raise tool_error(where, f"path '{path}' leaves the root (symlink '{link}' points outside it)")
            if index < len(parts) - 1:
                current = target
                continue
        current = candidate
    return current


def _os_reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def read(path: str, *, cancel: threading.Event | None = None) -> str:
    real = _resolve("Fs.read", path)
    try:
        with open(real, encoding="utf-8", newline="") as f:
            return f.read()
    except (OSError, ValueError) as exc:
        raise tool_error("Fs.read", f"cannot read '{path}': {_os_reason(exc)}") from None


def write(path: str, content: str, *, cancel: threading.Event | None = None) -> Any:
    real = _resolve("Fs.write", path)
    try:
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w", encoding="utf-8", newline="") as f:
            f.write(content)
    except (OSError, ValueError) as exc:
        raise tool_error("Fs.write", f"cannot write '{path}': {_os_reason(exc)}") from None
    return UNIT


def exists(path: str, *, cancel: threading.Event | None = None) -> bool:
    return os.path.exists(_resolve("Fs.exists", path))


def list_dir(path: str, *, cancel: threading.Event | None = None) -> list:
    real = _resolve("Fs.list", path)
    try:
        return sorted(os.listdir(real))
    except OSError as exc:
        raise tool_error("Fs.list", f"cannot list '{path}': {_os_reason(exc)}") from None


def delete(path: str, *, cancel: threading.Event | None = None) -> Any:
    real = _resolve("Fs.delete", path)
    # A symlink is removed itself, even when it points at a directory; a real directory is refused.
    if os.path.isdir(real) and not os.path.islink(real):
        raise tool_error("Fs.delete", f"'{path}' is a directory (delete removes files only)")
    try:
        os.remove(real)
    except OSError as exc:
        raise tool_error("Fs.delete", f"cannot delete '{path}': {_os_reason(exc)}") from None
    return UNIT


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "read": read,
    "write": write,
    "exists": exists,
    "list": list_dir,
    "delete": delete,
}
