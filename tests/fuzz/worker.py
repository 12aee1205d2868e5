"""A fuzz worker process: runs each input through sagepy's public command (`sage check` and `sage fmt --check`,
then `sage run` or `sage test`) in this process and reports what happened.

The parent (tests/fuzz/pool.py) starts it with two pipe descriptors: it reads requests from the first and
writes pickled messages to the second. The process's own stdin is /dev/null (a program that reads stdin
sees end of input) and its stdout goes nowhere; `sys.stdout`/`sys.stderr` are replaced per command so that
the command's output can be classified. Faulthandler writes to stderr, which the parent points at a log file,
so a crash leaves a Python stack behind.

Messages: `{"phase": "run"}` when checking ended clean and the program starts running (a timeout after it is
a program that runs long, not a slow checker), then the result `{"outcome", "detail", "check_s", "run_s"}`.
"""
from __future__ import annotations

import faulthandler
import io
import os
import pickle
import re
import shutil
import socket
import sys
import time
import traceback
from typing import Any

# Output of a command is kept only up to this many characters: enough to classify and to show.
_KEEP_CHARS = 4000
# The limit of a fresh process, as `sage check` has it: `sage run` raises it for the rest of its process.
_FRESH_RECURSION_LIMIT = sys.getrecursionlimit()


def write_frame(fd: int, message: Any) -> None:
    """One pickled message, length first: the reader must know where it ends without buffering past it,
    since it waits for the next message with select()."""
    data = pickle.dumps(message)
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int) -> Any:
    """The next message; EOFError when the other side is gone."""
    size = int.from_bytes(_read_exactly(fd, 8), "big")
    return pickle.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _refuse_network() -> None:
    """No input may reach the network: every inet connection attempt fails as a refused connection, which
    sagepy's tools must turn into ordinary catchable errors like any other refusal."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise ConnectionRefusedError(111, "Connection refused (network disabled by the fuzz harness)")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            return 111
        return real_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


def _command(argv: list[str]) -> tuple[int | None, str, str, str | None]:
    """Run `sage <argv>` in this process: (exit code, stdout, stderr, traceback of an escaping exception)."""
    from sagepy.cli.main import main
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    escaped = None
    code: int | None = None
    try:
        code = main(argv)
    except BaseException:  # SAGE_DEBUG makes main re-raise what it reports as `internal error`
        escaped = traceback.format_exc(limit=-8)
    finally:
        sys.stdout, sys.stderr = saved
    texts = [stream.buffer.getvalue().decode("utf-8", "replace")[-_KEEP_CHARS:] for stream in (out, err)]
    return code, texts[0], texts[1], escaped


_INTERNAL = re.compile(r"internal error: [A-Za-z_][\w.]*: ")
_QUOTED_SOURCE = re.compile(r"\s*\d*\s*\|")


def internal_evidence(stdout: str, stderr: str, escaped: str | None) -> str | None:
    """The evidence of an internal error in a command's result, or None."""
    if escaped is not None:
        return escaped
    for line in stderr.splitlines():
        # sagepy writes `internal error: <Exception>: …`; a diagnostic's quoted source line (`3 | …`) may say
        # "internal error" in a comment or string of the input itself, and is no evidence
        if _INTERNAL.search(line) and not _QUOTED_SOURCE.match(line):
            return line.strip()
    return None


def _unsafe_format(stderr: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith("error: internal error: formatting would change") and not _QUOTED_SOURCE.match(line):
            return line.strip()
    return None


def run_input(workdir: str, name: str, source: bytes, run: bool, send: Any) -> dict:
    entry = os.path.join(workdir, name)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    os.chdir(workdir)
    with open(entry, "wb") as fh:
        fh.write(source)
    started = time.perf_counter()
    code, out, err, escaped = _command(["check", entry])
    check_s = time.perf_counter() - started
    result = {"outcome": "ok", "detail": "", "check_s": check_s, "run_s": 0.0, "phase": "check"}
    evidence = internal_evidence(out, err, escaped)
    if evidence is not None:
        result.update(outcome="internal", detail=evidence)
        return result
    # `sage fmt` of every input, also one that does not check: formatting never crashes, and it refuses
    # (as an internal error) rather than write text that would parse to another program
    code_fmt, out, err, escaped = _command(["fmt", "--check", entry])
    evidence = internal_evidence(out, err, escaped) or _unsafe_format(err)
    if evidence is not None:
        result.update(outcome="internal", detail=evidence)
        return result
    if code != 0:
        result["outcome"] = "diagnostic"
        return result
    if not run:
        return result
    send({"phase": "run"})
    result["phase"] = "run"
    started = time.perf_counter()
    code, out, err, escaped = _command(["test" if name.endswith("_test.sg") else "run", entry])
    result["run_s"] = time.perf_counter() - started
    evidence = internal_evidence(out, err, escaped)
    if evidence is not None:
        result.update(outcome="internal", detail=evidence)
    elif code != 0:
        result["outcome"] = "runtime-error"
    return result


def serve(request_fd: int, reply_fd: int, workdir: str) -> None:
    def send(message: dict) -> None:
        write_frame(reply_fd, message)

    while True:
        try:
            request = read_frame(request_fd)
        except EOFError:
            return
        sys.setrecursionlimit(_FRESH_RECURSION_LIMIT)
        if request.get("crash"):  # the harness's own test: a crash must be reported as one
            faulthandler._sigsegv()
        send(run_input(workdir, request["name"], request["source"], request["run"], send))


def main() -> None:
    request_fd, reply_fd, workdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    faulthandler.enable(file=sys.__stderr__, all_threads=True)
    _refuse_network()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(os.devnull, encoding="utf-8")
    # import and build the parser before the first input, so that its checking time is its own
    sys.setrecursionlimit(_FRESH_RECURSION_LIMIT)
    run_input(workdir, "main.sg", b"agent Main { on start { print(1); } }\nrun Main;\n", True, lambda _: None)
    serve(request_fd, reply_fd, workdir)


if __name__ == "__main__":
    main()
