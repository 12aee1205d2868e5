"""The Shell tool: results, exit codes, signals, the optional timeout, cancellation, and no child left behind."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sagepy.core.errors import AgentCancelled, SageRaise
from sagepy.tools import call_builtin_tool


@pytest.fixture(autouse=True)
def no_shell_timeout(monkeypatch):
    monkeypatch.delenv("SAGE_SHELL_TIMEOUT", raising=False)


def run(cmd: str, cancel: threading.Event | None = None):
    return call_builtin_tool("Shell", "run", [cmd], cancel=cancel)


def run_error(cmd: str) -> str:
    with pytest.raises(SageRaise) as info:
        run(cmd)
    assert info.value.error.kind == "Tool"
    return info.value.error.message


def result(exit_code: int, stdout: str, stderr: str) -> dict:
    return {"exit_code": exit_code, "stdout": stdout, "stderr": stderr}   # a ShellResult as wire data


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2:].split()


def running(pid: int) -> bool:
    """True while pid is a process that is not a zombie (a zombie may wait for a reaper we do not control)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Processes of the group pgid that are still running (zombies excluded)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def gone(*pids: int) -> bool:
    """Wait until none of pids is running (SIGKILL takes effect at once, but asynchronously: on a busy
    machine, the reaping may take a while)."""
    deadline = time.monotonic() + 30
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def group_gone(pgid: int) -> bool:
    deadline = time.monotonic() + 30
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def wait_for_pids(path: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists():
            pids = path.read_text().split()
            if len(pids) >= count:
                return [int(p) for p in pids[:count]]
        time.sleep(0.02)
    raise AssertionError(f"{path} never listed {count} pids")


def test_stdout_stderr_and_exit_code_are_captured():
    assert run("echo out; echo err >&2; exit 3") == result(3, "out\n", "err\n")
    assert run("true") == result(0, "", "")


def test_a_non_zero_exit_is_a_result_not_an_error():
    assert run("exit 255") == result(255, "", "")
    missing = run("nonexistent-command-xyz")
    assert missing["exit_code"] == 127
    assert "nonexistent-command-xyz" in missing["stderr"]


def test_output_is_utf8_text_without_newline_translation():
    assert run("printf 'h\\303\\251llo\\r\\nbad:\\377'")["stdout"] == "héllo\r\nbad:\ufffd"


def test_the_command_runs_under_sh_c():
    assert run('echo "$0"')["stdout"] == "sh\n"
    assert run("a=1; b=2; echo $((a + b)) | tr 3 x")["stdout"] == "x\n"


def test_large_output_does_not_deadlock():
    out = run("head -c 1000000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero | tr '\\0' b >&2")
    assert out["stdout"] == "a" * 1_000_000
    assert out["stderr"] == "b" * 300_000


@pytest.mark.parametrize("sig", ["KILL", "TERM", "INT"])
def test_a_shell_killed_by_a_signal_has_exit_code_minus_one(sig):
    assert run(f"echo before; kill -{sig} $$; echo after") == result(-1, "before\n", "")


def test_stdin_is_empty_and_not_the_programs_stdin():
    # Put a pipe with pending data on this process's fd 0: a child that inherited it would read the data.
    read_end, write_end = os.pipe()
    os.write(write_end, b"leaked\n")
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        out = run("cat; readlink /proc/self/fd/0")
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert out["stdout"] == "/dev/null\n"


def test_the_command_runs_in_a_process_group_of_its_own():
    out = run("cut -d' ' -f5 /proc/$$/stat; echo $$")["stdout"].split()
    assert out[0] == out[1]
    assert int(out[0]) != os.getpgrp()


def test_timeout_kills_the_whole_group(tmp_path, monkeypatch):
    # long enough for the shell to write both pids first, also on a busy machine
    monkeypatch.setenv("SAGE_SHELL_TIMEOUT", "2")
    pids = tmp_path / "pids"
    assert run_error(f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; wait") == "Shell.run: timed out after 2 s"
    shell, child = wait_for_pids(pids, 2)
    assert gone(shell, child)
    assert group_gone(shell)


def test_timeout_also_ends_a_background_child_that_holds_the_output_open(tmp_path, monkeypatch):
    # The shell exits at once, but its child keeps stdout open, so the output is not complete until it ends.
    monkeypatch.setenv("SAGE_SHELL_TIMEOUT", "2")
    pids = tmp_path / "pids"
    assert run_error(f"sleep 30 & echo $! > {pids}; exit 0") == "Shell.run: timed out after 2 s"
    (child,) = wait_for_pids(pids, 1)
    assert gone(child)


def test_a_command_that_finishes_in_time_is_unaffected_by_the_timeout(monkeypatch):
    monkeypatch.setenv("SAGE_SHELL_TIMEOUT", "60")
    assert run("sleep 0.1; echo done") == result(0, "done\n", "")


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan"])
def test_an_invalid_timeout_is_a_tool_error(monkeypatch, value):
    monkeypatch.setenv("SAGE_SHELL_TIMEOUT", value)
    assert run_error("true") == (
        f"Shell.run: invalid SAGE_SHELL_TIMEOUT '{value}' (expected a positive number of seconds)")


def test_an_empty_timeout_means_no_timeout(monkeypatch):
    monkeypatch.setenv("SAGE_SHELL_TIMEOUT", "")
    assert run("sleep 0.2; echo ok")["stdout"] == "ok\n"


def test_cancel_kills_the_group_promptly_and_raises_agent_cancelled(tmp_path):
    pids = tmp_path / "pids"
    cancel = threading.Event()
    outcome = {}

    def target():
        try:
            outcome["value"] = run(f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; sleep 30", cancel)
        except BaseException as exc:  # the assertion below names what arrived instead
            outcome["exc"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    shell, child = wait_for_pids(pids, 2)
    assert running(shell) and running(child)
    assert {shell, child} <= set(group_members(shell))
    cancel.set()
    thread.join(60)   # "promptly": the group is killed at the next poll, whatever the machine's load
    assert not thread.is_alive()
    assert isinstance(outcome.get("exc"), AgentCancelled), outcome
    assert gone(shell, child)
    assert group_gone(shell)


def test_an_exception_while_waiting_kills_the_group(tmp_path):
    pids = tmp_path / "pids"

    class Exploding:
        """A cancel flag whose check fails once the command has started."""

        def is_set(self) -> bool:
            if pids.exists() and len(pids.read_text().split()) >= 2:
                raise RuntimeError("boom")
            return False

    with pytest.raises(RuntimeError, match="boom"):
        run(f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; sleep 30", Exploding())
    shell, child = wait_for_pids(pids, 2)
    assert gone(shell, child)
    assert group_gone(shell)


def test_the_shell_is_reaped_after_a_normal_run():
    shell = int(run("echo $$")["stdout"])
    assert not running(shell)
    assert stat_fields(shell) is None


def test_a_nul_in_the_command_is_a_tool_error():
    assert run_error("echo a\0b") == "Shell.run: cannot start sh: embedded null byte"
