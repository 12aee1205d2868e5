"""`sage tools call` (SPEC §10.2) and what `sage tools inspect` shows besides tools (instructions, prompts,
resources, resource templates, parameter constraints), against the suite server over stdio and the
in-process server of `servers/catalogue.py`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tools_cli_helpers import SUITE, run_sage, sage_process, suite_table, toml_string, write

CATALOGUE = Path(__file__).resolve().parent / "servers" / "catalogue.py"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("call_project")
    write(root / "grove.toml", suite_table("Suite") + f"\n[tools.Catalogue]\nmodule = {toml_string(str(CATALOGUE))}\n")
    return root


def test_call_types_pairs_by_the_schema(project, capsys, monkeypatch):
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.add", "a=2", "b=40") == (0, "42\n", "")
    # `text` is a string property: a value that parses as JSON stays the text typed.
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.echo", "text=123") == (0, "123\n", "")
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.echo", "text=a=b c") == (0, "a=b c\n", "")


def test_call_with_json_and_pairs_mixed(project, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "call", "Catalogue.book", "nights=3",
                              "--json", '{"booking": {"room": "12", "contact": {"email": "a@b.c"}}, "nights": 9}',
                              "view=city")
    assert (code, out, err) == (0, "12 for 3 nights (city, a@b.c)\n", "")


def test_call_prints_structured_content_without_text(project, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.make_point", "x=1", "y=2")
    assert code == 0 and err == ""
    assert json.loads(out) == {"x": 1, "y": 2}


def test_call_failures(project, capsys, monkeypatch):
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.refuse", "reason=nope") == \
        (1, "", "error: MCP tool error: Error executing tool refuse: nope\n")
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.ad", "a=1") == \
        (1, "", "error: server 'Suite' offers no tool 'ad'; did you mean `add`?\n")
    assert run_sage(capsys, monkeypatch, project, "tools", "call", "Nope.add") == \
        (1, "", "error: no [tools.Nope] entry in grove.toml\n")
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "call", "add")
    assert code == 2 and err.endswith("sage tools call: error: expected NAME.TOOL, got 'add'\n")
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.add", "--json", "[1]")
    assert code == 2 and err.endswith("sage tools call: error: --json expects a JSON object\n")
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "call", "Suite.add", "oops")
    assert code == 2 and err.endswith("sage tools call: error: arguments are k=v, got 'oops'\n")


def test_call_an_adhoc_server_in_a_subprocess(tmp_path):
    cache = tmp_path / "cache"
    here = tmp_path / "here"
    here.mkdir()
    r = sage_process(here, "tools", "call", "--stdio", f"{sys.executable} {SUITE}", "echo", "text=hi",
                     env={"SAGE_CACHE_DIR": str(cache)})
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\n", "")
    assert (cache / "logs" / "suite.py.log").exists() and list(here.iterdir()) == []


def test_inspect_lists_the_catalogue_and_constraints(project, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "inspect", "Catalogue")
    assert (code, err) == (0, "")
    assert out.startswith("server: catalogue-server 4.5.6 (protocol 2026-07-28, inprocess)\ncapabilities: ")
    assert "\ninstructions:\n  Book rooms here.\n  Ask before booking.\ntools (1):\n" in out
    assert ('    params: booking: object {room: string (required), contact: object {email: string (required, '
            'format email), phone: string | null (default null)} (required)} (required), nights: integer '
            '(default 1, 1..14), code: string (default "abc", length >= 3), view: string (one of "sea", "city", '
            'default "sea")\n') in out
    assert out.endswith("prompts (1):\n  greeting — Greet someone.\n    arguments: name (required), style\n"
                        "resources (1):\n  notes://readme (readme) [text/plain] — The read-me.\n"
                        "resource templates (1):\n  notes://day/{day} (day_notes) [text/plain] — Notes of one day.\n")


def test_inspect_json_has_the_catalogue(project, capsys, monkeypatch):
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "inspect", "Catalogue", "--json")
    report = json.loads(out)
    assert report["instructions"] == "Book rooms here.\nAsk before booking."
    assert [p["name"] for p in report["prompts"]] == ["greeting"]
    assert [r["uri"] for r in report["resources"]] == ["notes://readme"]
    assert [t["uriTemplate"] for t in report["resourceTemplates"]] == ["notes://day/{day}"]
    code, out, err = run_sage(capsys, monkeypatch, project, "tools", "inspect", "Suite", "--json")
    assert "instructions" not in json.loads(out) and "prompts" not in json.loads(out)
