"""Agent paths (SPEC §14) as the journal records them: the entry agent's name, `<parent>/<Agent>#<k>` with k
counting the parent's summons, `<supervisor>/<Child>#<k>` with k counting the child's starts, restarts
included — unique and the same on every execution."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_paths(root: Path, source: str) -> tuple[subprocess.CompletedProcess, list[tuple[str, int]]]:
    (root / "src").mkdir(parents=True)
    (root / "grove.toml").write_text('[project]\nname = "paths"\n\n[persistence]\n', encoding="utf-8")
    (root / "src" / "main.sg").write_text(textwrap.dedent(source), encoding="utf-8")
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "sagepy", "run"], cwd=root, env=env, capture_output=True, text=True,
                       timeout=60)
    with sqlite3.connect(root / ".sage" / "state.db") as db:
        return r, db.execute("SELECT path, number FROM steps ORDER BY path, number").fetchall()


def test_summoned_agents_count_their_parents_summons(tmp_path: Path) -> None:
    r, steps = run_paths(tmp_path, """
        agent Leaf {
            on start { let t = now_ms(); }
        }
        agent Branch {
            on start {
                let t = now_ms();
                let a = summon Leaf {};
                let b = summon Leaf {};
                try await a;
                try await b;
            }
        }
        agent Main {
            on start {
                let a = summon Branch {};
                let b = summon Leaf {};
                let c = summon Branch {};
                try await a;
                try await b;
                try await c;
                let t = now_ms();
            }
        }
        run Main;
    """)
    assert r.returncode == 0, r.stderr
    assert steps == [("Main", 1), ("Main/Branch#1", 1), ("Main/Branch#1/Leaf#1", 1), ("Main/Branch#1/Leaf#2", 1),
                     ("Main/Branch#3", 1), ("Main/Branch#3/Leaf#1", 1), ("Main/Branch#3/Leaf#2", 1),
                     ("Main/Leaf#2", 1)]


def test_supervisor_children_count_their_starts_and_stay_unique(tmp_path: Path) -> None:
    r, steps = run_paths(tmp_path, """
        agent Worker {
            name: String
            on start {
                let started = now_ms();
                let marker = "{self.name}.failed";
                if self.name != "c" && !file_exists(marker) {
                    if self.name == "a" {
                        sleep_ms(300);   // the second child fails first, yet restarts in its own slot
                    }
                    try write_file(marker, "once");
                    let missing = try read_file("missing.txt");
                }
                print("{self.name} done");
            }
        }
        supervisor Inner {
            strategy: OneForOne
            children {
                Worker { restart: Transient  name: "c" }
            }
        }
        supervisor Sup {
            strategy: OneForOne
            children {
                Worker { restart: Transient  name: "a" }
                Worker { restart: Transient  name: "b" }
                Inner { restart: Transient }
            }
        }
        run Sup;
    """)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["a done", "b done", "c done"]
    # the first starts of the two Worker children are #1 and #2, their restarts #3 and #4 in declaration order
    assert sorted({path for path, _ in steps}) == ["Sup/Inner#1/Worker#1", "Sup/Worker#1", "Sup/Worker#2",
                                                    "Sup/Worker#3", "Sup/Worker#4"]
    # now_ms, file_exists, sleep_ms, write_file, read_file (failed)
    assert [n for path, n in steps if path == "Sup/Worker#1"] == [1, 2, 3, 4, 5]
    with sqlite3.connect(tmp_path / ".sage" / "state.db") as db:
        marker = db.execute("SELECT args_hash FROM steps WHERE path = 'Sup/Worker#3' AND number = 2").fetchone()[0]
    assert marker == hashlib.sha256(b'["a.failed"]').hexdigest()
