"""Generate round trips against the third-party servers (SPEC §10.4): `sage tools generate` → `sage check`
passes → a Sage program calls each server through the generated declaration with `sage run`; and
`sage check --verify-tools` agrees with what was generated. Python servers speak 2026-07-28, the Node
servers 2025-11-25."""
from __future__ import annotations

import json
import subprocess

import pytest

from tools_cli_helpers import in_directory, node_tool, python_tool, run_sage, sage_process, toml_string, write

# The Node servers are installed on first use (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("node_servers")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("third_party")
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit",
                    "-q", "-m", "first"], check=True)
    (repo / "a.txt").write_text("two\n")
    write(root / "files" / "hello.txt", "hello from disk\n")
    write(root / "grove.toml", f'''
        [tools.Time]
        command = {toml_string(python_tool("mcp-server-time"))}
        args = ["--local-timezone", "UTC"]

        [tools.Git]
        command = {toml_string(python_tool("mcp-server-git"))}
        args = ["--repository", "repo"]

        [tools.Everything]
        command = {toml_string(node_tool("mcp-server-everything"))}
        args = ["stdio"]

        [tools.Files]
        command = {toml_string(node_tool("mcp-server-filesystem"))}
        args = ["files"]
    ''')
    return root


@pytest.fixture(scope="module")
def generated(project):
    """A generated module per server, one `sage tools generate NAME -o FILE` each (in this process: the
    subprocess round trip is the check and the run below)."""
    from sagepy.cli.main import main
    sources = {}
    with in_directory(project):
        for name in ("Time", "Git", "Everything", "Files"):
            assert main(["tools", "generate", name, "-o", f"src/{name.lower()}.sg"]) == 0
            sources[name] = (project / "src" / f"{name.lower()}.sg").read_text()
    return sources


def test_generated_declarations(generated):
    time = generated["Time"]
    assert "from MCP server mcp-time " in time and "(protocol 2026-07-28)" in time
    assert "pub record GetCurrentTimeResult { timezone: String, datetime: String, day_of_week: String, " \
           "is_dst: Bool }" in time
    assert "    // [read_only]\n    /// Get current time in a specific timezone\n" \
           "    fn get_current_time(timezone: String) -> GetCurrentTimeResult\n" in time
    git = generated["Git"]
    assert "    fn git_log(repo_path: String, max_count: Option<Int>, " in git
    assert "    // [idempotent]\n    /// Unstages all staged changes\n    fn git_reset(repo_path: String) -> String" in git
    everything = generated["Everything"]
    assert "(protocol 2025-11-25)" in everything
    assert '    #[mcp_name = "get-sum"]\n    fn get_sum(a: Float, b: Float) -> String\n' in everything
    assert "    // messageType: one of \"error\", \"success\", \"debug\"\n" in everything  # `error` is a keyword
    assert "pub record GetStructuredContentResult { temperature: Float, conditions: String, humidity: Float }" \
        in everything
    files = generated["Files"]
    assert "pub record EditFileEditsItem { oldText: String, newText: String }" in files
    assert "pub enum ListDirectoryWithSizesSortBy { name, size }" in files
    assert "    fn read_text_file(path: String, tail: Option<Float>, head: Option<Float>) -> ReadTextFileResult\n" \
        in files


def test_check_and_run_through_generated_declarations(project, generated):
    write(project / "src" / "main.sg", '''
        mod time;
        mod git;
        mod everything;
        mod files;
        use time::Time;
        use git::Git;
        use everything::Everything;
        use files::Files;

        agent Main {
            use Time, Git, Everything, Files
            on start {
                let now = try Time.get_current_time("Europe/Paris");
                print(now.timezone);
                let status = try Git.git_diff_unstaged("repo", None);
                print(str_contains(status, "+two"));
                print(try Everything.get_sum(2.0, 3.5));
                let weather = try Everything.get_structured_content("Chicago");
                print(str_len(weather.conditions) > 0);
                let file = try Files.read_text_file("hello.txt", None, None);
                print(trim(file.content));
                yield(0);
            }
        }
        run Main;
    ''')
    r = sage_process(project, "check")
    assert (r.returncode, r.stdout, r.stderr) == (0, "check passed: 5 files, 0 warnings\n", "")
    r = sage_process(project, "run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Europe/Paris", "true", "The sum of 2 and 3.5 is 5.5.", "true",
                                     "hello from disk"]


def test_verify_tools_agrees_with_generated_declarations(project, generated, capsys, monkeypatch):
    code, out, _err = run_sage(capsys, monkeypatch, project, "check", "--verify-tools", "--format", "json",
                               "src/main.sg")
    assert code == 0
    document = json.loads(out)
    findings = document["diagnostics"]
    assert (document["ok"], document["files"], document["errors"], document["warnings"]) == (True, 5, 0, 1)
    # read_media_file returns image/audio/resource objects that no Sage type holds; its generated TODO comment
    # says so, and verification warns about that one function only.
    assert [(d["code"], d["file"]) for d in findings] == [("W083", "src/files.sg")]
    assert "Files.read_media_file" in findings[0]["message"]
