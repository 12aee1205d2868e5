"""The web console (`sage ui`) on a big store: the runs page of a store with 10,000 runs (paged, 50 a page), the
page of a run whose journal has 5,000 steps, and how long a change of the store takes to reach the browser.

A SQLite store is filled through the store interface (10,000 ended runs with their queue rows, and one run
with 5,000 journal steps and 200 output lines), `sage ui` serves it, and an HTTP client with the token's cookie
fetches each page; the baseline is the console's stylesheet from the same server (a request that reads no
store). For live updates, a headless Chromium (the system's, through Playwright) has the run's page open; the
bench appends an output line to the store and waits until the page has fetched and shown it, `--live N`
times. Targets: runs page ≤ 0.3 s, run page ≤ 0.5 s, live update ≤ 1 s.

    python bench/console.py [--runs N] [--live N]
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import REPO, bench_env, sage_command  # noqa: E402

sys.path.insert(0, str(REPO))
RUNS, STEPS = 10_000, 5_000


def fill(root: Path) -> str:
    from sagepy.store.base import DONE, RunRecord, StepRecord
    from sagepy.store.queue import RunInfo
    from sagepy.store.sqlite import SqliteStore
    (root / ".sage").mkdir(parents=True)
    store = SqliteStore(str(root / ".sage" / "state.db"))
    start = time.time() - RUNS * 60
    for i in range(RUNS):
        rid = time.strftime("%Y%m%d-%H%M%S", time.gmtime(start + i * 60)) + f"-{i % 65536:04x}"
        store.create_run(RunRecord(rid, start + i * 60, "completed" if i % 7 else "failed", 0 if i % 7 else 1,
                                   "main.sg"))
        store.set_run_info(rid, RunInfo(queue="default" if i % 3 else "nightly", version="abc123abc123",
                                        args=[str(i)]))
    big = "20991231-235959-beef"
    store.create_run(RunRecord(big, time.time(), "paused", 5, "main.sg"))
    store.set_run_info(big, RunInfo(args=["big"]))
    steps = [StepRecord("Main" if i % 2 else "Main/Worker#1", i // 2 + 1, "tool", "Counter.echo", f"{i:064x}",
                        "read_only", DONE, {"text": f"result {i}", "n": i}) for i in range(STEPS)]
    store.record_steps(big, steps)
    for i in range(200):
        store.append_output(big, "stdout", f"line {i}")
    store.close()
    return big


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(root: Path, cache: Path) -> tuple[subprocess.Popen, str]:
    (root / "grove.toml").write_text('[project]\nentry = "main.sg"\n\n[persistence]\n', encoding="utf-8")
    (root / "main.sg").write_text('agent Main { on start { print("hi"); } }\nrun Main;\n', encoding="utf-8")
    process = subprocess.Popen([*sage_command(), "ui", "--no-open", "--port", str(free_port())], cwd=root,
                               env=bench_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 0.5)[0]:
            line = process.stdout.readline()
            if line.startswith("sage ui: "):
                return process, line.split(" ", 2)[2].strip()
    process.kill()
    raise SystemExit(f"sage ui did not start: {process.communicate()[1]}")


def timed_get(client, path: str, rounds: int, must: str) -> list[float]:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        response = client.get(path)
        samples.append(time.perf_counter() - t0)
        if response.status_code != 200 or must not in response.text:
            raise SystemExit(f"GET {path}: HTTP {response.status_code}")
    return samples


def live(url: str, origin: str, big: str, root: Path, rounds: int) -> list[float]:
    """`rounds` output lines, each until the page shows it, then one status change (the last sample)."""
    sys.path.insert(0, str(REPO / "tests"))
    from browser import close, launch
    from sagepy.store.sqlite import SqliteStore
    driver, chromium = launch()
    store = SqliteStore(str(root / ".sage" / "state.db"))
    samples = []
    try:
        page = chromium.new_page()
        page.goto(url)
        page.goto(f"{origin}/runs/{big}")
        page.wait_for_timeout(1000)   # the event stream is open
        for i in range(rounds):
            marker = f"live line {i}"
            t0 = time.perf_counter()
            store.append_output(big, "stdout", marker)
            page.locator("#output", has_text=marker).wait_for(timeout=30_000)
            samples.append(time.perf_counter() - t0)
        from sagepy.store.leases import lease_is_stale
        t0 = time.perf_counter()   # a status change: the page is fetched again (its first 500 steps)
        store.cancel_run(big, lease_is_stale)
        page.locator("#run-status", has_text="cancelled").wait_for(timeout=30_000)
        samples.append(time.perf_counter() - t0)
    finally:
        store.close()
        close(driver, chromium)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="requests per page (default 20)")
    parser.add_argument("--live", type=int, default=10, help="live updates measured (default 10)")
    options = parser.parse_args()
    import httpx
    with tempfile.TemporaryDirectory(prefix="sagepy-bench-console-") as tmp:
        root, cache = Path(tmp) / "project", Path(tmp) / "cache"
        root.mkdir()
        t0 = time.perf_counter()
        big = fill(root)
        print(f"store: {RUNS} runs and one of {STEPS} steps, filled in {time.perf_counter() - t0:.1f} s")
        process, url = start(root, cache)
        origin = url.split("/?", 1)[0]
        try:
            with httpx.Client(base_url=origin, timeout=60) as client:
                token = url.rsplit("token=", 1)[1]
                client.get("/", params={"token": token})
                timed_get(client, "/", 3, "data-run")   # warm
                figures = {}
                for _ in range(options.runs):   # interleaved: baseline, then each page, every round
                    for label, path, must in (("baseline (stylesheet)", "/static/console.css", "body"),
                                              ("runs page (10,000 runs, page 1)", "/", "data-run"),
                                              ("runs page, filtered (status=failed)", "/?status=failed", "data-run"),
                                              ("runs page 150", "/?page=150", "data-run"),
                                              (f"run page ({STEPS} steps)", f"/runs/{big}", "Journal")):
                        figures.setdefault(label, []).extend(timed_get(client, path, 1, must))
            updates = live(url, origin, big, root, options.live)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)
    base = statistics.median(figures["baseline (stylesheet)"])
    print(f"{'':40} {'median':>9} {'p95':>9} {'× baseline':>11}")
    for label, samples in figures.items():
        samples.sort()
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        median = statistics.median(samples)
        print(f"{label:40} {median * 1000:7.1f}ms {p95 * 1000:7.1f}ms {median / base:10.1f}×")
    status = updates.pop()
    updates.sort()
    print(f"{'live update: an output line':40} {statistics.median(updates) * 1000:7.1f}ms "
          f"{updates[-1] * 1000:7.1f}ms (max)")
    print(f"{'live update: a status change':40} {status * 1000:7.1f}ms (one sample)")
    print("targets: runs page ≤ 300 ms, run page ≤ 500 ms, live update ≤ 1000 ms")


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
