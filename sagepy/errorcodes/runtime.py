"""Runtime error codes: carried by errors raised while a program runs, shown in the report of an unhandled
error (`error[E201]: …`) and in test failures. `e.message` never contains the code."""
from .entry import ErrorCode

SECTION = ("Runtime errors", "Raised while a program runs. Like every Sage error they can be caught (`try`, "
           "`catch`, `on error`); an unhandled one is reported with its code, the agent and the place it was "
           "raised, and `sage run` exits 1.", [
    ErrorCode("E054", "no mock left for `divine`",
              """Under `sage test`, every `divine` (or `infer`) call takes the next `mock divine -> v;` answer
              of the test. When the queue is empty the call fails with `LLM error: no mock left for divine
              (E054)`, so a test never reaches a real model by accident. Add a mock, or run `sage test
              --real-llm` to let unmocked calls reach the configured model.""",
              file="main_test.sg", command="test",
              wrong="""\
test "summary" {
    let s = try divine("Summarise: it works");
    assert_eq(s, "works");
}
""",
              fixed="""\
test "summary" {
    mock divine -> "works";
    let s = try divine("Summarise: it works");
    assert_eq(s, "works");
}
"""),
    ErrorCode("E200", "integer overflow",
              """`Int` arithmetic is checked: a result outside the signed 64-bit range raises `integer
              overflow` instead of wrapping. `round`, `floor` and `ceil` of a `Float` that is not finite or
              out of the `Int` range raise it too.""",
              command="run",
              wrong="""\
agent Main {
    on start {
        let big = 9223372036854775807;
        print(big + 1);
    }
}

run Main;
""",
              fixed="""\
agent Main {
    on start {
        let big = 9223372036854775807.0;
        print(big + 1.0);
    }
}

run Main;
"""),
    ErrorCode("E201", "division by zero",
              """Integer `/` or `%` by zero. (`Float` division follows IEEE 754: `1.0 / 0.0` is `inf`.)""",
              command="run",
              wrong="""\
fn average(xs: List<Int>) -> Int {
    return sum(xs) / len(xs);
}

agent Main {
    on start {
        print(average([]));
    }
}

run Main;
""",
              fixed="""\
fn average(xs: List<Int>) -> Int {
    if len(xs) == 0 {
        return 0;
    }
    return sum(xs) / len(xs);
}

agent Main {
    on start {
        print(average([]));
    }
}

run Main;
"""),
    ErrorCode("E202", "unwrap of `None` or of the wrong `Result`",
              """`unwrap(None)`, `unwrap_result(Err(…))` and `unwrap_err(Ok(…))`. Prefer `match`,
              `unwrap_or` or `unwrap_or_else`, which say what happens in the other case.""",
              command="run",
              wrong="""\
agent Main {
    on start {
        let xs: List<Int> = [];
        print(unwrap(first(xs)));
    }
}

run Main;
""",
              fixed="""\
agent Main {
    on start {
        let xs: List<Int> = [];
        print(unwrap_or(first(xs), 0));
    }
}

run Main;
"""),
    ErrorCode("E203", "`await` timed out",
              """`await h timeout(ms)` raises a `Timeout` error `await timed out after <ms> ms` when the agent's
              result is not fixed in time. The awaited agent keeps running; awaiting it again may still
              succeed.""",
              command="run",
              wrong="""\
agent Slow {
    on start {
        sleep_ms(2000);
        yield("done");
    }
}

agent Main {
    on start {
        let s = summon Slow {};
        print(try await s timeout(50));
    }
}

run Main;
""",
              fixed="""\
agent Slow {
    on start {
        sleep_ms(2000);
        yield("done");
    }
}

agent Main {
    on start {
        let s = summon Slow {};
        let result = await s timeout(50) catch(e) {
            "still working ({e.kind})"
        };
        print(result);
    }
}

run Main;
"""),
    ErrorCode("E204", "send to a finished agent, or mailbox closed",
              """`send` to an agent that has ended, or whose mailbox is closed. An agent blocked in `receive()`
              or `send` when the program or test ends gets this error too, and then ends quietly."""),
    ErrorCode("E205", "call depth exceeded",
              """More nested Sage calls than the interpreter allows (at least 5,000, in every agent): usually a
              recursion without a base case.""",
              command="run",
              wrong="""\
fn countdown(n: Int) -> Int {
    return countdown(n - 1);
}

agent Main {
    on start {
        print(countdown(10));
    }
}

run Main;
""",
              fixed="""\
fn countdown(n: Int) -> Int {
    if n <= 0 {
        return 0;
    }
    return countdown(n - 1);
}

agent Main {
    on start {
        print(countdown(10));
    }
}

run Main;
"""),
    ErrorCode("E206", "invalid argument to a builtin",
              """A builtin called with an argument it cannot use: a chunk size or range step of 0 or less,
              `clamp` bounds in the wrong order, a negative exponent for `pow`, or `retry(n)` with `n` below
              1. The message names the builtin and the reason.""",
              command="run",
              wrong="""\
agent Main {
    on start {
        print(range_step(0, 10, 0));
    }
}

run Main;
""",
              fixed="""\
agent Main {
    on start {
        print(range_step(0, 10, 5));
    }
}

run Main;
"""),
    ErrorCode("E207", "value conversion failed",
              """A JSON value that does not fit the Sage type it must become: `json_decode`, or the return
              value of an extern function. The message names the expected type, the JSON path and the
              value.""",
              command="run",
              wrong="""\
agent Main {
    on start {
        let n = try json_decode::<Int>('"seven"');
        print(n);
    }
}

run Main;
""",
              fixed="""\
agent Main {
    on start {
        let n = try json_decode::<Int>('7');
        print(n);
    }
}

run Main;
"""),
    ErrorCode("E208", "extern function raised an exception",
              """A Python function bound to an `extern fn` raised an exception other than `sagepy.SageFail`:
              `extern fn 'f' raised <Type>: <message>`. To signal an ordinary failure, declare the extern
              `fails` and raise `sagepy.SageFail("message")`.""",
              command="run",
              wrong="""\
extern fn ratio(a: Int, b: Int) -> Int;

agent Main {
    on start {
        print(ratio(1, 0));
    }
}

run Main;
// file: grove.toml
[extern]
modules = ["py/maths.py"]
# file: py/maths.py
def ratio(a, b):
    return a // b
""",
              fixed="""\
extern fn ratio(a: Int, b: Int) -> Int fails;

agent Main {
    on start {
        print(ratio(1, 0) catch(e) { -1 });
    }
}

run Main;
// file: grove.toml
[extern]
modules = ["py/maths.py"]
# file: py/maths.py
from sagepy import SageFail


def ratio(a, b):
    if b == 0:
        raise SageFail("ratio of zero")
    return a // b
"""),
    ErrorCode("E209", "restart intensity exceeded",
              """A supervisor restarted its children more than `[supervision] max_restarts` times (default 5)
              within `within_seconds` (default 60), and gives up: `restart intensity exceeded`. A child that
              fails at once on every start is the usual cause; `restart: Transient` restarts a child only
              when it fails, `Temporary` never.""",
              command="run",
              wrong="""\
agent Worker {
    on start {
        fail "no database";
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Permanent }
    }
}

run Root;
""",
              fixed="""\
agent Worker {
    on start {
        fail "no database";
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Temporary }
    }
}

run Root;
"""),
    ErrorCode("E210", "message violates the protocol's order",
              """Runtime protocol checking is planned: sagepy does not raise this error yet."""),
    ErrorCode("E211", "test timed out",
              """A test ran longer than its limit (`--timeout-ms`, else `[test] timeout_ms`, else 10,000 ms).
              This is a test failure, not a Sage error value: the test's agents are stopped and its MCP
              requests cancelled."""),
    ErrorCode("E213", "replay miss",
              """A run replayed from a cassette (`sage run --replay FILE`, `sage eval --replay DIR`, `sage test
              --replay FILE` or a test's `replay "file";`) made a model turn or tool call that the cassette has no
              recorded outcome for: the program, its prompts or its arguments changed since the recording. The
              run stops (exit 1) and the message shows the closest recorded request of the same kind and
              target as a unified diff. Record the run again (`--record`) once the change is intended."""),
    ErrorCode("E212", "no match arm",
              """No arm of a `match` fits the value. The checker requires every `match` to be exhaustive
              (E029), so this is rare; the message shows the value."""),
])
