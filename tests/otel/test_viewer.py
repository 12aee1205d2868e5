"""`sage trace view` (SPEC §18.2) on generated traces: the page's lanes, nesting, bars by kind, totals,
errors, that it loads nothing from anywhere, its messages; and, where a headless Chromium is installed,
the page rendered to a screenshot."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def sage(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def ev(t: int, kind: str, path: str | None, **fields: object) -> dict:
    agent = None if path is None else path.rsplit("/", 1)[-1]
    return {"t": t, "kind": kind, "agent": agent, "path": path, **fields}


def sample_trace() -> list[dict]:
    """Main summons two workers; Worker#1 summons a Leaf. Two model turns (tokens 10+5 and 7+3), four tool
    calls (two read_only, one idempotent, one destructive that fails), a nested span, a user trace event,
    a dropped message and a failing agent."""
    return [
        ev(1000, "run.start", None, entry="Main"),
        ev(1001, "agent.spawn", "Main/Worker#1", parent="Main#0"),
        ev(1002, "agent.spawn", "Main/Worker#2", parent="Main#0"),
        ev(1003, "llm.request", "Main", model="gpt-test", prompt_chars=12, typed=False),
        ev(1010, "agent.spawn", "Main/Worker#1/Leaf#1", parent="Worker#1"),
        ev(1020, "tool.call", "Main/Worker#1", tool="Fs", fn="read", safety="read_only"),
        ev(1021, "tool.call", "Main/Worker#1", tool="Tracker", fn="search", remote="search", safety="read_only"),
        ev(1040, "tool.result", "Main/Worker#1", tool="Fs", fn="read", duration_ms=20, ok=True, mocked=False),
        ev(1050, "tool.result", "Main/Worker#1", tool="Tracker", fn="search", duration_ms=29, ok=True, mocked=False),
        ev(1060, "llm.response", "Main", duration_ms=57, chars=40, attempts=1, mocked=False, prompt_tokens=10,
           completion_tokens=5),
        ev(1061, "span.start", "Main/Worker#2", name="outer"),
        ev(1062, "span.start", "Main/Worker#2", name="inner"),
        ev(1063, "user", "Main/Worker#2", message="halfway"),
        ev(1064, "tool.call", "Main/Worker#2", tool="Fs", fn="write", safety="idempotent"),
        ev(1070, "tool.result", "Main/Worker#2", tool="Fs", fn="write", duration_ms=6, ok=True, mocked=False),
        ev(1071, "span.end", "Main/Worker#2", name="inner", duration_ms=9),
        ev(1072, "tool.call", "Main/Worker#2", tool="Ledger", fn="charge", remote="charge", safety="destructive"),
        ev(1080, "tool.result", "Main/Worker#2", tool="Ledger", fn="charge", duration_ms=8, ok=False,
           error="MCP tool error: card declined", mocked=False),
        ev(1081, "span.end", "Main/Worker#2", name="outer", duration_ms=20),
        ev(1082, "agent.result", "Main/Worker#2", ok=False, error="MCP tool error: card declined"),
        ev(1083, "message.dropped", "Main/Worker#1", type="Int"),
        ev(1090, "llm.request", "Main", model="gpt-test", prompt_chars=30, typed=False, step=1),
        ev(1100, "llm.response", "Main", duration_ms=10, chars=3, attempts=1, mocked=False, prompt_tokens=7,
           completion_tokens=3, step=1, tool_calls=0),
        ev(1101, "agent.result", "Main/Worker#1/Leaf#1", ok=True),
        ev(1102, "agent.result", "Main/Worker#1", ok=True),
        ev(1110, "agent.result", "Main", ok=True),
        ev(1111, "agent.stop", "Main"),
        ev(1120, "run.end", None, exit_code=0, duration_ms=120),
    ]


class Page(HTMLParser):
    """The elements of the page that the tests look at."""

    def __init__(self) -> None:
        super().__init__()
        self.lanes: list[dict] = []
        self.rects: list[dict] = []
        self.marks: list[dict] = []
        self.totals: dict[str, str] = {}
        self.tags: list[tuple[str, dict]] = []
        self._total: str | None = None
        self._in_dd = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        classes = (a.get("class") or "").split()
        if tag == "g" and "lane" in classes:
            self.lanes.append(a)
        elif tag == "rect" and "bar" in classes:
            self.rects.append({**a, "classes": classes, "lane": self.lanes[-1]["data-path"]})
        elif tag == "path" and "mark" in classes:
            self.marks.append({**a, "classes": classes, "lane": self.lanes[-1]["data-path"]})
        elif tag == "div" and "total" in classes:
            self._total = a["data-total"]
        elif tag == "dd":
            self._in_dd = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "dd":
            self._in_dd = False

    def handle_data(self, data: str) -> None:
        if self._in_dd and self._total is not None:
            self.totals[self._total] = data
            self._total = None


def write_trace(path: Path, events: list[dict], extra: str = "") -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + extra, encoding="utf-8")


def view(tmp_path: Path, events: list[dict], extra: str = "") -> tuple[subprocess.CompletedProcess, str, Page]:
    write_trace(tmp_path / "run.ndjson", events, extra)
    result = sage(tmp_path, "trace", "view", "run.ndjson")
    html = (tmp_path / "run.html").read_text(encoding="utf-8") if (tmp_path / "run.html").exists() else ""
    page = Page()
    page.feed(html)
    return result, html, page


def test_the_page_shows_lanes_bars_marks_and_totals(tmp_path: Path) -> None:
    result, html, page = view(tmp_path, sample_trace(), extra="not json\n\n{\"no\": \"kind\"}\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "wrote run.html\n"
    assert result.stderr == "warning: skipped 2 lines of run.ndjson that are not trace events\n"
    # one lane per agent path, each after its parent, children in summon order
    assert [(lane["data-path"], lane["data-depth"]) for lane in page.lanes] == [
        ("Main", "0"), ("Main/Worker#1", "1"), ("Main/Worker#1/Leaf#1", "2"), ("Main/Worker#2", "1")]
    by_kind: dict[tuple[str, str], int] = {}
    for rect in page.rects:
        kind = next(c for c in rect["classes"] if c in ("llm", "tool", "span"))
        by_kind[(rect["lane"], kind)] = by_kind.get((rect["lane"], kind), 0) + 1
    assert by_kind == {("Main", "llm"): 2, ("Main/Worker#1", "tool"): 2, ("Main/Worker#2", "span"): 2,
                       ("Main/Worker#2", "tool"): 2}
    tools = [r for r in page.rects if "tool" in r["classes"]]
    assert sorted(c for r in tools for c in r["classes"] if c in ("read_only", "idempotent", "destructive")) == \
        ["destructive", "idempotent", "read_only", "read_only"]
    errors = [r for r in page.rects if "error" in r["classes"]]
    assert len(errors) == 1 and "destructive" in errors[0]["classes"]
    # the two concurrent calls of Worker#1 are on separate rows; the inner span is below the outer one
    w1 = [r for r in tools if r["lane"] == "Main/Worker#1"]
    assert w1[0]["y"] != w1[1]["y"]
    spans = [r for r in page.rects if "span" in r["classes"]]
    assert float(spans[0]["y"]) < float(spans[1]["y"])
    assert sorted((m["lane"], m["classes"][1]) for m in page.marks) == sorted([
        ("Main/Worker#1", "spawn"), ("Main/Worker#2", "spawn"), ("Main/Worker#1/Leaf#1", "spawn"),
        ("Main/Worker#2", "user"), ("Main/Worker#2", "result"), ("Main/Worker#1", "dropped"),
        ("Main", "result"), ("Main/Worker#1", "result"), ("Main/Worker#1/Leaf#1", "result")])
    assert [m["lane"] for m in page.marks if "error" in m["classes"]] == ["Main/Worker#2"]
    assert page.totals == {"duration": "120 ms", "agents": "4", "model_turns": "2", "tokens": "25",
                           "tool_calls": "4 (2 read_only, 1 idempotent, 1 destructive)", "errors": "2",
                           "events": "28", "exit_code": "0"}
    # hovering shows the event's fields
    assert "error: MCP tool error: card declined" in html
    assert "prompt_tokens: 10" in html
    # self-contained: no URL, no external script, style, image or font
    assert not re.search(r"(https?:)?//[A-Za-z0-9]", html.replace("</", "<"))
    assert not any(tag in ("link", "img", "iframe") or "src" in attrs for tag, attrs in page.tags)


def test_messages_and_the_output_name(tmp_path: Path) -> None:
    (tmp_path / "empty.ndjson").write_text("\n  \n", encoding="utf-8")
    empty = sage(tmp_path, "trace", "view", "empty.ndjson")
    assert (empty.returncode, empty.stdout, empty.stderr) == (1, "", "error: empty.ndjson holds no trace events\n")
    missing = sage(tmp_path, "trace", "view", "gone.ndjson")
    assert (missing.returncode, missing.stderr) == (1, "error: cannot read gone.ndjson: No such file or directory\n")
    write_trace(tmp_path / "t.ndjson", sample_trace()[:3])
    out = sage(tmp_path, "trace", "view", "t.ndjson", "-o", "page.html")
    assert (out.returncode, out.stdout) == (0, "wrote page.html\n")
    assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    usage = sage(tmp_path, "trace")
    assert usage.returncode == 2


def big_trace(agents: int = 50, calls: int = 99) -> list[dict]:
    """10,000 events: per agent a spawn, `calls` tool calls and turns (each a pair of events), a result."""
    events = [ev(0, "run.start", None, entry="Main")]
    t = 1
    for a in range(agents):
        path = f"Main/Worker#{a + 1}"
        events.append(ev(t, "agent.spawn", path, parent="Main#0"))
        for c in range(calls):
            if c % 4 == 0:
                events.append(ev(t, "llm.request", path, model="m", prompt_chars=10, typed=False))
                events.append(ev(t + 3, "llm.response", path, duration_ms=3, chars=4, attempts=1, mocked=False,
                                 prompt_tokens=2, completion_tokens=1))
            else:
                events.append(ev(t, "tool.call", path, tool="Fs", fn="read", safety="read_only"))
                events.append(ev(t + 2, "tool.result", path, tool="Fs", fn="read", duration_ms=2, ok=c % 7 != 0,
                                 mocked=False))
            t += 4
        events.append(ev(t, "agent.result", path, ok=True))
        events.append(ev(t, "agent.stop", path))
    events.append(ev(t + 1, "run.end", None, exit_code=0, duration_ms=t + 1))
    return events


def test_a_trace_of_ten_thousand_events(tmp_path: Path) -> None:
    events = big_trace()
    assert len(events) == 10_052
    result, html, page = view(tmp_path, events)
    assert result.returncode == 0, result.stderr
    assert len(page.lanes) == 50
    assert len(page.rects) == 50 * 99
    assert page.totals["model_turns"] == str(50 * 25)
    size = len(html.encode())
    print(f"page of {len(events)} events: {size / 1e6:.2f} MB")
    assert size < 4_000_000


def test_the_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    result, html, page = view(tmp_path, sample_trace())
    assert result.returncode == 0 and len(page.lanes) == 4 and len(page.rects) == 8
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:   # the structure above is what the page is; the picture needs a browser
        return
    shot = tmp_path / "page.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    f"--screenshot={shot}", "--window-size=1400,400", (tmp_path / "run.html").as_uri()],
                   capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
