"""End to end: Sage programs run by `sage run` and `sage test` (as subprocesses, like a user runs them)
against real MCP servers over stdio: mcp-server-time (Python, 2026-07-28), the Node reference servers
server-everything and server-filesystem (2025-11-25), and the project's suite server (tests/mcp/servers).
The test extra installs the Python servers and the Node ones are installed on first use (tests/conftest.py);
a test whose server is missing fails.

Each test writes a project (grove.toml and src/) into its own temporary directory. Every stdio server runs
with the project root as its working directory, which is how the leftover checks find a server process
that outlived `sage`: no process may have its working directory inside the project once `sage` has ended.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"
NODE_PACKAGES = REPO / "tests" / "mcp" / "node" / "node_modules" / "@modelcontextprotocol"

# The Node servers are installed on first use (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("node_servers")


def node_server(package: str, *args: str) -> dict:
    entry = NODE_PACKAGES / package / "dist" / "index.js"
    if not entry.is_file():
        pytest.fail(f"{package} is not installed (the node_servers fixture installs tests/mcp/node)")
    return {"command": "node", "args": [str(entry), *args]}


def python_server(command: str, *args: str) -> dict:
    path = shutil.which(command)
    if path is None:
        pytest.fail(f"{command} is not installed (it comes with the test extra: pip install -e '.[test]')")
    return {"command": path, "args": list(args)}


def suite_server() -> dict:
    return {"command": sys.executable, "args": [str(SUITE)]}


def make_project(root: Path, tools: dict[str, dict], main: str, tests: str | None = None) -> Path:
    """A project in `root`: grove.toml with one `[tools.<Name>]` table per entry, src/main.sg and, when given,
    src/main_test.sg. Values are written as JSON, which is valid TOML for strings, lists, ints and bools."""
    lines = ['[project]', f'name = "{root.name}"', 'entry = "src/main.sg"', '', '[test]', 'timeout_ms = 20000']
    for name, table in tools.items():
        lines += ["", f"[tools.{name}]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "src" / "main.sg").write_text(main, encoding="utf-8")
    if tests is not None:
        (root / "src" / "main_test.sg").write_text(tests, encoding="utf-8")
    return root


def sage_env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env["SAGE_CACHE_DIR"] = str(project.parent / "sage-cache")
    return env


def sage(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=project, env=sage_env(project),
                          capture_output=True, text=True, timeout=180)


def run_ok(project: Path) -> list[str]:
    result = sage(project, "run", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def processes_in(project: Path) -> list[str]:
    """`pid command` of every live process whose working directory is inside the project."""
    root = str(project.resolve())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if state != "Z" and (cwd == root or cwd.startswith(root + os.sep)):
            found.append(f"{entry} {command}")
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_nothing_left(project: Path, pids: list[int] = ()) -> None:
    # The last server may still be on its way out when `sage` has just been reaped by a signal path; a
    # short grace keeps the check exact without racing the kernel.
    deadline = time.monotonic() + 2
    while (processes_in(project) or any(alive(p) for p in pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_in(project) == []
    assert [p for p in pids if alive(p)] == []


# ---------------------------------------------------------------- typed calls

TIME_MAIN = """\
record TimeResult {
    timezone: String,
    datetime: String,
    day_of_week: String,
    is_dst: Bool,
}

record Conversion {
    source: TimeResult,
    target: TimeResult,
    time_difference: String,
}

tool Time {
    fn get_current_time(timezone: String) -> TimeResult
    fn convert_time(source_timezone: String, time: String, target_timezone: String) -> Conversion
}

agent Main {
    use Time

    on start {
        let now = try Time.get_current_time("Asia/Tokyo");
        print(now.timezone);
        print(ends_with(now.datetime, "+09:00"));
        print(list_contains(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
                            now.day_of_week));
        print(now.is_dst);
        let c = try Time.convert_time("UTC", "12:00", "Asia/Tokyo");
        print("{c.source.timezone} -> {c.target.timezone}: {c.time_difference}");
        print(ends_with(c.target.datetime, "T21:00:00+09:00"));
        let bad = Time.get_current_time("Mars/Olympus") catch(e) {
            print(e.kind);
            print(starts_with("{e}", "MCP tool error: "));
            now
        };
        yield(0);
    }
}

run Main;
"""


def test_typed_calls_return_records_from_structured_content(tmp_path):
    project = make_project(tmp_path / "time", {"Time": python_server("mcp-server-time", "--local-timezone", "UTC")},
                           TIME_MAIN)
    assert run_ok(project) == ["Asia/Tokyo", "true", "true", "false", "UTC -> Asia/Tokyo: +9.0h", "true", "Mcp",
                               "true"]


EVERYTHING_MAIN = """\
record Weather {
    temperature: Int,
    conditions: String,
    humidity: Int,
}

tool Everything {
    #[mcp_name = "get-sum"]
    fn sum(a: Int, b: Int) -> String

    #[mcp_name("get-structured-content")]
    fn weather(location: String) -> Weather

    fn echo(message: String) -> String
}

agent Main {
    use Everything

    on start {
        print(try Everything.sum(2, 40));
        let w = try Everything.weather("Chicago");
        print("{w.conditions}, {w.temperature}, {w.humidity}");
        print(try Everything.echo("hi"));
        yield(0);
    }
}

run Main;
"""


def test_mcp_name_binds_hyphenated_remote_names(tmp_path):
    project = make_project(tmp_path / "everything", {"Everything": node_server("server-everything", "stdio")},
                           EVERYTHING_MAIN)
    assert run_ok(project) == ["The sum of 2 and 40 is 42.", "Light rain / drizzle, 36, 82", "Echo: hi"]


FILES_MAIN = """\
record FileText {
    content: String,
}

tool Files {
    #[mcp_name = "read_text_file"]
    fn read(path: String) -> FileText
}

agent Main {
    use Files

    on start {
        let inside = try Files.read("hello.txt");
        print(trim(inside.content));
        let outside = Files.read("/etc/passwd") catch(e) {
            print(e.kind);
            print(e.message);
            print(starts_with("{e}", "MCP tool error: "));
            FileText { content: "" }
        };
        print(str_len(outside.content));
        yield(0);
    }
}

run Main;
"""


def test_denied_path_is_a_catchable_mcp_error(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from disk\n")
    project = make_project(tmp_path / "reader", {"Files": node_server("server-filesystem", str(files))}, FILES_MAIN)
    out = run_ok(project)
    assert out[:2] == ["hello from disk", "Mcp"]
    assert out[2].startswith("Access denied - path outside allowed directories"), out
    assert out[3:] == ["true", "0"]


# ---------------------------------------------------------------- dynamic MCP

DYNAMIC_MAIN = """\
const CONFIG: String = '__CONFIG__';

agent Main {
    on start {
        let h = try mcp_connect(CONFIG);
        print(h);
        print(is_some(mcp_connection(h)));
        let info = try mcp_server_info(h);
        print("{info.name} {info.version}");
        let tools = try mcp_tools(h);
        print(len(tools));
        let echo = unwrap(find(tools, |t: McpTool| t.name == "echo"));
        print("{echo.name} {echo.safety} {echo.description}");
        print(str_contains(echo.input_schema, "\\"text\\""));
        print(try mcp_call(h, "add", '{"a": 2, "b": 40}'));
        print(try mcp_call(h, "echo", '{"text": "dynamic"}'));
        let refused = mcp_call(h, "refuse", '{"reason": "no thanks"}') catch(e) { e.message };
        print(refused);
        let invalid = mcp_call(h, "add", '[1, 2]') catch(e) { e.message };
        print(starts_with(invalid, "invalid arguments JSON: "));
        try mcp_disconnect(h);
        print(is_none(mcp_connection(h)));
        let gone = mcp_call(h, "echo", '{"text": "x"}') catch(e) { e.message };
        print(gone);
        yield(0);
    }
}

run Main;
"""


def test_dynamic_connect_list_call_disconnect(tmp_path):
    config = json.dumps(suite_server())
    project = make_project(tmp_path / "dynamic", {}, DYNAMIC_MAIN.replace("__CONFIG__", config))
    assert run_ok(project) == [
        "mcp:1", "true", "sage-suite 1.2.3", "23", "echo read_only Echo the text.", "true", "42", "dynamic",
        "mcp_call 'refuse' failed: MCP tool error: Error executing tool refuse: no thanks", "true", "true",
        "unknown MCP handle: mcp:1"]
    log = project / ".sage" / "logs" / "mcp-1.log"
    assert log.is_file()  # a dynamic connection without a name logs under its handle


# ---------------------------------------------------------------- elicitation under `sage test`

ELICIT_MAIN = """\
record Answers {
    name: String,
    check: Bool,
    integer: Int,
}

tool Everything {
    #[mcp_name = "trigger-elicitation-request"]
    fn ask() -> String
}

agent Asker {
    use Everything

    on start {
        yield(try Everything.ask());
    }
}

agent Main {
    on start {
        yield(0);
    }
}

run Main;
"""

ELICIT_TESTS = """\
test "accepted answers reach the server" {
    mock elicit -> Answers { name: "Ada Lovelace", check: true, integer: 7 };
    let text = try Everything.ask();
    assert_contains(text, "User provided the requested information");
    assert_contains(text, "- Name: Ada Lovelace");
    assert_contains(text, "- Agreed to terms: true");
    assert_contains(text, "- Favorite Integer: 7");
}

test "a JSON string answers for an agent the test summons" {
    mock elicit -> '{"name": "Grace"}';
    let text = try await summon Asker {};
    assert_contains(text, "- Name: Grace");
}

test "cancel is sent as cancel" {
    mock elicit -> cancel;
    let text = try Everything.ask();
    assert_contains(text, "User cancelled");
}

test "an empty queue declines" {
    let text = try Everything.ask();
    assert_contains(text, "User declined");
}
"""


def test_mock_elicit_answers_a_real_server_in_sage_test(tmp_path):
    project = make_project(tmp_path / "elicit", {"Everything": node_server("server-everything", "stdio")},
                           ELICIT_MAIN, ELICIT_TESTS)
    result = sage(project, "test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test result: ok. 4 passed, 0 failed" in result.stdout
    assert_nothing_left(project)


# ---------------------------------------------------------------- no server outlives `sage run`

LIFECYCLE_MAIN = """\
record TimeResult {
    timezone: String,
    datetime: String,
    day_of_week: String,
    is_dst: Bool,
}

tool Suite {
    fn whoami() -> Int
    fn spawn_grandchild() -> Int
}

tool Everything {
    fn echo(message: String) -> String
}

tool Time {
    fn get_current_time(timezone: String) -> TimeResult
}

tool Files {
    #[mcp_name = "list_allowed_directories"]
    fn allowed() -> String
}

agent Main {
    use Suite, Everything, Time, Files

    on start {
        print(try Suite.whoami());
        print(try Suite.spawn_grandchild());
        print(try Everything.echo("x"));
        print((try Time.get_current_time("UTC")).timezone);
        print(str_contains(try Files.allowed(), "Allowed directories"));
        let h = try mcp_connect('__DYNAMIC__');
        print(try mcp_call(h, "echo", '{"message": "dynamic"}'));
        print("ready");
        __ENDING__
    }
}

run Main;
"""


def lifecycle_project(root: Path, ending: str) -> Path:
    everything = node_server("server-everything", "stdio")
    tools = {
        "Suite": suite_server(),
        "Everything": everything,
        "Time": python_server("mcp-server-time", "--local-timezone", "UTC"),
        "Files": node_server("server-filesystem", "."),
    }
    main = LIFECYCLE_MAIN.replace("__DYNAMIC__", json.dumps(everything)).replace("__ENDING__", ending)
    return make_project(root, tools, main)


def test_no_server_process_is_left_after_sage_run(tmp_path):
    project = lifecycle_project(tmp_path / "ends", "yield(0);")
    out = run_ok(project)
    assert out[2:] == ["Echo: x", "UTC", "true", "Echo: dynamic", "ready"]
    assert_nothing_left(project, [int(out[0]), int(out[1])])  # the suite server and its grandchild


def test_no_server_process_is_left_after_an_unhandled_error(tmp_path):
    project = lifecycle_project(tmp_path / "fails", 'fail "stopping with servers open";')
    result = sage(project, "run", ".")
    assert result.returncode == 1
    assert "stopping with servers open" in result.stderr
    out = result.stdout.splitlines()
    assert out[-1] == "ready"
    assert_nothing_left(project, [int(out[0]), int(out[1])])


def test_no_server_process_is_left_after_sigterm(tmp_path):
    project = lifecycle_project(tmp_path / "terminated", "sleep_ms(120000);\n        yield(0);")
    process = subprocess.Popen([sys.executable, "-m", "sagepy", "run", "."], cwd=project, env=sage_env(project),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out = []
        while not out or out[-1] != "ready":
            line = process.stdout.readline()  # type: ignore[union-attr]
            assert line, f"sage ended early: {out} {process.stderr.read()}"  # type: ignore[union-attr]
            out.append(line.rstrip("\n"))
        assert processes_in(project) != []  # the servers are running now
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 143
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    assert_nothing_left(project, [int(out[0]), int(out[1])])


OPTIONAL_ARGUMENT_MAIN = """\
tool Suite {
    fn slow(seconds: Float, tag: Option<String>) -> String
}

agent Main {
    use Suite

    on start {
        print(try Suite.slow(0.0, None));
        print(try Suite.slow(0.0, Some("tagged")));
        yield(0);
    }
}

run Main;
"""


def test_a_none_argument_is_left_out_so_the_server_default_applies(tmp_path):
    # `tag: str = "slow"` on the server refuses null; an omitted tag takes the default (SPEC §8.4).
    project = make_project(tmp_path / "optional", {"Suite": suite_server()}, OPTIONAL_ARGUMENT_MAIN)
    assert run_ok(project) == ["slept 0.0", "slept 0.0"]
