"""Fallibility and contexts (SPEC §3.4, §3.5, §3.7): E013-E017, E024, E038, E053."""
from __future__ import annotations

import pytest
from check_helpers import check_files, codes

CASES = {
    "uncovered fallible operations in a handler": ("""\
fn risky() -> Int fails { fail "x"; }
agent W { on start { yield(1); } }
agent A receives Int {
    use Http
    on start {
        let a = risky();
        let b = read_file("f");
        let c = divine("p");
        let h = summon W {};
        let d = await h;
        send(h, 1);
        let e = Http.get("u");
        let g = json_decode::<Int>("1");
        let m = mcp_connect('{}');
        let r = retry(2) { 1 };
        let t = parse_timestamp("x", "%Y");
        yield(1);
    }
}
""", [("E013", 6), ("E013", 7), ("E013", 8), ("E013", 10), ("E013", 11), ("E035", 11), ("E013", 12),
      ("E013", 13), ("E013", 14), ("E013", 15), ("E013", 16)]),
    "covered by try, catch and assert_fails": ("""\
fn risky() -> Int fails { fail "x"; }
fn plain() -> Int {
    let a = risky() catch { 0 };
    let b = catch risky() { 1 };
    let c = (try risky()) catch { 2 };
    return a + b + c;
}
fn chained() -> Int {
    return risky() catch { risky() } catch { 3 };
}
agent A {
    on start {
        let x = try risky() + str_len(try read_file("f"));
        assert_fails(risky());
        yield(1);
    }
}
""", [("E050", 14)]),
    "closure bodies are not covered by an outer try": ("""\
fn risky(x: Int) -> Int fails { fail "x"; }
agent A {
    on start {
        let ys = try map([1], |x: Int| risky(x));
        let zs = map([1], |x: Int| try risky(x));
        yield(1);
    }
}
""", [("E013", 4)]),
    "fallible call in an interpolation and in a catch fallback": ("""\
fn risky() -> String fails { fail "x"; }
fn f() -> String {
    let s = "value: {risky()}";
    return risky() catch { risky() };
}
""", [("E013", 3), ("E013", 4)]),
    "try and fail outside a fallible context": ("""\
fn risky() -> Int fails { fail "x"; }
fn plain() -> Int {
    let a = try risky();
    fail "no";
}
const C: Int = try risky();
""", [("E014", 3), ("E014", 4), ("E014", 6), ("E048", 6)]),
    "closures inherit the context": ("""\
fn risky() -> Int fails { fail "x"; }
fn plain() -> Int {
    let f = || try risky();
    return 1;
}
fn fallible() -> Int fails {
    let g = || try risky();
    return g();
}
""", [("E014", 3)]),
    "catch fallback type": ("""\
fn risky() -> Int fails { fail "x"; }
fn f() -> Int {
    let a = risky() catch { "zero" };
    let b = risky() catch(e) { e.message };
    let c = risky() catch { return 0; };
    let d = risky() catch { fail_soft() };
    return a;
}
fn fail_soft() -> Int { return 0; }
""", [("E015", 3), ("E015", 4)]),
    "on stop and on resting": ("""\
fn risky() -> Int fails { fail "x"; }
agent A {
    on start { yield(1); }
    on stop {
        let a = try risky();
        let b = risky() catch { 0 };
        let c = (try risky()) catch { 0 };
        yield(2);
    }
}
agent B {
    on start { yield(1); }
    on resting { fail "late"; }
}
""", [("E016", 5), ("E017", 8), ("E016", 13)]),
    "return, break, continue and yield out of place": ("""\
fn f() -> Int {
    break;
    yield(1);
    return 1;
}
agent A {
    on start {
        continue;
        return;
    }
}
fn g() -> Int {
    let h = |x: Int| { return x; };
    loop {
        match 1 {
            1 => break,
            _ => continue,
        }
    }
    return h(1);
}
""", [("E024", 2), ("E024", 3), ("E024", 8), ("E024", 9)]),
    "tool calls where they are not allowed": ("""\
fn f() -> Unit {
    let r = Http.get("u") catch { HttpResponse { status: 0, body: "", headers: {} } };
}
agent A {
    on start {
        let s = try Shell.run("ls");
        yield(1);
    }
}
agent B {
    use Shell
    on start {
        let g = |c: String| Shell.run(c) catch { ShellResult { exit_code: 1, stdout: "", stderr: "" } };
        let s = try Shell.run("ls");
        yield(s.exit_code);
    }
}
""", [("E038", 2), ("E038", 6)]),
    "checkpoint outside handlers": ("""\
fn f() -> Unit {
    checkpoint();
}
agent A {
    @persistent n: Int
    on start {
        checkpoint();
        yield(self.n.get());
    }
}
""", [("E053", 2)]),
    "retry body is a fallible context and its kinds are checked": ("""\
fn risky() -> Int fails { fail "x"; }
fn f() -> Int {
    return retry(3, delay: 10, on: [Tool, Bogus]) { try risky() } catch { 0 };
}
""", [("E010", 3)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_effects(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected


def test_e013_message_and_hint(tmp_path):
    found = check_files(tmp_path, {"main.sg": """\
agent A {
    use Fs
    on start {
        let s = Fs.read("x");
        yield(s);
    }
}
"""}, "main.sg")
    assert len(found) == 1
    d = found[0]
    assert d.code == "E013"
    assert d.message == "fallible call `Fs.read` must be covered by `try` or `catch`"
    assert d.hint == "write `try Fs.read(…)`, or add `catch { … }`"
    assert d.span[:2] == (4, 17)
