"""Resources, prompts and progress as a user meets them (SPEC §8.11): Sage programs run by `sage run` and
`sage test` as subprocesses, `sage tools read` and `sage tools prompt`, against server-everything (Node,
2025-11-25) and the project's library server (Python, 2026-07-28) over real stdio."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "tests" / "mcp" / "servers" / "library.py"
EVERYTHING = REPO / "tests" / "mcp" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" \
    / "dist" / "index.js"

pytestmark = pytest.mark.usefixtures("node_servers")

GROVE = f"""\
[project]
name = "reader"

[tools.Everything]
command = "node"
args = [{json.dumps(str(EVERYTHING))}, "stdio"]

[tools.Library]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(LIBRARY))}]
"""

READER = """\
tool Library {
    fn count_rows(rows: Int) -> String
}

agent Main {
    use Library;
    on start {
        let resources = try mcp_resources("Everything");
        match find(resources, |r: McpResource| r.mime_type == "text/markdown") {
            Some(r) => {
                let text = try mcp_read_resource("Everything", r.uri);
                print(r.uri ++ ": " ++ str(str_len(text) > 100));
            }
            None => print("no markdown resource"),
        }
        let prompts = try mcp_prompts("everything");
        for p in prompts {
            if p.name == "args-prompt" { print(p.name ++ " " ++ str(p.arguments) ++ " " ++ str(p.required)); }
        }
        print(try mcp_get_prompt("Everything", "args-prompt", '{"city": "Paris"}'));
        let templates = try mcp_resource_templates("Library");
        for t in templates { print(str(len(templates)) ++ " " ++ t.uri_template); }
        print(mcp_read_resource("Library", "library://images/pixel") catch(e) { e.message });
        let missing = mcp_prompts("Nope") catch(e) { print(e.message); [] };
        print(str(len(missing)));
        print(try Library.count_rows(2));
        yield(0);
    }
}

run Main;
"""

MOCKED = """\
test "resources and prompts are mocked" {
    mock tool mcp.resources -> '[{"uri": "a://1", "name": "one", "description": "", "mime_type": "text/plain"}]';
    mock tool mcp.resource_templates -> fail("no templates");
    mock tool mcp.read_resource -> "the text";
    mock tool mcp.read_resource -> fail("gone");
    mock tool mcp.prompts -> [McpPrompt { name: "p", description: "d", arguments: ["x"], required: [] }];
    mock tool mcp.get_prompt -> fail("bad prompt");
    mock tool mcp.server_info -> McpServerInfo { name: "srv", version: "2.1" };
    mock tool mcp.server_info -> '{"name": "text", "version": "3"}';
    assert_eq(try mcp_server_info("mcp:77"), McpServerInfo { name: "srv", version: "2.1" });
    assert_eq((try mcp_server_info("mcp:77")).name, "text");
    let listed = try mcp_resources("mcp:77");
    assert_eq(map(listed, |r: McpResource| r.uri), ["a://1"]);
    let none = mcp_resource_templates("AnyName") catch(e) {
        assert_eq(e.message, "mcp_resource_templates failed: MCP tool error: no templates");
        []
    };
    assert_eq(len(none), 0);
    assert_eq(try mcp_read_resource("x", "a://1"), "the text");
    assert_eq(mcp_read_resource("x", "a://2") catch(e) { e.message },
              "mcp_read_resource 'a://2' failed: MCP tool error: gone");
    let prompts = try mcp_prompts("x");
    assert_eq(map(prompts, |p: McpPrompt| p.arguments), [["x"]]);
    assert_eq(mcp_get_prompt("x", "p", "not json") catch(e) { e.message },
              "mcp_get_prompt 'p' failed: MCP tool error: bad prompt");
}
"""


def make_project(root: Path, main: str, test: str | None = None) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "grove.toml").write_text(GROVE, encoding="utf-8")
    (root / "src" / "main.sg").write_text(main, encoding="utf-8")
    if test is not None:
        (root / "src" / "main_test.sg").write_text(test, encoding="utf-8")
    return root


def sage(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env["SAGE_CACHE_DIR"] = str(project.parent / "sage-cache")
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("reader"), READER, MOCKED)
    with open(root / "grove.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[persistence]\n")   # runs are durable: the builtins are journaled
    return root


def test_a_program_reads_resources_and_renders_prompts(project):
    result = sage(project, "run", ".", "--trace-file", "trace.jsonl")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "demo://resource/static/document/architecture.md: true",
        'args-prompt ["city", "state"] ["city"]',
        "What's weather in Paris?",
        "1 library://notes/{topic}",
        "mcp_read_resource 'library://images/pixel' failed: binary content (image/png)",
        "unknown MCP server or handle: Nope",
        "0",
        "2 rows",
    ]
    assert "rows parsed" not in result.stderr   # stderr is no terminal: no status line
    events = [json.loads(line) for line in (project / "trace.jsonl").read_text().splitlines()]
    progress = [e for e in events if e["kind"] == "mcp.progress"]
    assert [(e["server"], e["tool"], e["progress"], e["total"], e["message"]) for e in progress] == \
        [("Library", "Library.count_rows", 1, 2, "1 rows parsed"), ("Library", "Library.count_rows", 2, 2, "2 rows parsed")]
    shown = sage(project, "runs", "show", "last")
    assert shown.returncode == 0, shown.stderr
    steps = [line.split()[1:5] for line in shown.stdout.splitlines() if " mcp " in line]
    assert steps == [["mcp", "mcp_resources", "read_only", "done"], ["mcp", "mcp_read_resource", "read_only", "done"],
                     ["mcp", "mcp_prompts", "read_only", "done"], ["mcp", "mcp_get_prompt", "read_only", "done"],
                     ["mcp", "mcp_resource_templates", "read_only", "done"],
                     ["mcp", "mcp_read_resource", "read_only", "failed"], ["mcp", "mcp_prompts", "read_only", "failed"]]


def test_mocks_answer_every_builtin(project):
    result = sage(project, "test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_sage_tools_read_and_prompt(project):
    read = sage(project, "tools", "read", "Library", "library://notes/readme")
    assert (read.returncode, read.stdout, read.stderr) == (0, "# Library\nA test server.\n", "")
    prompt = sage(project, "tools", "prompt", "Library", "review", "code=print(1)", "language=python")
    assert (prompt.returncode, prompt.stdout) == (0, "Review this python code:\nprint(1)\n\nI will review it.\n")
    missing = sage(project, "tools", "read", "library", "library://nowhere")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: mcp_read_resource 'library://nowhere' failed: MCP protocol error: ")
    unknown = sage(project, "tools", "prompt", "Nope", "p")
    assert (unknown.returncode, unknown.stderr) == (1, "error: unknown MCP server or handle: Nope\n")
    bad = sage(project, "tools", "prompt", "Library", "review", "code")
    assert bad.returncode == 2 and "arguments are k=v, got 'code'" in bad.stderr


def test_progress_updates_the_status_line_on_a_terminal(tmp_path):
    project = make_project(tmp_path / "terminal", """\
tool Library {
    fn count_rows(rows: Int, pause: Float) -> String
}

agent Main {
    use Library;
    on start {
        print(try Library.count_rows(3, 0.4));
        yield(0);
    }
}

run Main;
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env["SAGE_CACHE_DIR"] = str(tmp_path / "sage-cache")
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "sagepy", "run", "."], cwd=project, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:   # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0 and out == b"3 rows\n"
    assert b"Library.count_rows: 2/3 2 rows parsed" in seen
