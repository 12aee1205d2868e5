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

import pytest
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
        self.servers: list[dict] = []
        self.lives: list[dict] = []
        self.current = ""
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
            self.current = a["data-path"]
        elif tag == "g" and "server-lane" in classes:
            self.servers.append(a)
            self.current = "MCP " + a["data-server"]
        elif tag == "rect" and "bar" in classes:
            self.rects.append({**a, "classes": classes, "lane": self.current})
        elif tag == "rect" and "life" in classes:
            self.lives.append({**a, "classes": classes, "lane": self.current})
        elif tag == "path" and "mark" in classes:
            self.marks.append({**a, "classes": classes, "lane": self.current})
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


GOOD = '{"t": 1005, "kind": "user", "agent": "Main#0", "path": "Main", "message": "fine"}'
MALFORMED = {   # each a line of valid JSON (as Python's parser reads it) that is no usable trace event
    "t NaN": '{"t": NaN, "kind": "user", "agent": "Main#0", "path": "Main", "message": "m"}',
    "t Infinity": '{"t": Infinity, "kind": "user", "agent": "Main#0", "path": "Main", "message": "m"}',
    "t -Infinity": '{"t": -Infinity, "kind": "agent.spawn", "agent": "W#1", "path": "Main/W#1"}',
    "t beyond 2^53": '{"t": 1e300, "kind": "user", "agent": "Main#0", "path": "Main", "message": "m"}',
    "t true": '{"t": true, "kind": "user", "agent": "Main#0", "path": "Main", "message": "m"}',
    "path number": '{"t": 1005, "kind": "user", "agent": "Main#0", "path": 123, "message": "m"}',
    "path object": '{"t": 1005, "kind": "user", "agent": "Main#0", "path": {"a": 1}, "message": "m"}',
    "path list": '{"t": 1005, "kind": "agent.spawn", "agent": "W#1", "path": ["Main", "W#1"]}',
    "tokens text": '{"t": 1061, "kind": "llm.response", "agent": "Main#0", "path": "Main", "duration_ms": 3, '
                   '"prompt_tokens": "abc", "completion_tokens": 1}',
    "duration text": '{"t": 1130, "kind": "run.end", "agent": null, "path": null, "exit_code": 0, '
                     '"duration_ms": "10"}',
    "tool object": '{"t": 1030, "kind": "tool.call", "agent": "W#1", "path": "Main/Worker#1", "tool": {"a": 1}, '
                   '"fn": "read", "safety": "read_only"}',
    "deep nesting": '{"t": 1005, "kind": "user", "path": "Main", "message": ' + "[" * 100_000 + "]" * 100_000 + "}",
}


@pytest.mark.parametrize("line", MALFORMED.values(), ids=MALFORMED.keys())
def test_an_unusable_line_is_skipped_with_the_warning(tmp_path: Path, line: str) -> None:
    result, html, page = view(tmp_path, sample_trace(), extra=f"{line}\n{GOOD}\n")
    assert (result.returncode, result.stdout) == (0, "wrote run.html\n"), result.stderr
    assert result.stderr == "warning: skipped 1 line of run.ndjson that are not trace events\n"
    assert "internal error" not in result.stderr and html.endswith("</html>\n")
    assert page.totals["events"] == "29" and "message: fine" in html


def test_lone_surrogates_are_shown_replaced(tmp_path: Path) -> None:
    line = '{"t": 1005, "kind": "user", "agent": "Main#0", "path": "Main/\\udc80", "message": "a\\ud800b"}'
    result, html, page = view(tmp_path, sample_trace(), extra=line + "\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, "wrote run.html\n", "")
    assert "message: a\ufffdb" in html and "Main/\ufffd" in [lane["data-path"] for lane in page.lanes]


def test_the_page_follows_the_number_of_events_not_the_time_they_span(tmp_path: Path) -> None:
    events = [ev(0, "run.start", None, entry="Main"), ev(1, "user", "Main", message="first"),
              ev(10 ** 15, "user", "Main", message="last"), ev(10 ** 15, "run.end", None, exit_code=0)]
    result, html, page = view(tmp_path, events)
    assert (result.returncode, result.stdout) == (0, "wrote run.html\n"), result.stderr
    assert html.count('class="tick"') <= 13
    assert len(html.encode()) < 30_000


def test_each_agent_s_lifetime_is_a_bar_from_its_spawn_to_its_stop(tmp_path: Path) -> None:
    events = sample_trace()
    events.insert(-1, ev(1112, "agent.stop", "Main/Worker#1"))
    result, html, page = view(tmp_path, events)
    assert result.returncode == 0, result.stderr
    lives = {life["lane"]: life for life in page.lives}
    assert sorted(lives) == sorted(lane["data-path"] for lane in page.lanes) and len(page.lives) == 4
    # milliseconds from the trace's start: Main from the run's start to its stop, a worker from its spawn
    assert (lives["Main"]["data-s"], lives["Main"]["data-e"]) == ("0", "111")
    assert (lives["Main/Worker#1"]["data-s"], lives["Main/Worker#1"]["data-e"]) == ("1", "112")
    assert "unfinished" not in lives["Main/Worker#1"]["classes"]
    # no stop: alive until the trace ends; its failure marks the bar
    assert (lives["Main/Worker#2"]["data-s"], lives["Main/Worker#2"]["data-e"]) == ("2", "120")
    assert {"unfinished", "error"} <= set(lives["Main/Worker#2"]["classes"])
    assert float(lives["Main/Worker#2"]["width"]) > 0.9 * float(lives["Main"]["width"])


def test_connecting_to_an_mcp_server_is_a_span_in_the_server_s_lane(tmp_path: Path) -> None:
    events = [ev(1000, "run.start", None, entry="Main"),
              ev(1001, "mcp.connecting", "Main", server="Tracker", transport="stdio"),
              ev(1003, "mcp.connecting", "Main", server="Down", transport="http"),
              ev(1500, "mcp.connect_failed", "Main", server="Down", transport="http", duration_ms=497),
              ev(2900, "mcp.connect", "Main", server="Tracker", transport="stdio", protocol="2026-07-28",
                 duration_ms=60),
              ev(2910, "tool.call", "Main", tool="Tracker", fn="search", remote="search", safety="read_only"),
              ev(2950, "tool.result", "Main", tool="Tracker", fn="search", duration_ms=40, ok=True, mocked=False),
              # a trace written before `mcp.connecting` existed: the span is the duration before `mcp.connect`
              ev(3000, "mcp.connect", "Main", server="Old", transport="stdio", protocol="2025-06-18", duration_ms=400),
              ev(3100, "mcp.disconnect", "Main", server="Tracker"),
              ev(3200, "run.end", None, exit_code=0, duration_ms=2200)]
    result, html, page = view(tmp_path, events)
    assert result.returncode == 0, result.stderr
    assert [s["data-server"] for s in page.servers] == ["Tracker", "Down", "Old"]
    connects = {r["lane"]: r for r in page.rects if "connect" in r["classes"]}
    assert {k: (v["data-s"], v["data-e"]) for k, v in connects.items()} == {
        "MCP Tracker": ("1", "1900"), "MCP Down": ("3", "500"), "MCP Old": ("1600", "2000")}
    assert "error" in connects["MCP Down"]["classes"] and "error" not in connects["MCP Tracker"]["classes"]
    tool = next(r for r in page.rects if "tool" in r["classes"])
    assert float(connects["MCP Tracker"]["x"]) + float(connects["MCP Tracker"]["width"]) <= float(tool["x"])
    connected = {life["lane"]: (life["data-s"], life["data-e"]) for life in page.lives if life["lane"] != "Main"}
    assert connected == {"MCP Tracker": ("1900", "2100"), "MCP Old": ("2000", "2200")}
    assert "connecting to Tracker" in html and page.totals["errors"] == "1"


def test_a_real_run_s_trace_shows_the_connection_before_the_first_tool_call(tmp_path: Path) -> None:
    """examples/triage connects to its tracker (in process) before the first call: the trace holds the
    span from `mcp.connecting` to `mcp.connect`, and the page draws it."""
    project = tmp_path / "triage"
    shutil.copytree(REPO / "examples" / "triage", project)
    run = sage(project, "run", "--trace-file", str(tmp_path / "run.ndjson"))
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in (tmp_path / "run.ndjson").read_text(encoding="utf-8").splitlines()]
    kinds = [(e["kind"], e.get("server")) for e in events if e["kind"].startswith("mcp.connect")]
    assert kinds.index(("mcp.connecting", "Tracker")) < kinds.index(("mcp.connect", "Tracker"))
    result = sage(tmp_path, "trace", "view", "run.ndjson")
    assert result.returncode == 0, result.stderr
    page = Page()
    page.feed((tmp_path / "run.html").read_text(encoding="utf-8"))
    connect = next(r for r in page.rects if r["lane"] == "MCP Tracker" and "connect" in r["classes"])
    first_call = min(int(r["data-s"]) for r in page.rects if "tool" in r["classes"])
    assert int(connect["data-s"]) <= int(connect["data-e"]) <= first_call


def test_the_chart_fits_the_window_and_zooms(tmp_path: Path) -> None:
    result, html, page = view(tmp_path, sample_trace())
    assert result.returncode == 0
    # everything the script lays out again carries its time; the controls are hidden until the script runs
    placed = [*page.rects, *page.lives, *page.marks]
    assert placed and all("data-s" in e for e in placed)
    assert '<div id="zoom" hidden>' in html and 'data-zoom="in"' in html and 'data-zoom="fit"' in html
    chart = next(a for tag, a in page.tags if tag == "svg")
    assert chart["viewbox"].startswith("0 0 ") and chart["id"] == "chart"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return
    probe = ("<script>var c=document.getElementById('chart');var w=[c.getAttribute('width')];"
             "document.querySelector('[data-zoom=in]').click();w.push(c.getAttribute('width'));"
             "document.querySelector('[data-zoom=fit]').click();w.push(c.getAttribute('width'));"
             "document.title='widths '+w.join(' ');</script></body>")
    (tmp_path / "probe.html").write_text(html.replace("</body>", probe), encoding="utf-8")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--window-size=700,400", "--dump-dom", (tmp_path / "probe.html").as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    widths = [int(w) for w in re.search(r"<title>widths ([\d ]+)</title>", dom).group(1).split()]
    fitted, zoomed, again = widths
    assert fitted <= 700 < 260 + 1100   # fitted to the window, narrower than the page without the script
    assert zoomed > fitted + 300 and again == fitted
