"""The built-in tool entry point: names, safety classes, argument checks, cancellation and lazy imports."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sagepy.binding import BUILTIN_TOOLS
from sagepy.core.errors import AgentCancelled, SageRaise
from sagepy.tools import SAFETY, call_builtin_tool

REPO = Path(__file__).resolve().parents[2]


def tool_error(tool: str, fn: str, args: list) -> str:
    with pytest.raises(SageRaise) as info:
        call_builtin_tool(tool, fn, args)
    error = info.value.error
    assert error.kind == "Tool"
    assert error.display() == "Tool error: " + error.message
    return error.message


def prelude_tools() -> dict[str, list[str]]:
    text = (REPO / "stdlib" / "prelude.sg").read_text(encoding="utf-8")
    tools = {}
    for name, body in re.findall(r"^tool (\w+) \{(.*?)^\}", text, re.S | re.M):
        tools[name] = re.findall(r"fn (\w+)\(", body)
    return tools


def test_builtin_tools_are_the_four_of_the_spec():
    assert BUILTIN_TOOLS == ("Http", "Fs", "Shell", "Database")


def test_safety_table_matches_spec_section_7():
    assert SAFETY == {
        ("Http", "get"): "read_only", ("Http", "delete"): "idempotent",
        ("Http", "post"): "destructive", ("Http", "put"): "idempotent",
        ("Fs", "read"): "read_only", ("Fs", "write"): "idempotent", ("Fs", "exists"): "read_only",
        ("Fs", "list"): "read_only", ("Fs", "delete"): "idempotent",
        ("Shell", "run"): "destructive",
        ("Database", "query"): "read_only", ("Database", "execute"): "destructive",
    }


def test_every_prelude_tool_function_has_a_safety_class_and_no_other():
    declared = {(tool, fn) for tool, fns in prelude_tools().items() for fn in fns}
    assert declared == set(SAFETY)
    assert set(prelude_tools()) == set(BUILTIN_TOOLS)


def test_unknown_tool_and_function_are_tool_errors():
    assert tool_error("Ftp", "get", ["x"]) == "Ftp.get: unknown built-in tool 'Ftp'"
    assert tool_error("Http", "patch", ["x"]) == (
        "Http.patch: Http has no function 'patch' (it has get, delete, post, put)")
    assert tool_error("Shell", "exec", []) == "Shell.exec: Shell has no function 'exec' (it has run)"


def test_argument_count_and_types_are_checked():
    assert tool_error("Fs", "read", []) == "Fs.read: expected 1 argument, got 0"
    assert tool_error("Http", "post", ["u"]) == "Http.post: expected 2 arguments, got 1"
    assert tool_error("Fs", "write", ["a.txt", 3]) == "Fs.write: argument 'content' must be a String"
    assert tool_error("Database", "query", [True]) == "Database.query: argument 'sql' must be a String"


def test_a_cancel_flag_set_before_the_call_stops_it_before_anything_happens(tmp_path, monkeypatch):
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(AgentCancelled):
        call_builtin_tool("Fs", "write", ["a.txt", "x"], cancel=cancel)
    assert not (tmp_path / "a.txt").exists()
    call_builtin_tool("Fs", "write", ["a.txt", "x"], cancel=threading.Event())
    assert (tmp_path / "a.txt").read_text() == "x"


def test_tools_other_than_http_do_not_import_httpx(tmp_path):
    code = ("import sys; from sagepy.tools import call_builtin_tool as c; "
            "c('Fs', 'exists', ['x']); c('Shell', 'run', ['true']); "
            "print('httpx' in sys.modules, 'sagepy.tools.http' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
