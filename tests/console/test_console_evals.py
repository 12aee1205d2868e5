"""The Evals page (SPEC §22.1, §24): the `--json` reports of `.sage/evals/`, each as a table, and each score's
trend across them, oldest to newest; a report's values stay text."""
from __future__ import annotations

import shutil
from pathlib import Path

from browser import watch
from console_harness import HERE, make_project, screenshot, ui


def test_eval_reports_and_their_trends(tmp_path: Path, browser) -> None:
    root = make_project(tmp_path / "p")
    shutil.copytree(HERE / "reports", root / ".sage" / "evals")
    (root / ".sage" / "evals" / "notes.json").write_text("not json", encoding="utf-8")
    with ui(root) as console:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        seen = watch(page, console.origin)
        page.goto(console.url)
        page.click("nav a:has-text('Evals')")
        trends = page.locator("table.trends tbody tr")
        assert trends.count() == 2
        exact = trends.filter(has_text="exact")
        assert "labels the issue" in exact.inner_text() and "0.500" in exact.inner_text()
        assert exact.locator("td.down").inner_text() == "-0.500"   # 1.0 then 0.5
        assert exact.locator("svg polyline").get_attribute("points").count(",") == 3   # three reports
        judged = trends.filter(has_text="judged")
        assert judged.locator("td").nth(3).inner_text() == "0.680"
        reports = page.locator("section.report h2")
        assert reports.first.inner_text().startswith("20261203-090000.json")   # newest first
        assert "Llm error: <script>" in page.locator("ul.failed").first.inner_text()
        assert "notes.json: not a report" in page.locator("p.notice.refused").inner_text()
        screenshot(page, "console-evals", tmp_path)
        assert seen.dialogs == [] and not [m for m in seen.console if "injected" in m] and seen.outside == []
        context.close()
