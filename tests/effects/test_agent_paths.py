"""Agent paths (SPEC §14): the same on every execution of a program, whatever the threads' timing, and
carried by every trace event of an agent as `"path"`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

SUMMONS = """\
    agent Leaf {
        n: Int
        on start { sleep_ms(self.n % 3); yield(self.n); }
    }
    agent Worker {
        n: Int
        on start {
            let a = summon Leaf { n: self.n };
            let b = summon Leaf { n: self.n + 10 };
            yield((try await a) + (try await b));
        }
    }
    agent Main {
        on start {
            let workers: List<Agent<Worker>> = [];
            let i = 0;
            while i < 4 {
                workers = push(workers, summon Worker { n: i });
                i = i + 1;
            }
            let total = 0;
            for w in workers { total = total + (try await w); }
            trace(total);
            yield(0);
        }
    }
    run Main;
    """

SUPERVISED = """\
    agent Flaky {
        on start { fail "boom"; }
    }
    agent Steady {
        on start { yield(1); }
    }
    supervisor Inner {
        strategy: OneForOne,
        children {
            Steady { restart: Temporary }
        }
    }
    supervisor Sup {
        strategy: OneForOne,
        children {
            Inner { restart: Temporary }
            Flaky { restart: Transient }
        }
    }
    run Sup;
    """


def traced_run(root: Path, source: str, max_restarts: int = 3) -> tuple[int, list[dict]]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "grove.toml").write_text(f'[project]\nentry = "main.sg"\n[supervision]\nmax_restarts = {max_restarts}\n')
    (root / "main.sg").write_text(textwrap.dedent(source))
    trace = root / "trace.jsonl"
    if trace.exists():
        trace.unlink()
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "sagepy", "run", "--trace-file", str(trace), "."], cwd=root, env=env,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, [json.loads(line) for line in trace.read_text().splitlines()]


def agent_events(events: list[dict]) -> list[tuple]:
    """(path, kind) of every agent event, in a timing-independent order."""
    return sorted((e["path"], e["kind"]) for e in events if e["agent"] is not None)


def test_summoned_agents_have_the_same_paths_on_every_run(tmp_path: Path) -> None:
    code, first = traced_run(tmp_path / "a", SUMMONS)
    assert code == 0
    _, second = traced_run(tmp_path / "b", SUMMONS)
    assert agent_events(first) == agent_events(second)
    spawned = sorted(e["path"] for e in first if e["kind"] == "agent.spawn")
    assert spawned == sorted([f"Main/Worker#{k}" for k in range(1, 5)]
                             + [f"Main/Worker#{k}/Leaf#{j}" for k in range(1, 5) for j in (1, 2)])
    assert all(e["path"] is not None for e in first if e["agent"] is not None)
    user = next(e for e in first if e["kind"] == "user")
    assert (user["agent"], user["path"]) == ("Main#0", "Main")


def test_supervisor_children_count_their_starts_including_restarts(tmp_path: Path) -> None:
    code, first = traced_run(tmp_path / "a", SUPERVISED)
    assert code == 1   # Flaky always fails: restart intensity exceeded
    _, second = traced_run(tmp_path / "b", SUPERVISED)
    assert agent_events(first) == agent_events(second)
    spawned = [e["path"] for e in first if e["kind"] == "agent.spawn"]
    assert sorted(spawned) == sorted(["Sup/Inner#1/Steady#1"] + [f"Sup/Flaky#{k}" for k in range(1, 5)])
