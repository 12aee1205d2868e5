"""`[llm] requests_per_minute` shared by every process on one store (SPEC §23 "Limits"): two `sage worker`s
and a `sage run` on one SQLite file, and on one PostgreSQL database, send their requests to the local
chat-completions server, which logs when each arrives. The bucket holds one second's worth of the limit
(600 a minute: 10, refilled at 10 a second), so in no window of the arrival log may more requests have arrived
than the bucket allows; every run still completes (waiting never fails a call)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from strict_server import StrictChatServer

REPO = Path(__file__).resolve().parent.parent.parent
PER_MINUTE = 600
BURST, RATE = PER_MINUTE / 60, PER_MINUTE / 60   # the bucket's capacity, and its refill per second
TURNS = 20                                       # each of three runs: 60 requests together
PROGRAM = """\
    agent Main {
        on start {
            for n in [%s] {
                print(try divine("turn {n}"));
            }
        }
    }
    run Main;
    """ % ", ".join(str(n) for n in range(1, TURNS + 1))


def environment(root: Path, state_url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", SAGE_API_KEY="sk-test", SAGE_CACHE_DIR=str(root / "cache"))
    if state_url is not None:
        env["SAGE_STATE_URL"] = state_url
    return env


def share_one_limit(root: Path, state_url: str | None) -> list[float]:
    """The arrival times of the 60 requests of two worker runs and one `sage run`."""
    root.mkdir(parents=True, exist_ok=True)
    with StrictChatServer(["ok"] * (3 * TURNS)) as srv:
        (root / "grove.toml").write_text(
            f'[project]\nname = "limits"\nentry = "main.sg"\n\n[llm]\nurl = "{srv.url}"\nmodel = "gpt-test"\n'
            f"requests_per_minute = {PER_MINUTE}\n\n[persistence]\n", encoding="utf-8")
        (root / "main.sg").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
        env = environment(root, state_url)

        def sage(*args: str) -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-m", "sagepy", *args], cwd=root, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2):
            submitted = sage("runs", "submit")
            assert submitted.wait(60) == 0, submitted.stderr.read()
        processes = [sage("worker", "--drain", "--poll-ms", "50"), sage("worker", "--drain", "--poll-ms", "50"),
                     sage("run")]
        said = []
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            said.append(err)
        assert srv.errors == [] and len(srv.requests) == 3 * TURNS, said
        arrivals = sorted(srv.arrivals)
    listed = json.loads(subprocess.run([sys.executable, "-m", "sagepy", "runs", "list", "--format", "json"],
                                       cwd=root, env=env, capture_output=True, text=True, timeout=60).stdout)
    assert [r["status"] for r in listed] == ["completed"] * 3
    assert all(r["usage"]["turns"] == TURNS for r in listed)
    return arrivals


def assert_within_the_bucket(arrivals: list[float]) -> None:
    """Between any two arrivals, at most what the bucket held at the start plus what it refilled meanwhile
    (one more for the clocks: the bucket's and the server's read the time a little apart)."""
    worst = max(j - i + 1 - (BURST + RATE * (arrivals[j] - arrivals[i]))
                for i in range(len(arrivals)) for j in range(i, len(arrivals)))
    assert worst <= 1, f"{worst:.1f} requests more than the bucket allows in some window"


def test_the_window_check_sees_a_burst() -> None:
    """The check itself: 60 requests at once break it, 60 spread at the bucket's rate do not."""
    try:
        assert_within_the_bucket([0.0] * 60)
    except AssertionError:
        pass
    else:
        raise AssertionError("a burst of 60 passed the window check")
    assert_within_the_bucket([max(0.0, (k - BURST) / RATE) for k in range(60)])


def test_workers_and_a_run_share_the_limit_through_sqlite(tmp_path: Path) -> None:
    assert_within_the_bucket(share_one_limit(tmp_path / "sqlite", None))


def test_workers_and_a_run_share_the_limit_through_postgres(tmp_path: Path, pg_url: str) -> None:
    assert_within_the_bucket(share_one_limit(tmp_path / "postgres", pg_url))


def test_max_concurrent_requests_bounds_the_requests_in_flight(tmp_path: Path) -> None:
    """Four agents ask at once; with `max_concurrent_requests = 2` the server never has more than two
    requests in hand. Each answer waits until a second request is in hand (so two are, at some point), then
    takes a moment in which a third could arrive."""
    import threading
    import time
    in_flight, most, changed = [0], [0], threading.Condition()

    def slow(body: dict) -> str:
        with changed:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
            changed.notify_all()
            changed.wait_for(lambda: most[0] >= 2, timeout=30)
        time.sleep(0.2)
        with changed:
            in_flight[0] -= 1
        return "ok"
    program = """\
        agent Asker {
            on start {
                yield(try divine("one"));
            }
        }
        agent Main {
            on start {
                let askers = [summon Asker {}, summon Asker {}, summon Asker {}, summon Asker {}];
                for a in askers {
                    print(try await a);
                }
            }
        }
        run Main;
        """
    with StrictChatServer([slow] * 4) as srv:
        (tmp_path / "grove.toml").write_text(
            f'[project]\nentry = "main.sg"\n\n[llm]\nurl = "{srv.url}"\nmodel = "gpt-test"\n'
            "max_concurrent_requests = 2\n", encoding="utf-8")
        (tmp_path / "main.sg").write_text(textwrap.dedent(program), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "sagepy", "run"], cwd=tmp_path,
                              env=environment(tmp_path, None), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "ok\n" * 4 and len(srv.requests) == 4
    assert most[0] == 2
