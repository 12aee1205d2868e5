"""Agents, messages, supervisors, protocols and effect handlers (SPEC §3.5)."""
from __future__ import annotations

import pytest
from check_helpers import codes

CASES = {
    "await type is the yield type whatever the declaration order": ("""\
agent Main {
    on start {
        let n: Int = try await summon Later {};
        let s: String = try await summon Later {};
        let u: Int = try await summon Quiet {};
        yield(0);
    }
}
agent Later { on start { yield(41); } }
agent Quiet { on start { print("nothing"); } }
run Main;
""", [("E018", 4), ("E018", 5)]),
    "yields must agree": ("""\
agent A {
    on start {
        if true { yield(1); }
        yield("two");
    }
    on error(e) { yield(false); }
}
""", [("E018", 4), ("E018", 6)]),
    "on start must yield on every path when the result is not Unit": ("""\
agent A {
    on start {
        if true {
            yield(1);
        }
    }
}
agent B {
    on start {
        if true { yield(1); } else { fail "no"; }
    }
}
""", [("E045", 2)]),
    "self and agent fields": ("""\
fn f() -> Int {
    return self.n;
}
agent A {
    n: Int
    on start {
        yield(self.m);
    }
}
""", [("E026", 2), ("W008", 5), ("E026", 7)]),
    "summon fields": ("""\
agent W {
    a: Int
    b: String
    @persistent c: Int
    on start { yield(self.a + str_len(self.b) + self.c.get()); }
}
fn f() -> Unit {
    let w1 = summon W { a: 1 };
    let w2 = summon W { a: 1, b: "x", c: 3 };   // a persistent field's starting value (SPEC §4.8)
    let w3 = summon W { a: 1, b: "x", d: 4 };
    let w4 = summon W { a: 1, a: 2, b: "x" };
    let w5 = summon W { a: "one", b: "x" };
}
""", [("E032", 8), ("E032", 10), ("E032", 11), ("E018", 12)]),
    "await and send need agent handles": ("""\
fn f() -> Unit {
    let x = try await 5;
    try send("h", 1);
}
""", [("E014", 2), ("E033", 2), ("E014", 3), ("E033", 3)]),
    "messages": ("""\
record Ping { n: Int }
agent Sink receives Int {
    on start {
        let n = receive();
        yield(n + 1);
    }
}
agent Echo {
    on message(p: Ping) { reply(p); }
}
agent A {
    on start {
        let s = summon Sink {};
        let e = summon Echo {};
        try send(s, 1);
        try send(s, "one");
        try send(e, Ping { n: 1 });
        try send(e, 2);
        let r = receive();
        reply(1);
        yield(0);
    }
}
fn f() -> Unit {
    let r = receive();
}
""", [("E035", 16), ("E035", 18), ("E035", 19), ("E073", 20), ("E035", 25)]),
    "persistent field types": ("""\
enum Good { Idle, Busy(Int) }
enum Bad { Busy(Int), Idle }
record Rec { xs: List<Int>, m: Map<String, Option<Int>> }
agent W { on start { yield(1); } }
agent A {
    @persistent a: Int
    @persistent b: Good
    @persistent c: Rec
    @persistent d: Bad
    @persistent e: Fn(Int) -> Int
    @persistent f: Agent<W>
    @persistent g: Result<Int, String>
    @persistent h: Error
    on start {
        print("{self.a} {self.b} {self.c} {self.d} {self.e} {self.f} {self.g} {self.h}");
    }
}
""", [("E052", 9), ("E052", 10), ("E052", 11), ("E052", 12), ("E052", 13)]),
    "persistent update: Fn(T) -> T in, T out (SPEC §4.8)": ("""\
agent A {
    @persistent n: Int
    @persistent s: String
    on waking {}
    on start {
        let a: Int = self.n.update(|x: Int| x + 1);
        let b: String = self.n.update(|x: Int| x + 1);
        let c = self.n.update(|x: String| x);
        let d = self.n.update(|x: Int| "text");
        let e = self.n.update();
        let f = self.n.update(|x: Int| x, 2);
        let g = self.s.update(|x: String| x ++ "!");
        let h = self.n.updates(|x: Int| x);
        print("{a} {b} {c} {d} {e} {f} {g} {h}");
    }
}
""", [("E018", 7), ("E018", 8), ("E018", 8), ("E018", 9), ("E020", 10), ("E020", 11), ("E021", 13)]),
    "persistent update: fallible operations in its function are E066, nowhere else (SPEC §4.8)": ("""\
fn risky() -> Int fails { fail "x"; }
agent W { on start { yield(1); } }
agent A {
    use Http
    @persistent n: Int
    on waking {}
    on start {
        let w = summon W {};
        let before = try risky();
        let a = self.n.update(|x: Int| x + before);
        let b = self.n.update(|x: Int| x + (try await w));
        let c = self.n.update(|x: Int| x + (retry(2) { 1 } catch { 0 }));
        let d = self.n.update(|x: Int| x + (json_decode::<Int>("1") catch { 0 }));
        let e = self.n.update(|x: Int| { send(w, 1) catch { () }; return x; });
        let f = self.n.update(|x: Int| x + Http.get("u").status);
        let g = risky() + self.n.update(|x: Int| x + 1);
        let k = self.n.update(|x: Int| x + risky());
        print("{a} {b} {c} {d} {e} {f} {g} {k}");
        yield(0);
    }
}
""", [("E066", 11), ("E066", 12), ("E066", 13), ("E035", 14), ("E066", 14), ("E066", 15), ("E013", 16),
      ("E066", 17)]),
    "waking without persistent fields, and fields never read": ("""\
agent A {
    unused: Int
    @persistent seen: Int
    on waking { print("up"); }
    on start { yield(1); }
}
""", [("W008", 2), ("W008", 3)]),
    "waking without persistent fields": ("""\
agent A {
    on waking { print("up"); }
    on start { yield(1); }
}
""", [("W006", 2)]),
    "entry agent rules": ("""\
agent Main {
    n: Int
    on message(m: Int) { print(m); }
}
run Main;
""", [("W008", 2), ("W007", 3), ("E041", 5), ("E041", 5)]),
    "run a function": ("""\
fn main() -> Unit { print(1); }
run main;
""", [("E041", 2)]),
    "supervisors": ("""\
agent W {
    n: Int
    @persistent p: Int
    on start { yield(self.n + self.p.get()); }
}
handler Fast handles Infer { model: "m", temperature: 0.5, max_tokens: 10 }
supervisor Empty {
    strategy: OneForOne,
    children { }
}
supervisor Top {
    strategy: OneForAll,
    children {
        W { restart: Permanent, handler Infer: Fast, n: 1 }
        W { n: 1, extra: 2 }
        W { }
        W { n: 1, p: 2 }
        W { n: 1, p: 2, p: 3 }
        Ghost { }
        Empty { }
        W { handler Infer: Slow, n: "x" }
    }
}
""", [("E060", 7), ("E062", 15), ("E062", 16), ("E062", 18), ("E061", 19), ("E018", 21), ("E072", 21)]),
    "protocols and effect handlers": ("""\
protocol Chat {
    Client -> Server: String
}
agent A follows Chat as Client { on start { yield(1); } }
agent B follows Chat as Judge { on start { yield(1); } }
agent C follows Talk as Client { on start { yield(1); } }
handler H1 handles Infer { model: 3 }
handler H2 handles Infer { color: "red" }
handler H3 handles Memory { model: "m" }
""", [("E071", 5), ("E070", 6), ("E075", 7), ("E075", 8), ("E075", 9)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_agents(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected


def test_valid_agent_program(tmp_path):
    source = """\
enum Cmd { Add(Int), Stop }
record Ping { n: Int }
agent Counter receives Cmd {
    total: Int
    on start {
        let sum = self.total;
        loop {
            match receive() {
                Add(n) => { sum = sum + n; },
                Stop => break,
            }
        }
        yield(sum);
    }
}
agent Echo {
    on message(p: Ping) { reply(Ping { n: p.n + 1 }); }
    on message(s: String) { print(s); }
    on stop { print("bye"); }
}
agent Main {
    @persistent runs: Int
    on start {
        let c = summon Counter { total: 1 };
        try send(c, Add(2));
        try send(c, Stop);
        let n: Int = try await c timeout(1000);
        let e = summon Echo {};
        try send(e, Ping { n: n });
        self.runs.set(self.runs.get() + 1);
        yield(0);
    }
    on error(e) {
        print_err("failed: {e}");
        yield(1);
    }
}
run Main;
"""
    assert codes(tmp_path, source) == []
