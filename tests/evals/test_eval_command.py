"""`sage eval` (SPEC §22.1) against the project's model API test servers: scores, gates, the JSON and HTML
reports, real concurrency, datasets in both formats with their bad rows, cassettes per case, Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from conftest import SUITE, sage, sage_env
from fake_openai import FakeOpenAI, Request, reply

LABELS = """\
record Case { title: String, label: String }

eval "labels issues" over "issues.jsonl" as c: Case {
    let got = try divine("Label this issue: {c.title}");
    score "exact" = got == c.label;
    score "brevity" = 1.0 / int_to_float(str_len(got));
}
"""
ISSUES = [{"title": "crash on start", "label": "bug"}, {"title": "add dark mode", "label": "feature"},
          {"title": "typo in the guide", "label": "docs"}]
ANSWERS = {"crash on start": "bug", "add dark mode": "feature", "typo in the guide": "question"}


def by_prompt(request: Request):
    title = request.messages[-1]["content"].split(": ", 1)[1]
    return reply(ANSWERS[title], {"prompt_tokens": 10, "completion_tokens": 1})(request)


def _labels(tmp_path: Path) -> None:
    (tmp_path / "labels_eval.sg").write_text(LABELS)
    (tmp_path / "issues.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ISSUES))


def test_scores_report_json_gates_and_a_replay_that_gives_the_same_report(tmp_path: Path) -> None:
    _labels(tmp_path)
    with FakeOpenAI() as model:
        model.push(*[by_prompt] * 6)
        env = sage_env(SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-test")
        done = sage("eval", "--json", "first.json", "--repeat", "2", "--record", "cassettes", cwd=tmp_path, env=env)
        assert len(model.requests) == 6
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert 'eval "labels issues" (labels_eval.sg: 3 rows x 2 repeats)' in out
    assert "  exact     0.667   0.000" in out and "pass rate 66.7% (4/6)" in out
    assert "row 3 (repeat 1): exact = false" in out and "value: 'question'" in out
    report = json.loads((tmp_path / "first.json").read_text())
    assert set(report) == {"version", "evals", "model", "started_at"} and report["version"] == 1
    (e,) = report["evals"]
    assert set(e) == {"name", "file", "dataset", "cases", "summary"}
    assert set(e["cases"][0]) == {"row", "repeat", "scores", "passed", "error", "latency_ms", "usage"}
    assert [(c["row"], c["repeat"], c["passed"]) for c in e["cases"]] == [
        (1, 1, True), (1, 2, True), (2, 1, True), (2, 2, True), (3, 1, False), (3, 2, False)]
    assert set(e["summary"]) == {"scores", "pass_rate", "usage", "latency_ms"}
    assert e["summary"]["scores"]["exact"] == {"mean": 0.666667, "stdev": 0.0}
    assert e["summary"]["pass_rate"] == 0.666667 and set(e["summary"]["latency_ms"]) == {"p50", "p95"}
    assert sorted(os.listdir(tmp_path / "cassettes" / "labels-issues")) == [
        "1-1.jsonl", "1-2.jsonl", "2-1.jsonl", "2-2.jsonl", "3-1.jsonl", "3-2.jsonl"]
    assert len(os.listdir(tmp_path / ".sage" / "evals")) == 1

    offline = sage_env(SAGE_LLM_URL="http://127.0.0.1:9/v1", SAGE_API_KEY="sk-test")
    gated = sage("eval", ".", "--replay", "cassettes", "--repeat", "2", "--json", "again.json", "--baseline",
                 "first.json", "--fail-under", "exact=0.9", "brevity=0.1", cwd=tmp_path, env=offline)
    assert gated.returncode == 1
    assert 'gate failed: score "exact" of eval "labels issues" has mean 0.667, under 0.9' in gated.stdout
    assert "brevity" not in gated.stdout.split("gate failed")[1]
    again = json.loads((tmp_path / "again.json").read_text())
    for doc in (report, again):
        doc.pop("started_at")
        for case in doc["evals"][0]["cases"]:
            case.pop("latency_ms")
        doc["evals"][0]["summary"].pop("latency_ms")
    assert again == report
    assert "  exact     0.667   0.000  +0.000" in gated.stdout
    assert len(os.listdir(tmp_path / ".sage" / "evals")) == 2


def test_a_regression_against_the_baseline(tmp_path: Path) -> None:
    _labels(tmp_path)
    env = sage_env(SAGE_MODEL="echo")
    baseline = {"version": 1, "evals": [{"name": "labels issues", "summary": {"scores": {
        "exact": {"mean": 0.9, "stdev": 0.0}, "brevity": {"mean": 0.0, "stdev": 0.0}}}}]}
    (tmp_path / "base.json").write_text(json.dumps(baseline))
    marked = sage("eval", "--baseline", "base.json", cwd=tmp_path, env=env)
    assert marked.returncode == 0, marked.stdout + marked.stderr
    assert "  exact     0.000   0.000  -0.900 regression" in marked.stdout
    assert "regression" not in next(line for line in marked.stdout.splitlines() if line.startswith("  brevity"))
    failing = sage("eval", "--baseline", "base.json", "--fail-on-regression", cwd=tmp_path, env=env)
    assert failing.returncode == 1


def test_twenty_cases_really_run_at_once(tmp_path: Path) -> None:
    (tmp_path / "many_eval.sg").write_text("""\
record Row { n: Int }

eval "many" over "rows.jsonl" as r: Row {
    score "answered" = (try divine("row {r.n}")) == "ok";
}
""")
    (tmp_path / "rows.jsonl").write_text("".join(f'{{"n": {i}}}\n' for i in range(200)))
    lock = threading.Lock()
    state = {"now": 0, "most": 0}
    twenty = threading.Event()

    def held(request: Request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            if state["now"] >= 20:
                twenty.set()
        twenty.wait(60)
        with lock:
            state["now"] -= 1
        return reply("ok")(request)

    with FakeOpenAI() as model:
        model.push(*[held] * 200)
        done = sage("eval", "--concurrency", "20", cwd=tmp_path,
                    env=sage_env(SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-test"), timeout=300)
        assert len(model.requests) == 200
    assert done.returncode == 0, done.stdout + done.stderr
    assert twenty.is_set() and state["most"] == 20
    assert "pass rate 100.0% (200/200)" in done.stdout


def test_csv_rows_are_converted_by_field_type_and_bad_rows_are_their_cases_errors(tmp_path: Path) -> None:
    (tmp_path / "table_eval.sg").write_text("""\
record Row { text: String, n: Int, tags: List<String> }

eval "table" over "rows.csv" as r: Row {
    score "long" = str_len(r.text) > r.n;
    score "tagged" = match len(r.tags) { 1 => 0.5, _ => 1.0 };
    score "ratio" = int_to_float(10 / (r.n - 1)) / 10.0;
}
""")
    (tmp_path / "rows.csv").write_text('text,n,tags\r\n"a, quoted\nline",3,"[""x""]"\r\nshort,9,[]\r\n'
                                       'too,many,cells,here\r\n"[1]",oops,[]\r\nlast,1,"[""a"",""b""]"\r\n')
    done = sage("eval", "table_eval.sg", "--json", "r.json", cwd=tmp_path, env=sage_env(SAGE_MODEL="echo"))
    assert done.returncode == 1, done.stdout + done.stderr
    cases = json.loads((tmp_path / "r.json").read_text())["evals"][0]["cases"]
    assert [(c["row"], c["passed"]) for c in cases] == [(1, True), (2, False), (3, False), (4, False), (5, False)]
    assert cases[0]["scores"] == {"long": 1.0, "tagged": 0.5, "ratio": 0.5} and cases[0]["error"] is None
    assert cases[1]["error"] is None and cases[1]["scores"]["long"] == 0.0
    assert cases[2]["error"] == "line 5: 4 cells, but the header has 3"
    assert cases[3]["error"].startswith("line 6: cell `n` is not JSON for type Int")
    assert cases[4]["error"] == "error[E201]: Runtime error: division by zero"
    assert cases[4]["scores"] == {"long": 1.0, "tagged": 1.0}


def test_jsonl_bad_lines_limit_and_unreadable_datasets(tmp_path: Path) -> None:
    _labels(tmp_path)
    (tmp_path / "issues.jsonl").write_text('{"title": "a", "label": "echo: Label this issue: a"}\nnot json\n'
                                           '{"title": 3, "label": "x"}\n' + '{"title": "b", "label": "c"}\n' * 100_000)
    env = sage_env(SAGE_MODEL="echo")
    done = sage("eval", "--limit", "4", "--json", "r.json", cwd=tmp_path, env=env)
    assert done.returncode == 1
    cases = json.loads((tmp_path / "r.json").read_text())["evals"][0]["cases"]
    assert [c["row"] for c in cases] == [1, 2, 3, 4] and cases[0]["passed"] and cases[3]["error"] is None
    assert cases[1]["error"].startswith("line 2: not a JSON object")
    assert cases[2]["error"] == ("line 3: cannot convert the row to Case: expected String at $.title, got 3")
    (tmp_path / "issues.jsonl").unlink()
    missing = sage("eval", "--json", "none.json", cwd=tmp_path, env=env)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "error: dataset " in missing.stderr and "issues.jsonl not found" in missing.stderr
    assert not (tmp_path / "none.json").exists()
    (tmp_path / "issues.jsonl").mkdir()
    assert "is a directory" in sage("eval", cwd=tmp_path, env=env).stderr
    (tmp_path / "labels_eval.sg").unlink()
    nothing = sage("eval", cwd=tmp_path, env=env)
    assert (nothing.returncode, nothing.stderr) == (3, "no eval found (files must end in _eval.sg)\n")
    bad = sage("eval", "--fail-under", "exact", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "NAME=X" in bad.stderr


def test_ctrl_c_writes_the_partial_report_and_leaves_no_process(tmp_path: Path) -> None:
    server = tmp_path / "suite_server.py"
    server.write_text(SUITE.read_text())
    (tmp_path / "grove.toml").write_text(f'[project]\nname = "stop"\n\n[tools.Suite]\ncommand = '
                                         f'{json.dumps(sys.executable)}\nargs = [{json.dumps(str(server))}]\n')
    (tmp_path / "slow_eval.sg").write_text("""\
tool Suite { fn add(a: Int, b: Int) -> Int }
record Row { n: Int }

eval "slow" over "rows.jsonl" as r: Row {
    let sum = try Suite.add(r.n, 1);
    score "answered" = (try divine("row {sum}")) == "ok";
}
""")
    (tmp_path / "rows.jsonl").write_text("".join(f'{{"n": {i}}}\n' for i in range(50)))
    asked = threading.Event()
    release = threading.Event()

    def stuck(request: Request):
        asked.set()
        release.wait(60)
        return reply("ok")(request)

    with FakeOpenAI() as model:
        model.push(*[stuck] * 50)
        process = subprocess.Popen([sys.executable, "-m", "sagepy", "eval", "--json", "r.json"], cwd=tmp_path,
                                   env=sage_env(SAGE_LLM_URL=model.url, SAGE_API_KEY="sk-test"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert asked.wait(120), "no model request came"
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
        finally:
            release.set()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["incomplete"] is True and "eval result: incomplete." in out
    leftovers = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(server).encode() in cmdline:
            leftovers.append(pid)
    assert leftovers == []


def test_reports_started_in_the_same_second_are_both_kept(tmp_path: Path) -> None:
    import types

    from sagepy.evals.command import _write_reports
    data = {"version": 1, "evals": [], "model": "m", "started_at": "2026-12-03T18:23:46Z"}
    options = types.SimpleNamespace(json=None, html=None)
    for _ in range(3):
        _write_reports(data, [], {}, options, types.SimpleNamespace(root=str(tmp_path)))
    assert sorted(os.listdir(tmp_path / ".sage" / "evals")) == [
        "20261203-182346.json", "20261203-182346_2.json", "20261203-182346_3.json"]
