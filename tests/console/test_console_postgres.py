"""Two consoles on one PostgreSQL store (SPEC §14.1, §24): each shows the runs of every checkout, and when both
approve the same pending step at once, exactly one decision is recorded, the other console says the step was
already answered, and the call is made once."""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import httpx

from console_harness import charges, make_project, sage, ui

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
NOTICE = re.compile(r'<p class="notice (ok|refused)" role="status">(.*?)</p>', re.S)


def test_two_consoles_approve_the_same_step_at_once(tmp_path: Path, pg_url: str) -> None:
    first = make_project(tmp_path / "a", name="refunds", postgres=True)
    second = make_project(tmp_path / "b", name="refunds", postgres=True)
    paused = sage(first, "run", state_url=pg_url)
    assert paused.returncode == 5, paused.stderr
    rid = re.search(r"^run id: (\S+)$", paused.stderr, re.M).group(1)
    with ui(first, pg_url) as one, ui(second, pg_url) as two:
        clients = []
        for console in (one, two):
            client = httpx.Client(base_url=console.origin, timeout=60)
            client.get("/", params={"token": console.token})
            runs = client.get("/").text
            assert f'data-run="{rid}"' in runs   # the run of checkout a, on both consoles
            people = client.get("/people").text
            assert f'data-run="{rid}" data-step="Main:2"' in people
            clients.append((client, CSRF.search(people).group(1)))
        barrier = threading.Barrier(2)
        notices: list[tuple[str, str]] = []

        def approve(client: httpx.Client, csrf: str) -> None:
            form = {"csrf": csrf, "action": "approve", "run": rid, "step": "Main:2", "next": "/people"}
            barrier.wait()
            page = client.post("/act", data=form, follow_redirects=True).text
            notices.append(NOTICE.search(page).groups())
        threads = [threading.Thread(target=approve, args=pair) for pair in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        for client, _ in clients:
            client.close()
    kinds = sorted(kind for kind, _ in notices)
    assert kinds == ["ok", "refused"], notices
    refused = next(text for kind, text in notices if kind == "refused")
    assert f"Main:2 of run {rid} was already approved by console (" in refused
    steps = json.loads(sage(second, "runs", "show", rid, "--format", "json", state_url=pg_url).stdout)
    decisions = [s for s in steps if s["kind"] == "approval"]
    assert len(decisions) == 1 and decisions[0]["outcome"]["approved"] is True
    resumed = sage(first, "run", "--resume", rid, state_url=pg_url)
    assert resumed.returncode == 5, resumed.stderr   # now at the question
    assert [c["tool"] for c in charges(first)] == ["charge"]   # the approved call, made once
