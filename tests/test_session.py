"""One Session per command: grove.toml is parsed once per command, whatever the command path, and the SAGE_*
variables a session read do not change under it.

The commands run in-process through their public entry points (`sagepy.cli.main.main`, `pytest.main` with
the plugin), on a copy of the triage example: a project with `[mcp]`, `[llm]`, `[test]` and a
`[tools.Tracker]` server (in-process) that the program's agents `use` and call.
"""
from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

import sagepy.grove
import sagepy.grove.servers
import sagepy.project
from sagepy.cli.main import main
from sagepy.session import Session
from sagepy.variables import VARIABLES, Overrides
from sagepy.testing.runner import load_test_file, run_case

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def triage(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "triage"
    shutil.copytree(REPO / "examples" / "triage", root, ignore=shutil.ignore_patterns(".sage", "__pycache__"))
    monkeypatch.chdir(root)
    monkeypatch.setenv("NO_COLOR", "1")
    return root


@pytest.fixture
def parses(monkeypatch) -> Counter:
    """How often grove.toml is read (`load_config`) and its MCP tables parsed, by any sagepy module."""
    counts: Counter = Counter()
    for module, name in ((sagepy.project, "load_config"), (sagepy.grove.servers, "parse_tools_config"),
                         (sagepy.grove.servers, "parse_mcp_settings")):
        original = getattr(module, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith("sagepy") and getattr(loaded, name, None) is original:
                monkeypatch.setattr(loaded, name, counting)
    return counts


ONCE = {"load_config": 1, "parse_tools_config": 1, "parse_mcp_settings": 1}


def test_run_parses_grove_toml_once(triage: Path, parses: Counter, capsys) -> None:
    assert main(["run"]) == 0
    assert "#7 Crash on save" in capsys.readouterr().out   # the program called the server
    assert dict(parses) == ONCE


def test_check_with_verify_tools_parses_grove_toml_once(triage: Path, parses: Counter, capsys) -> None:
    assert main(["check", "--verify-tools"]) == 0
    assert capsys.readouterr().out.startswith("check passed: 2 files")
    assert dict(parses) == ONCE


def test_test_parses_grove_toml_once(triage: Path, parses: Counter, capsys) -> None:
    assert main(["test"]) == 0
    assert "4 passed" in capsys.readouterr().out
    assert dict(parses) == ONCE


def test_tools_list_parses_grove_toml_once(triage: Path, parses: Counter, capsys) -> None:
    assert main(["tools", "list"]) == 0
    assert capsys.readouterr().out.startswith("Tracker  inprocess  none")
    assert dict(parses) == ONCE


def test_pytest_plugin_parses_grove_toml_once_per_project(triage: Path, parses: Counter) -> None:
    (triage / "src" / "more_test.sg").write_text('test "one more" {\n    assert_eq(1 + 1, 2);\n}\n',
                                                 encoding="utf-8")
    code = pytest.main([str(triage / "src"), "--sage", "-q", "-p", "no:cacheprovider"])
    assert code == 0
    assert dict(parses) == ONCE


FS_TEST = '''test "reads through Fs" {
    let text = try Fs.read("f.txt");
    assert_eq(text, "one");
}
'''


def test_variables_changed_after_the_session_is_built_do_not_change_it(tmp_path: Path, monkeypatch) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.txt").write_text(name, encoding="utf-8")
    test_file = tmp_path / "fs_test.sg"
    test_file.write_text(FS_TEST, encoding="utf-8")
    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "one"))
    monkeypatch.setenv("SAGE_MODEL", "model-one")
    session, _ = Session.open(str(test_file))
    loaded = load_test_file(str(test_file), session)
    assert not loaded.has_errors, loaded.diagnostics

    monkeypatch.setenv("SAGE_FS_ROOT", str(tmp_path / "two"))
    monkeypatch.setenv("SAGE_MODEL", "model-two")
    (case,) = loaded.cases
    result = run_case(case, 10_000)
    assert (result.status, result.detail) == ("pass", "")
    assert session.settings.llm.model == "model-one"

    fresh, _ = Session.open(str(test_file))   # a new command sees the new values
    assert run_case(load_test_file(str(test_file), fresh).cases[0], 10_000).status == "fail"
    assert fresh.settings.llm.model == "model-two"


def test_checker_and_runtime_share_the_settings(triage: Path) -> None:
    session, _ = Session.open(None)
    runtime = session.build_runtime()
    assert runtime.effects.settings is session.settings
    assert session.settings.tools.binding("tracker") == ("Tracker", None)
    assert "Tracker" in session.settings.tools and "tracker" not in session.settings.tools


def test_every_variable_sagepy_reads_is_listed_once() -> None:
    listed = [v.name for v in VARIABLES]
    assert len(listed) == len(set(listed))
    named = set()
    for path in (REPO / "sagepy").rglob("*.py"):
        named.update(re.findall(r"\bSAGE_[A-Z_]+\b", path.read_text(encoding="utf-8")))
    assert named <= set(listed), f"not in sagepy.settings.VARIABLES: {sorted(named - set(listed))}"


def test_overrides_read_only_listed_variables_and_treat_empty_as_unset() -> None:
    overrides = Overrides({"SAGE_HTTP_TIMEOUT": "", "SAGE_MODEL": "m", "XDG_CACHE_HOME": "/xdg"})
    assert overrides.setting("SAGE_MODEL") == "m"
    assert overrides.setting("SAGE_HTTP_TIMEOUT") is None
    assert overrides.value("SAGE_HTTP_TIMEOUT") == "30"
    assert overrides.cache_dir == "/xdg/sagepy"
    assert Overrides({"SAGE_NO_CACHE": "1", "SAGE_CACHE_DIR": "/c"}).cache_dir is None
    with pytest.raises(KeyError):
        overrides.setting("SAGE_NO_SUCH_VARIABLE")
