"""The Operations page and a run's timeline (SPEC §24, §14, §14.2, §18.2), over HTTP: the workers that hold
leases, submitting a queued run with arguments, resolving a halted run's step, and the trace timeline of a run
whose trace is in `.sage/traces/`."""
from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from console_harness import make_project, sage, ui, worker

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
NOTICE = re.compile(r'<p class="notice (ok|refused)" role="status">(.*?)</p>', re.S)


def _client(console) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=console.origin, timeout=60)
    client.get("/", params={"token": console.token})
    return client, CSRF.search(client.get("/operations").text).group(1)


def _post(client: httpx.Client, csrf: str, **form: str) -> tuple[str, str]:
    page = client.post("/act", data={"csrf": csrf, "next": "/operations", **form}, follow_redirects=True).text
    return NOTICE.search(page).groups()


def test_submit_with_arguments_and_see_the_worker_holding_its_lease(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", slow=True)
    with ui(root) as console:
        client, csrf = _client(console)
        kind, text = _post(client, csrf, action="submit", args="first 'two words'", queue="default")
        assert kind == "ok" and text.startswith("queued run "), text
        rid = text.split()[-1]
        listed = json.loads(sage(root, "runs", "list", "--format", "json").stdout)
        assert [(r["id"], r["status"], r["queue"]) for r in listed] == [(rid, "queued", "default")]
        assert "<code>first</code> <code>two words</code>" in client.get(f"/runs/{rid}").text
        with worker(root):
            for _ in range(600):   # until the worker's run holds the lease (its own process renews it)
                page = client.get("/operations").text
                if f'<a href="/runs/{rid}">{rid}</a> </td>' in page:
                    break
            else:
                raise AssertionError(f"no worker holds the lease of {rid}:\n{page}")
            kind, text = _post(client, csrf, action="cancel", run=rid)
            assert (kind, text) == ("ok", f"run {rid} was told to stop before its next step")
            assert sage(root, "runs", "wait", rid, "--timeout-s", "60").returncode == 130
        client.close()


def test_resolve_a_halted_step(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    paused = sage(root, "run")
    rid = re.search(r"^run id: (\S+)$", paused.stderr, re.M).group(1)
    assert sage(root, "runs", "approve", rid, "Main:2").returncode == 0
    crashed = sage(root, "run", "--resume", rid, SAGE_CRASH_AFTER_WRITE="1")   # the charge's intent, then a crash
    assert crashed.returncode == 77, crashed.stderr
    halted = sage(root, "run", "--resume", rid)
    assert halted.returncode == 3, halted.stderr
    with ui(root) as console:
        client, csrf = _client(console)
        page = client.get("/operations").text
        assert f'data-run="{rid}"' in page and "Counter.charge" in page
        kind, text = _post(client, csrf, action="resolve", run=rid, step="Main:3", outcome="ok", value="41")
        assert (kind, text) == ("ok", f"recorded Main:3 of run {rid} as done; continue with `sage run --resume {rid}`")
        kind, text = _post(client, csrf, action="resolve", run=rid, step="Main:3", outcome="ok", value="41")
        assert kind == "refused" and "nothing was changed" in text
        client.close()
    assert "  3 tool Counter.charge destructive done 41" in sage(root, "runs", "show", rid).stdout


def test_a_runs_trace_timeline(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    trace = tmp_path / "trace.ndjson"
    paused = sage(root, "run", "--trace-file", str(trace))
    rid = re.search(r"^run id: (\S+)$", paused.stderr, re.M).group(1)   # its trace is linked under .sage/traces
    with ui(root) as console:
        client, _ = _client(console)
        assert f'href="/runs/{rid}/timeline"' in client.get(f"/runs/{rid}").text
        timeline = client.get(f"/runs/{rid}/timeline")
        assert timeline.status_code == 200 and "<svg" in timeline.text and ">Main<" in timeline.text
        assert "<script>console.log" not in timeline.text   # the tool result's markup is escaped there too
        assert client.get("/runs/20991231-000000-0000/timeline").status_code == 404
        client.close()


def test_secrets_are_masked_on_a_runs_page(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n\n[persistence]\n', encoding="utf-8")
    (root / "main.sg").write_text(
        'agent Main {\n    on start {\n        let key = unwrap_or(env("PAYMENTS_KEY"), "none");\n'
        '        print("connecting to postgresql://sage:hunter2-pw@db.internal/ledger with a key of {str_len(key)}");\n'
        '    }\n}\nrun Main;\n', encoding="utf-8")
    rid = sage(root, "runs", "submit").stdout.strip()
    done = sage(root, "worker", "--drain", PAYMENTS_KEY="sk-live-0123456789abcdef")   # its output is stored
    assert f"run {rid}: completed (exit 0)" in done.stderr, done.stderr
    with ui(root) as console:
        client, _ = _client(console)
        page = client.get(f"/runs/{rid}").text
        client.close()
    assert "sk-live-0123456789abcdef" not in page
    assert "<td>io</td><td>env</td>" in page and "<code>***</code>" in page   # the secret value read, never shown
    assert "hunter2-pw" not in page
    assert "postgresql://sage:****@db.internal/ledger with a key of 24" in page
