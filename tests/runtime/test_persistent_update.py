"""`self.f.update(fn)` (SPEC §4.8) as a user writes it: atomic across agents and processes, returns the new
value, and an error raised by `fn` leaves the field as it was (issue 18)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_runtime_features import REPO, sage, write

PERSISTENCE = '[project]\nentry = "main.sg"\n[persistence]\nbackend = "sqlite"\n'

COUNT = """\
    agent Main {
        @persistent count: Int
        on waking {}
        on start {
            for i in range(0, 5000) {
                self.count.update(|n: Int| n + 1);
            }
        }
    }
    run Main;
    """

READ = """\
    agent Main {
        @persistent count: Int
        on waking {}
        on start {
            print("count {self.count.get()}");
        }
    }
    run Main;
    """

FOUR_AGENTS = """\
    agent Counter {
        @persistent count: Int
        on waking {}
        on start {
            let last = 0;
            for i in range(0, 2500) {
                last = self.count.update(|n: Int| n + 1);
            }
            yield(last);
        }
    }
    agent Main {
        on start {
            let a = summon Counter {};
            let b = summon Counter {};
            let c = summon Counter {};
            let d = summon Counter {};
            let highest = max(max(try await a, try await b), max(try await c, try await d));
            print("highest {highest}");
        }
    }
    run Main;
    """


def test_two_processes_of_5000_updates_each_end_at_exactly_10000(tmp_path: Path) -> None:
    root = write(tmp_path, {"grove.toml": PERSISTENCE, "main.sg": COUNT, "read.sg": READ})
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    runs = [subprocess.Popen([sys.executable, "-m", "sagepy", "run", "main.sg"], cwd=root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for run in runs:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    assert sage("run", "read.sg", cwd=root).stdout == "count 10000\n"


@pytest.mark.parametrize("grove", [PERSISTENCE, '[project]\nentry = "main.sg"\n'], ids=["sqlite", "memory"])
def test_four_agents_of_one_process_lose_no_update(tmp_path: Path, grove: str) -> None:
    root = write(tmp_path, {"grove.toml": grove, "main.sg": FOUR_AGENTS})
    result = sage("run", "main.sg", cwd=root, timeout=600)
    assert (result.returncode, result.stdout) == (0, "highest 10000\n"), result.stderr


def test_update_returns_the_new_value_and_a_failing_function_changes_nothing(tmp_path: Path) -> None:
    source = """\
        record Tally { runs: Int, names: List<String> }
        agent Main {
            @persistent tally: Tally
            on waking {}
            on start {
                let t = self.tally.update(|old: Tally| Tally { runs: old.runs + 1, names: push(old.names, "a") });
                print("{t.runs} {t.names}");
                let refused = self.tally.update(|old: Tally| {
                    if old.runs > 0 { fail "no more"; }
                    return old;
                }) catch(e) { print("caught {e}"); t };
                let again = self.tally.update(|old: Tally| Tally { runs: old.runs + 10 / (old.runs - 1), names: [] })
                    catch(e) { print("caught {e}"); t };
                print("{self.tally.get().runs} {refused.runs} {again.runs}");
            }
        }
        run Main;
        """
    root = write(tmp_path, {"grove.toml": PERSISTENCE, "main.sg": source})
    result = sage("run", "main.sg", cwd=root)
    assert result.stdout == ('1 ["a"]\ncaught no more\ncaught Runtime error: division by zero\n1 1 1\n'), \
        result.stderr
    second = sage("run", "main.sg", cwd=root)
    assert second.stdout.startswith('2 ["a", "a"]\n'), second.stderr


def test_update_under_sage_test_uses_the_test_store(tmp_path: Path) -> None:
    source = """\
        agent Counter {
            @persistent count: Int
            on waking {}
            on start {
                yield(self.count.update(|n: Int| n + 5));
            }
        }
        test "update in a test" {
            let c = summon Counter {};
            assert_eq(try await c, 5);
            let d = summon Counter {};
            assert_eq(try await d, 10);
        }
        test "a fresh store per test" {
            assert_eq(try await summon Counter {}, 5);
        }
        """
    root = write(tmp_path, {"counter_test.sg": source})
    result = sage("test", "counter_test.sg", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
