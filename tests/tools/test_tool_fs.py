"""The Fs tool: reads and writes inside SAGE_FS_ROOT, and every way out of it refused."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sagepy.core.errors import AgentCancelled, SageRaise
from sagepy.tools import call_builtin_tool
from sagepy.tools import fs as fs_module


def fs(fn: str, *args):
    return call_builtin_tool("Fs", fn, list(args))


def fs_error(fn: str, *args) -> str:
    with pytest.raises(SageRaise) as info:
        fs(fn, *args)
    assert info.value.error.kind == "Tool"
    return info.value.error.message


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A root directory inside tmp_path, with a sibling directory `outside` holding a secret."""
    base = tmp_path / "root"
    base.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    monkeypatch.setenv("SAGE_FS_ROOT", str(base))
    return base


def test_write_then_read_round_trips_exact_text(root):
    text = "héllo 😀\r\nline two\n"
    assert fs("write", "a.txt", text) is None
    assert (root / "a.txt").read_bytes() == text.encode("utf-8")
    assert fs("read", "a.txt") == text
    fs("write", "a.txt", "")
    assert fs("read", "a.txt") == ""


def test_write_creates_parent_directories(root):
    fs("write", "deep/er/x.txt", "x")
    assert (root / "deep" / "er" / "x.txt").read_text() == "x"
    fs("write", "./deep/./y.txt", "y")
    assert (root / "deep" / "y.txt").read_text() == "y"


def test_root_defaults_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("SAGE_FS_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    fs("write", "here.txt", "h")
    assert (tmp_path / "here.txt").read_text() == "h"
    monkeypatch.setenv("SAGE_FS_ROOT", "")
    assert fs("exists", "here.txt") is True


def test_root_is_read_on_every_call(tmp_path, monkeypatch):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "f.txt").write_text("2")
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "one"))
    assert fs("exists", "f.txt") is False
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "two"))
    assert fs("read", "f.txt") == "2"


def test_relative_root_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "f.txt").write_text("rel")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAGE_FS_ROOT", "r")
    assert fs("read", "f.txt") == "rel"


def test_a_root_that_is_not_a_directory_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "missing"))
    assert fs_error("read", "a") == f"Fs.read: SAGE_FS_ROOT '{tmp_path / 'missing'}' is not a directory"


def test_exists(root):
    (root / "f.txt").write_text("f")
    (root / "d").mkdir()
    assert fs("exists", "f.txt") is True
    assert fs("exists", "d") is True
    assert fs("exists", "nope") is False
    assert fs("exists", "") is True


def test_list_gives_sorted_names(root):
    for name in ["b.txt", "a.txt", ".hidden", "C"]:
        (root / name).write_text("")
    (root / "sub").mkdir()
    (root / "sub" / "inner").write_text("")
    assert fs("list", "") == [".hidden", "C", "a.txt", "b.txt", "sub"]
    assert fs("list", ".") == [".hidden", "C", "a.txt", "b.txt", "sub"]
    assert fs("list", "sub") == ["inner"]
    assert fs("list", "sub/") == ["inner"]


def test_list_errors(root):
    (root / "f.txt").write_text("")
    assert fs_error("list", "nope") == "Fs.list: cannot list 'nope': No such file or directory"
    assert fs_error("list", "f.txt") == "Fs.list: cannot list 'f.txt': Not a directory"


def test_read_errors(root):
    (root / "d").mkdir()
    (root / "bin").write_bytes(b"\xff\xfe")
    assert fs_error("read", "nope.txt") == "Fs.read: cannot read 'nope.txt': No such file or directory"
    assert fs_error("read", "d") == "Fs.read: cannot read 'd': Is a directory"
    assert fs_error("read", "bin") == "Fs.read: cannot read 'bin': not valid UTF-8"


def test_write_to_a_directory_is_an_error(root):
    (root / "d").mkdir()
    assert fs_error("write", "d", "x") == "Fs.write: cannot write 'd': Is a directory"
    (root / "f").write_text("")
    assert fs_error("write", "f/x.txt", "x") == "Fs.write: cannot write 'f/x.txt': File exists"


def test_delete_removes_files_only(root):
    (root / "f.txt").write_text("f")
    (root / "d").mkdir()
    assert fs("delete", "f.txt") is None
    assert not (root / "f.txt").exists()
    assert fs_error("delete", "f.txt") == "Fs.delete: cannot delete 'f.txt': No such file or directory"
    assert fs_error("delete", "d") == "Fs.delete: 'd' is a directory (delete removes files only)"
    assert (root / "d").is_dir()


def test_dot_dot_inside_the_root_is_fine(root):
    (root / "a").mkdir()
    (root / "b.txt").write_text("b")
    assert fs("read", "a/../b.txt") == "b"
    assert fs("read", "a/./../a/../b.txt") == "b"


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "x/../../outside/secret.txt", "a/b/../../..",
                                  "./../root/../outside/secret.txt"])
def test_dot_dot_leaving_the_root_is_refused(root, path):
    for fn, args in [("read", ()), ("exists", ()), ("list", ()), ("delete", ()), ("write", ("pwned",))]:
        assert fs_error(fn, path, *args) == f"Fs.{fn}: path '{path}' leaves the root"
    assert (root.parent / "outside" / "secret.txt").read_text() == "secret"
    assert not (root.parent / "pwned").exists()


def test_leaving_and_coming_back_through_dot_dot_is_still_refused(root):
    # `../root/f.txt` would name a file inside the root, but the path passes outside it on the way.
    (root / "f.txt").write_text("f")
    assert fs_error("read", "../root/f.txt") == "Fs.read: path '../root/f.txt' leaves the root"


def test_absolute_paths_are_refused_even_inside_the_root(root):
    (root / "f.txt").write_text("f")
    inside = str(root / "f.txt")
    reason = "is absolute (paths are relative to SAGE_FS_ROOT)"
    assert fs_error("read", inside) == f"Fs.read: path '{inside}' {reason}"
    assert fs_error("read", "/etc/passwd") == f"Fs.read: path '/etc/passwd' {reason}"
    assert fs_error("write", "/tmp/x", "x") == f"Fs.write: path '/tmp/x' {reason}"


def test_nul_in_a_path_is_refused(root):
    assert fs_error("read", "a\0b") == "Fs.read: path contains a NUL character"


def test_file_symlink_pointing_outside_is_refused(root):
    secret = root.parent / "outside" / "secret.txt"
    os.symlink(secret, root / "link.txt")
    message = "path 'link.txt' leaves the root (symlink 'link.txt' points outside it)"
    assert fs_error("read", "link.txt") == "Fs.read: " + message
    assert fs_error("exists", "link.txt") == "Fs.exists: " + message
    assert fs_error("write", "link.txt", "overwritten") == "Fs.write: " + message
    assert fs_error("delete", "link.txt") == "Fs.delete: " + message
    assert secret.read_text() == "secret"
    assert (root / "link.txt").is_symlink()


def test_hard_link_to_a_file_outside_is_neither_read_nor_overwritten(root):
    secret = root.parent / "outside" / "secret.txt"
    os.link(secret, root / "hard.txt")
    reason = "it has 2 hard links, and one may lie outside the root"
    assert fs_error("read", "hard.txt") == f"Fs.read: cannot read 'hard.txt': {reason}"
    assert fs_error("write", "hard.txt", "overwritten") == f"Fs.write: cannot write 'hard.txt': {reason}"
    assert secret.read_text() == "secret"
    assert fs("exists", "hard.txt") is True
    fs("delete", "hard.txt")  # removes the name inside the root only
    assert not (root / "hard.txt").exists() and secret.read_text() == "secret"


def test_a_file_with_one_link_is_read_and_written_as_before(root):
    fs("write", "one.txt", "first")
    os.link(root / "one.txt", root / "two.txt")
    os.unlink(root / "two.txt")
    fs("write", "one.txt", "second")
    assert fs("read", "one.txt") == "second"


def test_relative_symlink_pointing_outside_is_refused(root):
    os.symlink("../outside/secret.txt", root / "rel")
    assert fs_error("read", "rel") == "Fs.read: path 'rel' leaves the root (symlink 'rel' points outside it)"


def test_dangling_symlink_pointing_outside_cannot_create_a_file_there(root):
    target = root.parent / "outside" / "new.txt"
    os.symlink(target, root / "dangling")
    assert fs_error("write", "dangling", "x") == (
        "Fs.write: path 'dangling' leaves the root (symlink 'dangling' points outside it)")
    assert not target.exists()


def test_directory_symlink_pointing_outside_is_refused_in_any_component(root):
    outside = root.parent / "outside"
    (root / "sub").mkdir()
    os.symlink(outside, root / "sub" / "out")
    message = "leaves the root (symlink 'sub/out' points outside it)"
    assert fs_error("read", "sub/out/secret.txt") == f"Fs.read: path 'sub/out/secret.txt' {message}"
    assert fs_error("list", "sub/out") == f"Fs.list: path 'sub/out' {message}"
    assert fs_error("write", "sub/out/new.txt", "x") == f"Fs.write: path 'sub/out/new.txt' {message}"
    assert not (outside / "new.txt").exists()


def test_symlink_out_and_dot_dot_back_in_is_refused(root):
    # `out/../root/f.txt` ends up inside the root once resolved, but only by way of a link leaving it.
    (root / "f.txt").write_text("f")
    os.symlink(root.parent / "outside", root / "out")
    assert fs_error("read", "out/../root/f.txt") == (
        "Fs.read: path 'out/../root/f.txt' leaves the root (symlink 'out' points outside it)")


def test_symlink_to_the_root_parent_is_refused(root):
    os.symlink("..", root / "up")
    assert fs_error("list", "up") == "Fs.list: path 'up' leaves the root (symlink 'up' points outside it)"


def test_symlinks_inside_the_root_are_followed(root):
    (root / "data").mkdir()
    (root / "data" / "f.txt").write_text("inside")
    os.symlink("data", root / "alias")
    os.symlink(root / "data" / "f.txt", root / "flink")
    assert fs("read", "alias/f.txt") == "inside"
    assert fs("list", "alias") == ["f.txt"]
    assert fs("read", "flink") == "inside"
    fs("write", "alias/g.txt", "g")
    assert (root / "data" / "g.txt").read_text() == "g"
    # `alias/..` is the parent of the link's target, as the kernel sees it: the root again.
    assert fs("read", "alias/../data/f.txt") == "inside"


def test_dot_dot_after_an_inside_symlink_cannot_climb_out(root):
    (root / "data").mkdir()
    os.symlink("data", root / "alias")
    assert fs_error("list", "alias/../..") == "Fs.list: path 'alias/../..' leaves the root"


def test_delete_of_a_symlink_removes_the_link_not_its_target(root):
    (root / "data").mkdir()
    (root / "data" / "f.txt").write_text("keep")
    os.symlink("data/f.txt", root / "flink")
    os.symlink("data", root / "dlink")
    fs("delete", "flink")
    fs("delete", "dlink")
    assert not (root / "flink").is_symlink()
    assert not (root / "dlink").is_symlink()
    assert (root / "data" / "f.txt").read_text() == "keep"


def test_a_root_that_is_itself_a_symlink_works(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("via link")
    os.symlink(tmp_path / "real", tmp_path / "rootlink")
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "rootlink"))
    assert fs("read", "f.txt") == "via link"
    assert fs_error("read", "../real/f.txt") == "Fs.read: path '../real/f.txt' leaves the root"


def test_a_chain_of_symlinks_is_judged_by_its_final_target(root):
    os.symlink(root.parent / "outside", root / "far")
    os.symlink("far", root / "near")
    os.symlink("far/secret.txt", root / "near_file")
    assert fs_error("read", "near/secret.txt") == (
        "Fs.read: path 'near/secret.txt' leaves the root (symlink 'near' points outside it)")
    assert fs_error("read", "near_file") == (
        "Fs.read: path 'near_file' leaves the root (symlink 'near_file' points outside it)")


def test_a_symlink_loop_is_an_ordinary_error(root):
    os.symlink("loop", root / "loop")
    assert fs_error("read", "loop") == "Fs.read: cannot read 'loop': Too many levels of symbolic links"
    assert fs("exists", "loop") is False


# Swaps, as fast as it can until killed, `f.txt` between a regular file and a symlink to a file outside the
# root, and `d` between a symlink to a directory inside the root and one to the directory outside.
SWAPPER = """
import os, sys
root, outside = sys.argv[1], sys.argv[2]
os.chdir(root)
while True:
    os.symlink(os.path.join(outside, "secret.txt"), "f.tmp")
    os.replace("f.tmp", "f.txt")
    os.symlink(outside, "d.tmp")
    os.replace("d.tmp", "d")
    with open("f.tmp", "w") as f:
        f.write("inside")
    os.replace("f.tmp", "f.txt")
    os.symlink("real", "d.tmp")
    os.replace("d.tmp", "d")
"""


def test_a_symlink_swapped_in_during_a_call_never_leads_outside(root):
    outside = root.parent / "outside"
    (outside / "f.txt").write_text("secret")
    (outside / "secret.txt").write_text("secret")
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("inside")
    os.symlink("real", root / "d")
    (root / "f.txt").write_text("inside")
    before = {p.name: p.read_text() for p in outside.iterdir()}
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside)])
    reads, led_outside = set(), 0
    try:
        for _ in range(1000):
            for fn, args in [("read", ("f.txt",)), ("read", ("d/f.txt",)), ("write", ("f.txt", "written")),
                             ("write", ("d/f.txt", "written")), ("exists", ("d/f.txt",)), ("list", ("d",)),
                             ("read", ("d/secret.txt",))]:
                try:
                    result = fs(fn, *args)
                except SageRaise as exc:
                    assert exc.error.kind == "Tool", exc.error.message
                    led_outside += "leaves the root" in exc.error.message
                    continue
                if fn == "read":
                    reads.add(result)
                if fn == "list":
                    assert "secret.txt" not in result
            assert swapper.poll() is None, "the swapper stopped"
    finally:
        swapper.kill()
        swapper.wait()
    assert {p.name: p.read_text() for p in outside.iterdir()} == before
    assert "secret" not in reads
    assert led_outside > 0 and reads - {"secret"}, "no race: no call met a link out, or no read succeeded"


def test_only_regular_files_are_read_or_written(root):
    # A FIFO would block an open for reading until a writer comes; it is refused at once instead.
    fifo = root / "pipe"
    os.mkfifo(fifo)

    def writer() -> None:  # should Fs.read block on the FIFO, it gets end-of-file instead of hanging the test
        with open(fifo, "wb"):
            pass

    unblocker = threading.Thread(target=writer, daemon=True)
    unblocker.start()
    assert fs_error("read", "pipe") == "Fs.read: cannot read 'pipe': not a regular file"
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return, if it has not yet
    unblocker.join()
    os.close(reader)
    assert fs_error("write", "pipe", "x") == "Fs.write: cannot write 'pipe': not a regular file"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / "sock"))
        assert fs_error("read", "sock") == "Fs.read: cannot read 'sock': not a regular file"
        assert fs_error("write", "sock", "x") == "Fs.write: cannot write 'sock': not a regular file"
    assert fs("exists", "pipe") is True


def test_a_missing_directory_followed_by_dot_dot_is_where_the_path_says(root):
    (root / "b.txt").write_text("b")
    assert fs("read", "missing/../b.txt") == "b"
    assert fs_error("read", "missing/x/../b.txt") == (
        "Fs.read: cannot read 'missing/x/../b.txt': No such file or directory")
    assert fs_error("write", "missing/../../pwned", "x") == "Fs.write: path 'missing/../../pwned' leaves the root"
    fs("write", "missing/../c.txt", "c")
    assert (root / "c.txt").read_text() == "c"
    assert not (root / "missing").exists() and not (root.parent / "pwned").exists()


def test_write_creates_parent_directories_through_an_inside_symlink(root):
    (root / "data").mkdir()
    os.symlink(root / "data", root / "alias")
    fs("write", "alias/new/deeper/f.txt", "made")
    assert (root / "data" / "new" / "deeper" / "f.txt").read_text() == "made"


def test_a_read_ends_at_the_time_limit(root, monkeypatch):
    """A read that takes longer than SAGE_HTTP_TIMEOUT (here: a few megabytes against a microsecond) fails."""
    (root / "big.txt").write_bytes(b"x" * (3 << 20))
    monkeypatch.setenv("SAGE_HTTP_TIMEOUT", "0.000001")
    assert fs_error("read", "big.txt") == "Fs.read: timed out after 1e-06 s (limit SAGE_HTTP_TIMEOUT)"
    monkeypatch.delenv("SAGE_HTTP_TIMEOUT")
    assert len(fs("read", "big.txt")) == 3 << 20


def test_a_cancelled_agent_stops_reading(root, monkeypatch):
    """The agent is stopped once the file is open (after the dispatcher's own check): the read loop sees it."""
    (root / "big.txt").write_bytes(b"x" * (3 << 20))
    cancel = threading.Event()
    open_file = fs_module._open_file

    def open_then_cancel(*args):
        fd = open_file(*args)
        cancel.set()
        return fd
    monkeypatch.setattr(fs_module, "_open_file", open_then_cancel)
    with pytest.raises(AgentCancelled):
        call_builtin_tool("Fs", "read", ["big.txt"], cancel=cancel)
