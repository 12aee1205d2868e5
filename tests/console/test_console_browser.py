"""The console in a real browser (SPEC §24): a paused run approved with a click finishes under a worker while
the page shows it (live updates, no reload); Deny with a reason; Answer; Cancel a running run. The values of
the run — output, tool results, the question, the answer — hold markup, and the page shows it as text: the
browser runs no injected script, and the page asks nothing of any origin but the console's."""
from __future__ import annotations

import json
from pathlib import Path

from browser import watch
from console_harness import IMG, SCRIPT, charges, make_project, sage, screenshot, ui, worker

DEADLINE_MS = 60_000


def _open(browser, console, path: str = "/"):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    seen = watch(page, console.origin)
    page.goto(console.url)   # the token sets the cookie; the redirect drops it from the address
    assert "token=" not in page.url
    if path != "/":
        page.goto(console.origin + path)
    return context, page, seen


def _status(page, status: str) -> None:
    page.locator("#run-status", has_text=status).wait_for(timeout=DEADLINE_MS)


def _clean(seen) -> None:
    assert seen.dialogs == [], f"the page ran injected script: {seen.dialogs}"
    assert not [m for m in seen.console if "injected" in m], seen.console
    assert seen.outside == [], f"the page reached outside its origin: {seen.outside}"


def test_approve_and_answer_in_the_browser_while_a_worker_finishes_the_run(tmp_path: Path, browser) -> None:
    root = make_project(tmp_path / "p")
    rid = sage(root, "runs", "submit").stdout.strip()
    with worker(root), ui(root) as console:
        context, page, seen = _open(browser, console)
        page.locator(f"tr[data-run='{rid}']").wait_for(timeout=DEADLINE_MS)
        screenshot(page, "console-runs", tmp_path)
        page.click(f"a[href='/runs/{rid}']")
        _status(page, "paused")   # the worker pauses it, the page follows
        page.locator("section.pending").wait_for(timeout=DEADLINE_MS)
        assert SCRIPT in page.locator("#output").inner_text()   # the output, as text
        assert IMG in page.locator("#output").inner_text()
        assert SCRIPT in page.locator("table.steps").inner_text()   # the echo tool's result
        screenshot(page, "console-run-paused", tmp_path)
        assert charges(root) == []

        page.click("section.pending button:has-text('Approve')")
        notice = page.locator("p.notice.ok")
        assert f"approved Main:2 of run {rid}; the run is queued again for a worker" in notice.inner_text()
        page.evaluate("window.sameDocument = true")   # from here on, only live updates change the page
        page.locator("section.pending form.answer").wait_for(timeout=DEADLINE_MS)   # resumed, now at `ask`
        assert SCRIPT in page.locator("section.pending").inner_text()   # the question, as text
        assert page.evaluate("window.sameDocument") is True
        assert len(charges(root)) == 1
        screenshot(page, "console-question", tmp_path)

        page.fill("section.pending input[name=text]", f"Ada {SCRIPT}")
        page.click("section.pending button:has-text('Answer')")
        assert f"answered Main:4 of run {rid}" in page.locator("p.notice.ok").inner_text()
        page.evaluate("window.sameDocument = true")
        _status(page, "completed")
        page.locator("#output", has_text="approved by Ada").wait_for(timeout=DEADLINE_MS)
        assert page.evaluate("window.sameDocument") is True   # no reload: the live update showed it
        assert f"approved by Ada {SCRIPT}" in page.locator("#output").inner_text()
        screenshot(page, "console-run-completed", tmp_path)
        _clean(seen)
        context.close()
    assert [c["tool"] for c in charges(root)] == ["charge"]   # the approved call, made once
    shown = sage(root, "runs", "show", rid).stdout
    assert '"by": "console (' in shown


def test_deny_with_a_reason_from_the_people_page(tmp_path: Path, browser) -> None:
    root = make_project(tmp_path / "p")
    rid = sage(root, "runs", "submit").stdout.strip()
    assert sage(root, "worker", "--drain").returncode == 0   # paused at the approval
    with worker(root), ui(root) as console:
        context, page, seen = _open(browser, console, "/people")
        section = page.locator(f"section.pending[data-run='{rid}']")
        assert "Counter.charge" in section.inner_text() and '"amount":5' in section.inner_text()
        screenshot(page, "console-people", tmp_path)
        section.locator("input[name=reason]").fill(f"not today {IMG}")
        section.locator("button:has-text('Deny')").click()
        assert f"denied Main:2 of run {rid}" in page.locator("p.notice.ok").inner_text()
        page.goto(f"{console.origin}/runs/{rid}")
        _status(page, "failed")
        page.locator("#output", has_text="was denied: not today").wait_for(timeout=DEADLINE_MS)
        assert IMG in page.locator("#output").inner_text()
        _clean(seen)
        context.close()
    assert charges(root) == []
    steps = json.loads(sage(root, "runs", "show", rid, "--format", "json").stdout)
    decision = next(s["outcome"] for s in steps if s["kind"] == "approval")
    assert decision["approved"] is False and decision["reason"] == f"not today {IMG}"
    assert decision["by"].startswith("console (")


def test_an_already_decided_step_changes_nothing_and_says_so(tmp_path: Path, browser) -> None:
    root = make_project(tmp_path / "p")
    rid = sage(root, "runs", "submit").stdout.strip()
    assert sage(root, "worker", "--drain").returncode == 0
    with ui(root) as console:
        # without JavaScript (the page reads and works without it), so no live update takes the form away
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(console.url)
        page.goto(f"{console.origin}/people")
        page.locator(f"section.pending[data-run='{rid}']").wait_for(timeout=DEADLINE_MS)
        assert sage(root, "runs", "deny", rid, "Main:2", "--reason", "by the terminal").returncode == 0
        page.click("section.pending button:has-text('Approve')")   # the form was on the page before
        notice = page.locator("p.notice.refused").inner_text()
        assert f"Main:2 of run {rid} was already denied by " in notice and "nothing was changed" in notice
        context.close()
    assert '"approved": false' in sage(root, "runs", "show", rid).stdout


def test_cancel_a_running_run(tmp_path: Path, browser) -> None:
    root = make_project(tmp_path / "p", slow=True)
    rid = sage(root, "runs", "submit").stdout.strip()
    with worker(root), ui(root) as console:
        context, page, seen = _open(browser, console, f"/runs/{rid}")
        _status(page, "running")
        page.locator("#output", has_text="tick 1").wait_for(timeout=DEADLINE_MS)   # printing, live
        page.click("form.cancel button")
        assert f"run {rid}" in page.locator("p.notice.ok").inner_text()
        _status(page, "cancelled")
        _clean(seen)
        context.close()
    waited = sage(root, "runs", "wait", rid, "--timeout-s", "30")
    assert waited.returncode == 130, waited.stderr
