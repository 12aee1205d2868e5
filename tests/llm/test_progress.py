"""Progress on long waits (issue 16): a status line on stderr while a model answers or MCP servers connect,
and a line per retry, only when stderr is a terminal. Each `sage` runs in a subprocess whose stderr is a
pty (stdout a pipe, as when output is redirected but the terminal is still watched); the same runs with
stderr piped must print exactly what they printed before progress existed."""
from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, hang, reply, status

from sagepy import progress

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "mcp" / "servers" / "suite.py"

ONE_QUESTION = """agent Main {
    on start {
        print(try divine("ping"));
    }
}
run Main;
"""

THREE_AGENTS = """agent Asker {
    on start {
        yield(try divine("ping"));
    }
}
agent Main {
    on start {
        let a = summon Asker {};
        let b = summon Asker {};
        let c = summon Asker {};
        print(try await a);
        print(try await b);
        print(try await c);
    }
}
run Main;
"""

SUITE_PROGRAM = """tool Suite { fn echo(text: String) -> String }
agent Main {
    use Suite
    on start {
        print(try Suite.echo("ready"));
    }
}
run Main;
"""

# the suite server, started a second late: slow enough to be shown on any machine
SLOW_SUITE = f"""[tools.Suite]
command = "{sys.executable}"
args = ["-c", "import runpy, sys, time; time.sleep(1); sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')", "{SUITE}"]
"""

SGR_COLOUR = b"\x1b[36m"   # the spinner's cyan


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


def environment(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))
            and k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**base, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", "COLUMNS": "100", **extra}


def sage_on_terminal(args: list[str], cwd: Path, env: dict[str, str], interrupt_on: bytes | None = None,
                     stdout_too: bool = False) -> tuple[int, str, bytes]:
    """Runs `python -m sagepy ARGS` with stderr on a pty: (exit code, stdout, what the terminal received).
    With `interrupt_on`, a SIGINT is sent once the terminal has received those bytes; with `stdout_too`,
    stdout is the same terminal (and the returned stdout is empty)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=follower if stdout_too else subprocess.PIPE,
                                stderr=follower)
    finally:
        os.close(follower)
    received = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:   # the pty closes when the last writer exits
                    break
                if not chunk:
                    break
                received += chunk
                if interrupt_on is not None and interrupt_on in received:
                    proc.send_signal(signal.SIGINT)
                    interrupt_on = None
            elif proc.poll() is not None:
                break
        stdout = proc.stdout.read().decode() if proc.stdout is not None else ""
        return proc.wait(30), stdout, bytes(received)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        os.close(leader)


def sage_piped(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def project(tmp_path: Path, program: str, tools: str = "") -> Path:
    (tmp_path / "grove.toml").write_text(f'[project]\nentry = "main.sg"\n{tools}', encoding="utf-8")
    (tmp_path / "main.sg").write_text(program, encoding="utf-8")
    return tmp_path


# ---------------------------------------------------------------- the model

def test_a_slow_answer_shows_the_wait_with_elapsed_seconds_and_then_erases_it(tmp_path, server):
    server.push(hang(2.5))
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, ONE_QUESTION),
                                              environment(SAGE_LLM_URL=server.url))
    assert (code, stdout) == (0, "late\n"), terminal
    assert b"waiting for model gpt-4o-mini\xe2\x80\xa6 1 s" in terminal
    assert b"waiting for model gpt-4o-mini\xe2\x80\xa6 2 s" in terminal
    assert SGR_COLOUR in terminal
    assert terminal.endswith(b"\r\x1b[K"), terminal[-200:]   # the line is gone when the answer came


TICKER_AND_ASKER = """agent Ticker {
    on start {
        sleep_ms(2500);   // the line is shown by then, even on a loaded machine
        print("tick");
        yield(0);
    }
}
agent Main {
    on start {
        print("asking");
        let t = summon Ticker {};
        print(try divine("ping"));
        try await t;
    }
}
run Main;
"""


def test_program_output_on_the_same_terminal_lands_on_a_clean_line(tmp_path, server):
    server.push(hang(5))
    code, _, terminal = sage_on_terminal(["run", "."], project(tmp_path, TICKER_AND_ASKER),
                                         environment(SAGE_LLM_URL=server.url), stdout_too=True)
    assert code == 0, terminal
    assert terminal.startswith(b"asking\r\n"), terminal
    before, after = terminal.split(b"tick\r\n")   # printed while the line was shown: erased first, redrawn after
    assert before.endswith(b"\r\x1b[K") and b"waiting for model gpt-4o-mini" in before, before
    assert b"waiting for model gpt-4o-mini" in after and after.endswith(b"\r\x1b[Klate\r\n"), after


def test_a_quick_answer_draws_nothing(tmp_path, server):
    server.push(reply("pong"))
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, ONE_QUESTION),
                                              environment(SAGE_LLM_URL=server.url))
    assert (code, stdout, terminal) == (0, "pong\n", b"")


def test_each_retry_gets_a_line(tmp_path, server):
    server.push(status(429, "slow down", {"Retry-After": "1"}), status(503, "busy"), reply("pong"))
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, ONE_QUESTION),
                                              environment(SAGE_LLM_URL=server.url))
    assert (code, stdout) == (0, "pong\n"), terminal
    text = terminal.decode().replace("\r\n", "\n")   # the pty turns \n into \r\n
    assert "rate-limited, retrying in 1 s\n" in text
    assert "server error 503, retrying in 1 s\n" in text   # the backoff's second step
    assert text.index("rate-limited") < text.index("server error 503")


def test_agents_waiting_at_once_share_one_line(tmp_path, server):
    server.push(hang(2), hang(2), hang(2))
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, THREE_AGENTS),
                                              environment(SAGE_LLM_URL=server.url))
    assert (code, stdout) == (0, "late\nlate\nlate\n"), terminal
    assert b"(3 agents)" in terminal


def test_ctrl_c_during_a_wait_leaves_a_clean_line(tmp_path, server):
    server.push(hang(30))
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, ONE_QUESTION),
                                              environment(SAGE_LLM_URL=server.url), interrupt_on=b" 1 s")
    assert code == 130, terminal
    last_frame = terminal.rindex(b"waiting for model")
    assert b"\r\x1b[K" in terminal[last_frame:], terminal[last_frame:]


@pytest.mark.parametrize("option, variables", [([], {"NO_COLOR": "1"}), (["--color", "never"], {}),
                                               (["--color", "never"], {"FORCE_COLOR": "1"})])
def test_no_color_keeps_the_line_and_drops_the_colour(tmp_path, server, option, variables):
    server.push(hang(1.5))
    code, stdout, terminal = sage_on_terminal(["run", ".", *option], project(tmp_path, ONE_QUESTION),
                                              environment(SAGE_LLM_URL=server.url, **variables))
    assert (code, stdout) == (0, "late\n"), terminal
    assert b"waiting for model gpt-4o-mini" in terminal
    assert SGR_COLOUR not in terminal


def test_piped_output_is_what_it_always_was(tmp_path, server):
    server.push(status(429, "slow down", {"Retry-After": "1"}), hang(1.5))
    done = sage_piped(["run", "."], project(tmp_path, ONE_QUESTION), environment(SAGE_LLM_URL=server.url))
    assert (done.returncode, done.stdout, done.stderr) == (0, "late\n", "")


def test_sage_test_shows_the_model_wait_too(tmp_path, server):
    (tmp_path / "grove.toml").write_text('[project]\nentry = "main.sg"\n', encoding="utf-8")
    (tmp_path / "asks_test.sg").write_text('test "asks" {\n    assert_eq(try divine("ping"), "late");\n}\n',
                                           encoding="utf-8")
    server.push(hang(1.5))
    code, stdout, terminal = sage_on_terminal(["test", "--real-llm", "."], tmp_path, environment(SAGE_LLM_URL=server.url))
    assert code == 0, (stdout, terminal)
    assert b"waiting for model gpt-4o-mini" in terminal


# ---------------------------------------------------------------- MCP servers

def test_a_slow_starting_server_shows_connecting(tmp_path):
    code, stdout, terminal = sage_on_terminal(["run", "."], project(tmp_path, SUITE_PROGRAM, SLOW_SUITE),
                                              environment())
    assert (code, stdout) == (0, "ready\n"), terminal
    assert "connecting to Suite…".encode() in terminal


def test_check_verify_tools_shows_connecting_and_pipes_as_before(tmp_path):
    root = project(tmp_path, SUITE_PROGRAM, SLOW_SUITE)
    code, stdout, terminal = sage_on_terminal(["check", "--verify-tools", "."], root, environment())
    piped = sage_piped(["check", "--verify-tools", "."], root, environment())
    assert code == piped.returncode == 0, (terminal, piped.stderr)
    assert "connecting to Suite…".encode() in terminal
    assert "connecting" not in piped.stderr
    assert stdout == piped.stdout


# ---------------------------------------------------------------- the line's text

def test_status_text_waits_half_a_second_and_groups_equal_labels(monkeypatch):
    monkeypatch.setattr(progress, "_waits", {1: ("waiting for model m", 10.0, True),
                                             2: ("waiting for model m", 10.2, True),
                                             3: ("connecting to Github", 11.0, False),
                                             4: ("connecting to Slack", 11.8, False)})
    assert progress.status_text(10.3) is None
    assert progress.status_text(10.6) == "waiting for model m…"
    assert progress.status_text(12.1) == "waiting for model m… 2 s (2 agents) · connecting to Github…"
