"""The `Fs` tool (SPEC §7): file access confined to the root directory `SAGE_FS_ROOT` (default: cwd).

Paths are relative to the root. An absolute path, a `..` that climbs above the root, or a symlink whose
target lies outside the root is refused before anything outside is touched. Symlinks that stay inside the
root work as usual (SPEC §7 refuses only ways out): they are followed, as the kernel would follow them, by
the walk below, so `link/..` is the parent of the link's target. The root is the session's SAGE_FS_ROOT (a
call from outside a session reads the environment at each call).

Confinement cannot race: nothing is ever opened by a path name that the kernel would resolve on its own.
Every operation opens the root once and walks the path from it one component at a time, opening each
directory relative to its parent's descriptor with `O_NOFOLLOW` and the last component with `O_NOFOLLOW` too.
When a component turns out to be a symlink, its target is read and walked the same way, from the directory
that holds the link (or from the root, for an absolute target inside it), so a link swapped in at any moment
is judged like any other: either it stays inside the root or the call fails. `..` returns to the descriptor
the walk came from, never to a directory looked up by name. (What no path walk can prevent is someone who
can write on both sides renaming a directory out of the root while a call stands in it.)

Text is UTF-8 without newline translation, so a file round-trips byte for byte. Only regular files are
read or written: a FIFO, a device or a socket is refused (a FIFO is opened non-blocking, so it cannot hang),
and so is a file with more than one hard link (its other names may lie outside the root, where no walk sees
them; `delete` removes such a name, which touches nothing else).
A read is bounded by the built-in tools' time limit (`SAGE_HTTP_TIMEOUT`, default 30 s) and by the agent's
cancellation, both checked between chunks, so a huge file or a slow file system ends in an error (a single
read that the kernel itself never returns from cannot be cut short). Every operating-system error becomes a
`Tool` error that `catch` can handle.
"""
from __future__ import annotations

import errno
import os
import stat
import threading
import time
from typing import Any, Callable, TypeVar

from ..core.errors import AgentCancelled, SageRaise
from . import setting, time_limit, timed_out, tool_error

T = TypeVar("T")

# Bytes read between two looks at the deadline and the cancel flag.
_READ_CHUNK = 1 << 20
# The kernel's own limit on symlinks followed while resolving one path (Linux: 40).
_MAX_LINKS = 40

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
# For the last component: never through a symlink, and never waiting (opening a FIFO to read blocks).
_FILE_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC


def _root_path() -> str:
    """The configured root, as written: SAGE_FS_ROOT, or the working directory when unset or empty."""
    return setting("SAGE_FS_ROOT") or os.getcwd()


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class _Walk:
    """One walk of a path from the root: the descriptors of the directories it stands in, root first.

    `steps` holds what is left to walk, last item first: a name or `..`; the symlink of the user's path
    that produced it (None for the user's own components), which names the culprit when a link leads out
    of the root; and the user's path up to the component, which names the link when the component is one.
    """

    def __init__(self, where: str, path: str) -> None:
        if "\0" in path:
            raise tool_error(where, "path contains a NUL character")
        if os.path.isabs(path):
            raise tool_error(where, f"path '{path}' is absolute (paths are relative to SAGE_FS_ROOT)")
        if os.open not in os.supports_dir_fd:
            raise tool_error(where, "Fs needs a system that opens files relative to a directory (Linux, macOS)")
        self.where = where
        self.path = path
        configured = _root_path_or_error(where)
        try:
            root_fd = os.open(configured, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        except OSError:
            raise tool_error(where, f"SAGE_FS_ROOT '{configured}' is not a directory") from None
        self.dirs: list[int | None] = [root_fd]
        self.missing: OSError = _error(errno.ENOENT)
        # Absolute symlink targets are matched against the root as configured and as resolved.
        self.roots = {os.path.abspath(configured), os.path.realpath(configured)}
        parts = _components(path)
        self.steps: list[tuple[str, str | None, str]] = [
            (part, None, os.sep.join(parts[:index + 1])) for index, part in reversed(list(enumerate(parts)))]
        self.links = 0

    def close(self) -> None:
        for fd in self.dirs:
            if fd is not None:
                os.close(fd)
        self.dirs.clear()

    def leaves(self, link: str | None) -> SageRaise:
        because = f" (symlink '{link}' points outside it)" if link is not None else ""
        return tool_error(self.where, f"path '{self.path}' leaves the root{because}")

    def run(self, final: Callable[[int, str | None], T], *, create: bool, follow_final: bool) -> T:
        """Walk to the last component and return `final(dir_fd, name)` on it.

        `name` is None when the path names a directory the walk already holds open (the root, `a/..`).
        `final` must not follow a symlink itself: it opens with `O_NOFOLLOW`, and when that fails on a
        symlink, the walk (if `follow_final`) reads the link and goes on with its target.

        A directory that cannot be opened (missing, or not a directory) is not an error yet: `x/..` is
        where the walk was, as it is in the text of the path, and `x/../../f` climbs out of the root. It
        stands on the stack as None; the walk fails with its error only if it ends below it.
        """
        while self.steps:
            part, link, prefix = self.steps.pop()
            if part == "..":
                if len(self.dirs) == 1:
                    raise self.leaves(link)
                fd = self.dirs.pop()
                if fd is not None:
                    os.close(fd)
                continue
            last = not self.steps
            if self.dirs[-1] is None:
                if last:
                    raise self.missing
                self.dirs.append(None)
                continue
            try:
                if last:
                    return final(self.dirs[-1], part)
                # No directory is made only to be left again by a `..` (the path `new/../f`).
                self.dirs.append(_open_dir(self.dirs[-1], part, create and self.steps[-1][0] != ".."))
                continue
            except OSError as exc:
                target = _link_target(self.dirs[-1], part) if follow_final or not last else None
                if target is None:
                    if last:
                        raise
                    if create and exc.errno == errno.ENOTDIR:
                        raise _error(errno.EEXIST) from None  # a file where a directory goes, as mkdir -p says
                    self.missing = exc
                    self.dirs.append(None)
                    continue
            self.follow(target, link if link is not None else prefix)
        if self.dirs[-1] is None:
            raise self.missing
        return final(self.dirs[-1], None)

    def follow(self, target: str, link: str) -> None:
        """Replace the symlink just met by its target's components, walked from where the target starts."""
        self.links += 1
        if self.links > _MAX_LINKS:
            raise _error(errno.ELOOP)
        if os.path.isabs(target):
            rest = self.under_root(target)
            if rest is None:
                raise self.leaves(link)
            while len(self.dirs) > 1:
                os.close(self.dirs.pop())
        else:
            rest = _components(target)
        self.steps.extend((part, link, link) for part in reversed(rest))

    def under_root(self, target: str) -> list[str] | None:
        """`target`'s components below the root, or None when it lies elsewhere.

        The resolved form of the target is consulted too (a link may name the root by another path); it
        only picks the components, which are then walked from the root like any others.
        """
        for candidate in (target, os.path.realpath(target)):
            parts = _components(candidate)
            for root in self.roots:
                root_parts = _components(root)
                if parts[:len(root_parts)] == root_parts:
                    return parts[len(root_parts):]
        return None


def _root_path_or_error(where: str) -> str:
    try:
        return _root_path()
    except OSError as exc:  # the working directory was removed
        raise tool_error(where, f"no root directory: {_os_reason(exc)}") from None


def _components(path: str) -> list[str]:
    return [part for part in path.split(os.sep) if part not in ("", ".")]


def _open_dir(dir_fd: int, name: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, dir_fd=dir_fd)
    except FileExistsError:
        pass  # made meanwhile by someone else: opening it judges whatever it is now
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _link_target(dir_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _walk(where: str, path: str, final: Callable[[int, str | None], T], *, create: bool = False,
          follow_final: bool = True) -> T:
    walk = _Walk(where, path)
    try:
        return walk.run(final, create=create, follow_final=follow_final)
    finally:
        walk.close()


def _judge(where: str, path: str) -> None:
    """Refuse a path that leads out of the root, before an operation changes anything on the way.

    Whether the file is there does not matter here: the operation itself reports that.
    """
    try:
        _walk(where, path, _not_a_symlink)
    except OSError:
        pass


def _os_reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _not_regular() -> OSError:
    return OSError(errno.EINVAL, "not a regular file")


def _open_file(dir_fd: int, name: str, flags: int) -> int:
    """Open the last component, never through a symlink, then refuse anything but a regular file."""
    try:
        fd = os.open(name, flags | _FILE_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO that nobody reads
            raise _not_regular() from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _error(errno.EISDIR)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular()
        if info.st_nlink > 1:
            # Another name of the same file may lie outside the root, and no walk can tell where it is.
            raise OSError(errno.EMLINK, f"it has {info.st_nlink} hard links, and one may lie outside the root")
    except OSError:
        os.close(fd)
        raise
    return fd


def _read_bytes(cancel: threading.Event | None) -> Callable[[int, str | None], bytes]:
    where = "Fs.read"
    seconds = time_limit(where)
    deadline = time.monotonic() + seconds

    def final(dir_fd: int, name: str | None) -> bytes:
        if name is None:
            raise _error(errno.EISDIR)
        chunks = []
        with open(_open_file(dir_fd, name, os.O_RDONLY), "rb", buffering=0) as f:
            while chunk := f.read(_READ_CHUNK):
                chunks.append(chunk)
                if cancel is not None and cancel.is_set():
                    raise AgentCancelled()
                if time.monotonic() >= deadline:
                    raise timed_out(where, seconds)
        return b"".join(chunks)
    return final


def _write_bytes(data: bytes) -> Callable[[int, str | None], None]:
    def final(dir_fd: int, name: str | None) -> None:
        if name is None:
            raise _error(errno.EISDIR)
        # Not O_TRUNC: a file is emptied only once known to be a regular file.
        with open(_open_file(dir_fd, name, os.O_WRONLY | os.O_CREAT), "wb") as f:
            f.truncate(0)
            f.write(data)
    return final


def _not_a_symlink(dir_fd: int, name: str | None) -> int:
    """The file's mode; a symlink fails as `O_NOFOLLOW` does, so that the walk follows it."""
    if name is None:
        return stat.S_IFDIR
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        raise _error(errno.ELOOP)
    return mode


def _list_names(dir_fd: int, name: str | None) -> list:
    if name is None:
        return sorted(os.listdir(dir_fd))
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)


def read(path: str, *, cancel: threading.Event | None = None) -> str:
    try:
        return _walk("Fs.read", path, _read_bytes(cancel)).decode("utf-8")
    except (OSError, ValueError) as exc:
        raise tool_error("Fs.read", f"cannot read '{path}': {_os_reason(exc)}") from None


def write(path: str, content: str, *, cancel: threading.Event | None = None) -> Any:
    try:
        data = content.encode("utf-8")
        _judge("Fs.write", path)
        _walk("Fs.write", path, _write_bytes(data), create=True)
    except (OSError, ValueError) as exc:
        raise tool_error("Fs.write", f"cannot write '{path}': {_os_reason(exc)}") from None
    return None


def exists(path: str, *, cancel: threading.Event | None = None) -> bool:
    try:
        _walk("Fs.exists", path, _not_a_symlink)
    except OSError:
        return False
    return True


def list_dir(path: str, *, cancel: threading.Event | None = None) -> list:
    try:
        return _walk("Fs.list", path, _list_names)
    except OSError as exc:
        raise tool_error("Fs.list", f"cannot list '{path}': {_os_reason(exc)}") from None


def delete(path: str, *, cancel: threading.Event | None = None) -> Any:
    # A symlink is removed itself, even when it points at a directory, but only if it points inside the
    # root: the first walk judges where the path leads; the second removes the last component as it is.
    _judge("Fs.delete", path)

    def remove(dir_fd: int, name: str | None) -> None:
        if name is None or stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise tool_error("Fs.delete", f"'{path}' is a directory (delete removes files only)")
        try:
            os.unlink(name, dir_fd=dir_fd)
        except IsADirectoryError:  # replaced by a directory since the check
            raise tool_error("Fs.delete", f"'{path}' is a directory (delete removes files only)") from None

    try:
        _walk("Fs.delete", path, remove, follow_final=False)
    except OSError as exc:
        raise tool_error("Fs.delete", f"cannot delete '{path}': {_os_reason(exc)}") from None
    return None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "read": read,
    "write": write,
    "exists": exists,
    "list": list_dir,
    "delete": delete,
}
