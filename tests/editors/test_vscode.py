"""editors/vscode (SPEC §19.3): its TypeScript compiles, its TextMate grammar passes its tests
(`vscode-tmgrammar-test` over editors/vscode/tests/grammar/*.sg), and `npm run package` builds the `.vsix`.

The Node packages are the extension's own, locked in editors/vscode/package-lock.json: the first test that needs
them runs `npm ci` there (once, under a file lock, as tests/conftest.py does for the MCP servers). Without npm,
or when the install fails, these tests fail with the reason; they never skip.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parent.parent.parent / "editors" / "vscode"
GRAMMAR = EXTENSION / "syntaxes" / "sage.tmLanguage.json"
LARK_GRAMMAR = EXTENSION.parent.parent / "grammar" / "sage.lark"


def _installed() -> bool:
    lock = json.loads((EXTENSION / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for where, locked in lock.items():
        if not where:
            continue
        try:
            found = json.loads((EXTENSION / where / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if locked.get("optional"):   # another platform's build of a package (vsce-sign's)
                continue
            return False
        if found.get("version") != locked.get("version"):
            return False
    return True


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: the VS Code extension's tests need Node.js 18 or newer with npm, to "
                    f"install the packages locked in {EXTENSION / 'package-lock.json'}", pytrace=False)
    return npm


@pytest.fixture(scope="module")
def npm() -> str:
    import fcntl  # POSIX only, as in tests/conftest.py

    npm = _npm()
    with open(EXTENSION / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            done = _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], timeout=900)
            if done.returncode != 0 or not _installed():
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
                pytest.fail(f"`npm ci` in {EXTENSION} failed (exit {done.returncode}):\n{tail}", pytrace=False)
    return npm


def _run(argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=EXTENSION, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(argv)}` in {EXTENSION} did not finish within {timeout:.0f} s", pytrace=False)


def test_the_grammar_passes_its_tests(npm: str) -> None:
    done = _run([npm, "run", "test:grammar"])
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("keywords.sg", "strings.sg"):
        assert f"{name} run successfuly" in done.stdout


def test_the_grammar_tests_can_fail(npm: str, tmp_path: Path) -> None:
    wrong = EXTENSION / "tests" / "grammar" / "keywords.sg"
    text = wrong.read_text(encoding="utf-8").replace("variable.other.sage", "keyword.control.sage", 1)
    probe = tmp_path / "wrong.sg"
    probe.write_text(text, encoding="utf-8")
    done = _run([str(EXTENSION / "node_modules" / ".bin" / "vscode-tmgrammar-test"), str(probe)])
    assert done.returncode != 0 and "missing required scopes: keyword.control.sage" in done.stdout


def test_the_typescript_compiles_and_npm_run_package_builds_the_vsix(npm: str) -> None:
    """`npm run package` compiles the TypeScript first (`vscode:prepublish`), then packages."""
    vsix = EXTENSION / "sage.vsix"
    out = EXTENSION / "out" / "extension.js"
    vsix.unlink(missing_ok=True)
    out.unlink(missing_ok=True)
    done = _run([npm, "run", "package"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'args: ["lsp"]' in out.read_text(encoding="utf-8")
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    for needed in ("extension/out/extension.js", "extension/syntaxes/sage.tmLanguage.json",
                   "extension/language-configuration.json", "extension/snippets/sage.json",
                   "extension/node_modules/vscode-languageclient/package.json"):
        assert needed in names
    assert not any(n.startswith("extension/src/") or n.startswith("extension/tests/") for n in names)
    assert manifest["contributes"]["languages"][0]["extensions"] == [".sg"]
    assert manifest["contributes"]["configuration"]["properties"]["sage.path"]["default"] == "sage"


def test_every_reserved_word_is_highlighted_as_one() -> None:
    """The grammar's reserved words (IDENT's exclusions in grammar/sage.lark) each match a keyword, type,
    constant or `self` rule of the TextMate grammar, and no identifier does."""
    lark = LARK_GRAMMAR.read_text(encoding="utf-8")
    reserved = re.search(r"IDENT: /\(\?!\(\?:([^)]*)\)", lark).group(1).split("|")
    rules = json.loads(GRAMMAR.read_text(encoding="utf-8"))["repository"]["expression"]["patterns"]
    word_rules = [re.compile(r["match"]) for r in rules
                  if "match" in r and r.get("name", "").split(".")[0] in ("keyword", "support", "constant", "variable")
                  and r["name"] != "variable.other.sage"]
    assert len(reserved) >= 60
    for word in reserved:
        assert any(rule.fullmatch(word) for rule in word_rules), f"`{word}` is not highlighted as a keyword"
    for name in ("message", "start", "mock", "timeout", "strategy", "delay", "handler", "test", "call"):
        assert not any(rule.fullmatch(name) for rule in word_rules), f"`{name}` is highlighted everywhere"


def test_the_language_configuration_and_snippets() -> None:
    config = json.loads((EXTENSION / "language-configuration.json").read_text(encoding="utf-8"))
    assert config["comments"] == {"lineComment": "//", "blockComment": ["/*", "*/"]}
    assert ["{", "}"] in config["brackets"]
    assert re.match(config["indentationRules"]["increaseIndentPattern"], "fn f() -> Int {")
    snippets = json.loads((EXTENSION / "snippets" / "sage.json").read_text(encoding="utf-8"))
    assert {s["prefix"] for s in snippets.values()} == {"agent", "tool", "test", "fn"}
