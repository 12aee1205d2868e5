"""What the console tests share: a project whose run needs a person (the counting MCP server of tests/durable
as the tool whose destructive call needs approval, and a question), `sage` as a subprocess, `sage worker` in
the background, and `sage ui` started on a free port and stopped with SIGTERM."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator
from contextlib import contextmanager

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DURABLE = REPO / "tests" / "durable"
CACHE = tempfile.mkdtemp(prefix="sagepy-console-ast-")
SHOTS_VAR = "SAGE_DOCS_SCREENSHOTS"   # set to a directory to keep the screenshots (docs/images)

# values a page must show as text: markup in output, in a tool result, in a question and in an answer
SCRIPT = "<script>console.log('injected-script');alert('script')</script>"
IMG = "\"><img src=https://example.invalid/x.png onerror=\"console.log('injected-img');alert('img')\">"

GROVE = """\
[project]
name = "{name}"
entry = "src/main.sg"

[persistence]
{backend}
[approvals]
calls = "all"
Counter = "destructive"

[tools.Counter]
command = {python}
args = [{server}]
env = {{ COUNTING_LEDGER = "$COUNTING_LEDGER" }}
"""

MAIN = """\
mod counter;
use counter::Counter;

agent Main {
    use Counter
    on start {
        print("before: %(script)s %(img)s");
        let echoed = try Counter.echo("%(script)s %(img)s");
        print_err("tool said {str_len(echoed)} characters");
        let receipt = try Counter.charge("acct", 5);
        print("charged, receipt {receipt}");
        let who = try ask("Who approved? %(script)s");
        print("approved by {who}");
    }
}

run Main;
"""

SLOW = """\
agent Main {
    on start {
        for i in range(0, 600) {
            print("tick {i}");
            sleep_ms(200);
        }
    }
}

run Main;
"""


def _sage_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("{", "\\{")


def make_project(root: Path, name: str = "console", postgres: bool = False, slow: bool = False) -> Path:
    """The project; `slow`: its program prints a line every 200 ms for two minutes instead."""
    (root / "src").mkdir(parents=True)
    backend = 'backend = "postgres"\n' if postgres else ""
    (root / "grove.toml").write_text(GROVE.format(name=name, backend=backend, python=json.dumps(sys.executable),
                                                  server=json.dumps(str(DURABLE / "counting_server.py"))),
                                     encoding="utf-8")
    main = SLOW if slow else MAIN % {"script": _sage_string(SCRIPT), "img": _sage_string(IMG)}
    (root / "src" / "main.sg").write_text(main, encoding="utf-8")
    shutil.copy(DURABLE / "programs" / "counter.sg", root / "src" / "counter.sg")
    return root


def env(root: Path, state_url: str | None = None, **extra: str) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    full.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_CACHE_DIR=CACHE, COUNTING_LEDGER=str(root / "ledger.jsonl"),
                **extra)
    if state_url is not None:
        full["SAGE_STATE_URL"] = state_url
    return full


def sage(root: Path, *args: str, state_url: str | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=env(root, state_url, **extra),
                          capture_output=True, text=True, timeout=120)


def charges(root: Path) -> list[dict]:
    ledger = root / "ledger.jsonl"
    return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ui:
    """A running `sage ui`: its URL with the token, the origin, the token and the process."""

    def __init__(self, process: subprocess.Popen, url: str) -> None:
        self.process = process
        self.url = url
        self.origin = url.split("/?", 1)[0]
        self.token = url.rsplit("token=", 1)[1]

    def stop(self) -> int:
        """SIGTERM, then the exit code (the console stops within 10 s)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("sage ui did not stop within 10 s of SIGTERM") from None


def start_ui(root: Path, state_url: str | None = None, *args: str, **extra: str) -> Ui:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "sagepy", "ui", "--no-open", "--port", str(port), *args],
                               cwd=root, env=env(root, state_url, **extra), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            if line.startswith("sage ui: "):
                return Ui(process, line.split(" ", 2)[2].strip())
            if line == "":
                break
        if process.poll() is not None:
            break
    process.kill()
    _, err = process.communicate()
    raise AssertionError(f"sage ui did not print its URL: {err}")


@contextmanager
def ui(root: Path, state_url: str | None = None, **extra: str) -> Iterator[Ui]:
    console = start_ui(root, state_url, **extra)
    try:
        yield console
    finally:
        console.stop()


@contextmanager
def worker(root: Path, state_url: str | None = None) -> Iterator[subprocess.Popen]:
    """`sage worker` polling every 100 ms (its lines in worker.log beside the project), stopped with SIGTERM at
    the end."""
    log = open(root.parent / "worker.log", "a", encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-m", "sagepy", "worker", "--poll-ms", "100"], cwd=root,
                               env=env(root, state_url), stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def screenshot(page, name: str, tmp: Path) -> Path:
    """A full-page PNG of `page` in `tmp`, copied to $SAGE_DOCS_SCREENSHOTS when that is set."""
    path = tmp / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get(SHOTS_VAR)
    if keep:
        shutil.copy(path, Path(keep) / path.name)
    return path
