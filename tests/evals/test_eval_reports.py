"""The HTML report in a real headless Chromium, and an eval recorded against the Messages API test server
and replayed with the server gone."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import sage, sage_env
from messages_server import KEY, MessagesServer

EVAL = """\
record Case { question: String, answer: String }

eval "answers" over "cases.csv" as c: Case {
    let got = try divine("Answer in one word: {c.question}");
    score "right" = got == c.answer;
    score "<b>short</b>" = if_short(got);
}

fn if_short(text: String) -> Float {
    match str_len(text) < 6 { true => 1.0, false => 0.25 }
}
"""
CASES = 'question,answer\r\n"Capital of France, in a word?",Paris\r\nColour of the sky?,blue\r\nTwo plus two?,four\r\n'


def _project(tmp_path: Path) -> None:
    (tmp_path / "answers_eval.sg").write_text(EVAL)
    (tmp_path / "cases.csv").write_text(CASES)


def by_question(body: dict) -> str:
    question = body["messages"][-1]["content"].split(": ", 1)[1]
    return {"Capital of France, in a word?": "Paris", "Colour of the sky?": "blue"}.get(question, "<i>five</i>")


def test_a_messages_api_eval_replays_offline_with_the_same_report(tmp_path: Path) -> None:
    _project(tmp_path)
    with MessagesServer([by_question] * 3) as server:
        env = sage_env(SAGE_LLM_PROVIDER="anthropic", SAGE_LLM_URL=server.url, SAGE_MODEL="claude-test",
                       ANTHROPIC_API_KEY=KEY)
        first = sage("eval", "--record", "tapes", "--json", "first.json", "--concurrency", "3", cwd=tmp_path, env=env)
        assert server.errors == [] and len(server.requests) == 3
    assert first.returncode == 0, first.stdout + first.stderr
    offline = sage_env(SAGE_LLM_PROVIDER="anthropic", SAGE_LLM_URL="http://127.0.0.1:9/v1", SAGE_MODEL="claude-test")
    second = sage("eval", "--replay", "tapes", "--json", "second.json", cwd=tmp_path, env=offline)
    assert second.returncode == 0, second.stdout + second.stderr
    strip = [line for line in first.stdout.splitlines() if "latency" not in line and not line.startswith("eval result")]
    assert strip == [line for line in second.stdout.splitlines()
                     if "latency" not in line and not line.startswith("eval result")]
    assert "row 3 (repeat 1): right = false" in second.stdout
    for tape in (tmp_path / "tapes" / "answers").iterdir():
        assert KEY not in tape.read_text()
    docs = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("first", "second")]
    assert [c["scores"] for c in docs[0]["evals"][0]["cases"]] == [c["scores"] for c in docs[1]["evals"][0]["cases"]]
    assert docs[1]["model"] == "claude-test"


def test_the_html_report_renders_its_table_in_chromium_and_reaches_nothing(tmp_path: Path, browser) -> None:
    _project(tmp_path)
    with MessagesServer([by_question] * 3) as server:
        env = sage_env(SAGE_LLM_PROVIDER="anthropic", SAGE_LLM_URL=server.url, SAGE_MODEL="claude-test",
                       ANTHROPIC_API_KEY=KEY)
        done = sage("eval", "--html", "report.html", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    page_text = (tmp_path / "report.html").read_text()
    assert "http://" not in page_text and "https://" not in page_text and "<script" not in page_text
    requests: list[str] = []
    page = browser.new_page()
    try:
        page.on("request", lambda r: requests.append(r.url))
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto((tmp_path / "report.html").as_uri())
        assert page.locator("h2").inner_text() == "answers"
        summary = page.locator("table.summary tbody tr").all_inner_texts()
        assert [line.split("\t")[:2] for line in summary] == [["right", "0.667"], ["<b>short</b>", "0.750"]]
        rows = page.locator("table.cases tbody tr")
        assert rows.count() == 3
        assert rows.nth(2).locator("td").nth(4).inner_text() == "fail"
        assert page.locator("i").count() == 0 and dialogs == []
    finally:
        page.close()
    assert requests == [(tmp_path / "report.html").as_uri()]
