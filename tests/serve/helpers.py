"""Helpers of the `sage serve` tests (SPEC §21): a served project written into a temporary directory, the
`sage serve` command line with this worktree on PYTHONPATH, and an HTTP server process whose address is read
from its log line (the tests wait on that line, never on a fixed delay)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE = str(REPO / "tests" / "mcp" / "servers" / "suite.py")

MAIN = textwrap.dedent("""\
    record Ticket { title: String, priority: Int }

    /// Triage one ticket.
    #[mcp_tool = "triage"]
    agent Triage {
        /// The ticket's title.
        title: String,
        /// How urgent, 1 to 5.
        urgency: Option<Int>,
        on start {
            print("triaging {self.title}");
            print_err("careful with {self.title}");
            let p = match self.urgency { Some(u) => u, None => 3 };
            yield(Ticket { title: self.title, priority: p });
        }
    }

    /// Say it back.
    #[mcp_tool = "echo"]
    agent Echo {
        text: String,
        on start {
            yield(self.text);
        }
    }

    /// Sleep, then say how long.
    #[mcp_tool = "nap"]
    agent Nap {
        ms: Int,
        on start {
            sleep_ms(self.ms);
            yield(self.ms);
        }
    }

    /// Tick into a file until stopped.
    #[mcp_tool = "ticker"]
    agent Ticker {
        path: String,
        on start {
            loop {
                try append_file(self.path, "tick\\n");
                print("tick");
                sleep_ms(20);
            }
            yield(0);
        }
    }

    /// Always fails.
    #[mcp_tool = "boom"]
    agent Boom {
        on start {
            fail "it broke";
            yield(1);
        }
    }
    """)


def write_project(root: Path, main: str = MAIN, grove: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text('[project]\nname = "helpdesk"\nversion = "1.2.0"\nentry = "main.sg"\n' + grove)
    (root / "main.sg").write_text(main)
    return root


def environment(tmp: Path, **extra: str) -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_CACHE_DIR=str(tmp / "cache"), **extra)


def serve_command(project: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "sagepy", "serve", str(project), *args]


class HttpServer:
    """`sage serve --http 127.0.0.1:0` as a process; `url` once its log line says where it listens."""

    def __init__(self, project: Path, tmp: Path, *args: str, env: dict | None = None) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.proc = subprocess.Popen(serve_command(project, "--http", "127.0.0.1:0", *args),
                                     env=env or environment(tmp), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        line = self.wait_for(r"at (http://\S+/mcp)")
        self.url = re.search(r"at (http://\S+/mcp)", line).group(1)

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.lines.append("<exit>")
            self.changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 120) -> str:
        regex = re.compile(pattern)
        with self.changed:
            found = self.changed.wait_for(lambda: next((l for l in self.lines if regex.search(l) or l == "<exit>"),
                                                       None), timeout)
        if found is None or found == "<exit>":
            raise AssertionError(f"no log line matching {pattern!r}; log:\n" + "\n".join(self.lines))
        return found

    def log(self) -> str:
        with self.changed:
            return "\n".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)
