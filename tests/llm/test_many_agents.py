"""Many model calls in flight at once (issue 32): a thousand agents in one `sage run`, each with its own
requests, against a server that holds every request for a while; and the lanes' rule that waiting for a
connection is not part of a request's timeout."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from latency_server import LatencyServer

from sagepy.net import Lanes

FAN = """\
agent Asker {
    n: Int

    on start {
        let first = try divine("first question of {self.n}");
        let second = try divine("second question of {self.n}");
        yield(str_len(first) + str_len(second));
    }
}

agent Main {
    on start {
        let askers = [];
        for i in range(0, 1000) {
            askers = push(askers, summon Asker { n: i });
        }
        let total = 0;
        let failed = 0;
        for a in askers {
            total = total + (await a catch { failed = failed + 1; 0 });
        }
        print("answered {total} failed {failed}");
    }
}

run Main;
"""


def test_a_thousand_agents_each_asking_twice_all_get_their_answers(tmp_path: Path):
    (tmp_path / "main.sg").write_text(FAN, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAGE_", "OPENAI_"))}
    with LatencyServer(200, reply="ok") as server:
        env.update(SAGE_LLM_URL=server.url, SAGE_API_KEY="test-key", SAGE_MODEL="test-model")
        done = subprocess.run([sys.executable, "-m", "sagepy", "run", "main.sg"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        prompts = sorted(server.prompts)
    assert (done.returncode, done.stdout, done.stderr) == (0, "answered 4000 failed 0\n", "")
    # every agent's two questions reached the server (a transient connection failure may be retried, §4.10)
    assert sorted(set(prompts)) == sorted(f"{which} question of {n}" for n in range(1000)
                                          for which in ("first", "second"))


def test_waiting_for_a_lane_is_not_part_of_the_request_timeout():
    # One lane, eight requests of 0.5 s each with a 3 s timeout: the last waits about 3.5 s for the lane,
    # longer than its timeout, and still gets its answer, since its timeout starts when it is sent.
    lanes = Lanes(1)
    outcomes: list[object] = []
    with LatencyServer(500) as server:
        def ask() -> None:
            try:
                with lanes.lane(server.url) as client:
                    reply = client.post(server.url + "/chat/completions", json={"model": "m", "messages": []},
                                        timeout=3.0)
                outcomes.append(reply.status_code)
            except Exception as exc:  # noqa: BLE001 - the assertion below shows it
                outcomes.append(exc)

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        peak = server.peak_in_flight
    lanes.close(server.url)
    assert outcomes == [200] * 8
    assert peak == 1
