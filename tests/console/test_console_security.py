"""The console's guards (SPEC §24), over plain HTTP: the token on every route, assets included; the CSRF token on
every POST (403, nothing changed); GETs that change nothing; no listening on another host than loopback
without SAGE_UI_TOKEN; SIGTERM stopping it within 10 s even with a live-update stream open."""
from __future__ import annotations

import threading
from pathlib import Path

import httpx

from console_harness import make_project, sage, start_ui, ui

ROUTES = ["/", "/people", "/operations", "/evals", "/events", "/static/console.css", "/static/live.js",
          "/runs/last", "/runs/20261203-000000-abcd/timeline", "/favicon.ico", "/no/such/page"]


def _paused(tmp_path: Path) -> tuple[Path, str]:
    root = make_project(tmp_path / "p")
    rid = sage(root, "runs", "submit").stdout.strip()
    assert sage(root, "worker", "--drain").returncode == 0
    return root, rid


def _waiting(root: Path, rid: str) -> bool:
    return "2 approval Counter.charge read_only waiting" in sage(root, "runs", "show", rid).stdout


def test_every_route_needs_the_token(tmp_path: Path) -> None:
    root, rid = _paused(tmp_path)
    with ui(root) as console, httpx.Client(base_url=console.origin, timeout=30) as client:
        for route in ROUTES:
            assert client.get(route).status_code == 401, route
            assert client.get(route, params={"token": "wrong"}).status_code == 401, route
        cookie = {f"sage_ui_{console.origin.rsplit(':', 1)[1]}": "wrong"}
        with httpx.Client(base_url=console.origin, timeout=30, cookies=cookie) as wrong:
            for route in ROUTES:
                assert wrong.get(route).status_code == 401, route
        refused = client.post("/act", data={"action": "approve", "run": rid, "step": "Main:2"})
        assert refused.status_code == 401
        first = client.get("/", params={"token": console.token})
        assert first.status_code == 303 and first.headers["location"] == "/"   # the cookie serves from now on
        assert "httponly" in first.headers["set-cookie"].lower()
        assert client.get("/static/console.css").status_code == 200
        assert client.get("/people").status_code == 200
    assert _waiting(root, rid)


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    root, rid = _paused(tmp_path)
    with ui(root) as console, httpx.Client(base_url=console.origin, timeout=30) as client:
        client.get("/", params={"token": console.token})
        page = client.get("/people").text
        assert 'name="csrf"' in page
        form = {"action": "approve", "run": rid, "step": "Main:2", "next": "/people"}
        assert client.post("/act", data=form).status_code == 403
        assert client.post("/act", data={**form, "csrf": "0" * 64}).status_code == 403
        assert client.post("/act", data={**form, "action": "cancel", "csrf": ""}).status_code == 403
        for route in ("/act", f"/act?action=approve&run={rid}&step=Main:2"):
            assert client.get(route).status_code == 405   # a GET changes nothing
        assert _waiting(root, rid)
        assert "  paused  " in sage(root, "runs", "list").stdout
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        done = client.post("/act", data={**form, "csrf": csrf}, follow_redirects=True)
        assert f"approved Main:2 of run {rid}" in done.text
    assert not _waiting(root, rid)


def test_another_host_than_loopback_needs_sage_ui_token(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    refused = sage(root, "ui", "--no-open", "--host", "0.0.0.0", "--port", "1")
    assert refused.returncode == 2
    assert refused.stderr == "error: set SAGE_UI_TOKEN to serve the console on 0.0.0.0\n"
    assert refused.stdout == ""
    console = start_ui(root, None, "--host", "0.0.0.0", SAGE_UI_TOKEN="a-token-chosen-by-its-operator")
    try:
        assert console.url.startswith("http://0.0.0.0:") and console.token == "a-token-chosen-by-its-operator"
        port = console.origin.rsplit(":", 1)[1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            assert client.get("/people").status_code == 401
            assert client.get("/people", params={"token": console.token}, follow_redirects=True).status_code == 200
    finally:
        assert console.stop() == 143


def test_sigterm_stops_the_console_within_10_s_with_a_live_stream_open(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    console = start_ui(root)
    opened = threading.Event()

    def listen() -> None:
        try:
            with httpx.Client(timeout=60) as client, \
                    client.stream("GET", f"{console.origin}/events", params={"token": console.token},
                                  follow_redirects=True) as stream:
                for _ in stream.iter_bytes():
                    opened.set()
        except httpx.HTTPError:
            pass
    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    assert opened.wait(30), "the live-update stream did not open"
    assert console.stop() == 143   # SIGTERM (stop() fails unless it ends within 10 s), as `sage worker` exits
    reader.join(30)
    assert not reader.is_alive()
