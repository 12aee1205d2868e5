"""Program end (SPEC §4.5, §4.6): an E204 caused by shutdown ends its agent quietly, whatever is still queued;
a failure nobody awaited is still reported, supervised `Temporary` children included."""
from __future__ import annotations

from pathlib import Path

from test_runtime_features import sage, write

RELAY = """\
    agent Sink {
        on message(n: Int) {
            sleep_ms(40);
        }
    }
    agent Relay {
        sink: Agent<Sink>
        on message(n: Int) {
            try send(self.sink, n);
        }
        on stop {
            print("relay stopped");
        }
    }
    agent Main {
        on start {
            let s = summon Sink {};
            let r = summon Relay { sink: s };
            for i in range(0, 64) {
                try send(r, i);
            }
            print("done");
            yield(3);
        }
    }
    run Main;
    """

PRODUCERS = """\
    agent Sink {
        on message(n: Int) {
            sleep_ms(40);
        }
    }
    agent Producer {
        sink: Agent<Sink>
        on start {
            for i in range(0, 100) {
                try send(self.sink, i);
            }
        }
        on error(e) {
            print("on error must not run: {e}");
        }
    }
    agent Main {
        on start {
            let s = summon Sink {};
            for i in range(0, 8) {
                let p = summon Producer { sink: s };
            }
            sleep_ms(100);
            print("done");
        }
    }
    run Main;
    """


def test_messages_left_queued_at_exit_end_quietly(tmp_path: Path) -> None:
    """A relay with a full mailbox, blocked sending to a slow sink when the program ends: it used to print
    `warning: … mailbox closed` once per queued message."""
    result = sage("run", "main.sg", cwd=write(tmp_path, {"main.sg": RELAY}))
    assert (result.returncode, result.stderr) == (3, "")
    assert result.stdout == "done\nrelay stopped\n"


def test_agents_blocked_in_send_at_exit_are_not_reported(tmp_path: Path) -> None:
    result = sage("run", "main.sg", cwd=write(tmp_path, {"main.sg": PRODUCERS}))
    assert (result.returncode, result.stdout, result.stderr) == (0, "done\n", "")


def test_a_failed_temporary_child_is_reported_at_exit(tmp_path: Path) -> None:
    source = """\
        agent Flaky {
            on start {
                fail "flaky broke";
            }
        }
        agent Steady {
            on start {
                print("steady");
            }
        }
        supervisor Root {
            strategy: OneForOne
            children {
                Flaky { restart: Temporary }
                Steady { restart: Temporary }
            }
        }
        run Root;
        """
    result = sage("run", "main.sg", cwd=write(tmp_path, {"main.sg": source}))
    assert (result.returncode, result.stdout) == (0, "steady\n")
    assert result.stderr == "warning: agent Flaky#1 failed and was never awaited: flaky broke\n"


def test_a_restarted_child_failure_is_not_reported_again(tmp_path: Path) -> None:
    source = """\
        agent Once {
            @persistent tries: Int
            on waking {}
            on start {
                self.tries.set(self.tries.get() + 1);
                if self.tries.get() < 2 {
                    fail "first try";
                }
                print("try {self.tries.get()}");
            }
        }
        supervisor Root {
            strategy: OneForOne
            children {
                Once { restart: Transient }
            }
        }
        run Root;
        """
    result = sage("run", "main.sg", cwd=write(tmp_path, {"main.sg": source}))
    assert (result.returncode, result.stdout, result.stderr) == (0, "try 2\n", "")


def test_an_agent_sleeping_the_longest_int_is_still_asleep_at_exit(tmp_path: Path) -> None:
    """Found by the fuzz run: `sleep_ms(9223372036854775807)` was an internal OverflowError (past threading's
    longest wait); it sleeps, and the program ends without it."""
    source = """\
        agent Sleeper {
            on start {
                sleep_ms(9223372036854775807);
            }
        }
        agent Main {
            on start {
                let h = summon Sleeper {};
                try await h timeout(50) catch(e) { print("{e}"); };
                print("main done");
            }
        }
        run Main;
        """
    result = sage("run", "main.sg", cwd=write(tmp_path, {"main.sg": source}))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "Timeout: await timed out after 50 ms\nmain done\n"
