"""Types (SPEC §3.2, §3.3): mismatches, operators, calls, fields, tuples, generics and inference."""
from __future__ import annotations

import pytest
from check_helpers import check_files, codes

CASES = {
    "let annotation": ("""\
fn f() -> Unit {
    let x: Int = "a";
    let y: Float = 1;
    let z: List<Int> = [];
    let w: Option<String> = None;
}
""", [("E018", 2), ("E018", 3)]),
    "argument, return and trailing value": ("""\
fn g(x: Int) -> Int { return x; }
fn f() -> String {
    let a = g("s");
    return 1;
}
fn h() -> Bool { 5 }
""", [("E018", 3), ("E018", 4), ("E018", 6)]),
    "list elements and map keys": ("""\
fn f() -> Unit {
    let xs = [1, "two"];
    let m = {1.5: "x"};
    let t: Map<Float, Int> = {};
}
""", [("E018", 2), ("E018", 3), ("E018", 4)]),
    "operators": ("""\
fn f() -> Unit {
    let a = 1 + 1.5;
    let b = "a" + "b";
    let c = 1 ++ 2;
    let d = true < false;
    let e = 1 == "1";
    let g = !3;
    let h = -"x";
    let ok = 1 < 2 && "a" < "b" && 1.5 >= 0.5 && [1] == [2];
}
""", [("E019", 2), ("E019", 3), ("E019", 4), ("E019", 5), ("E019", 6), ("E019", 7), ("E019", 8)]),
    "argument counts": ("""\
fn g(x: Int) -> Int { return x; }
enum E { V(Int) }
fn f() -> Unit {
    let a = g(1, 2);
    let b = str_len("a", "b");
    let c = V(1, 2);
    let d = print();
}
""", [("E020", 4), ("E020", 5), ("E020", 6), ("E020", 7)]),
    "not callable": ("""\
record R { n: Int }
fn f() -> Unit {
    let x = 3;
    x(1);
    let r = R { n: 1 };
    r.n(2);
    r.missing();
    let xs = [1];
    xs.len();
}
""", [("E021", 4), ("E021", 6), ("E021", 7), ("E021", 9)]),
    "conditions and for": ("""\
fn f() -> Unit {
    if 1 { print(1); }
    while "x" { print(2); }
    for c in "abc" { print(c); }
    for x in Some(1) { print(x); }
}
""", [("E022", 2), ("E022", 3), ("E023", 4), ("E023", 5)]),
    "record literals and fields": ("""\
record P { x: Int, y: Int }
fn f(e: Error) -> Unit {
    let a = P { x: 1 };
    let b = P { x: 1, y: 2, z: 3 };
    let c = P { x: 1, x: 2, y: 3 };
    let d = a.w;
    let n = 5;
    let k = n.x;
    let m = e.message ++ e.kind;
    let q = e.code;
}
""", [("E027", 3), ("E027", 4), ("E027", 5), ("E027", 6), ("E027", 8), ("E027", 10)]),
    "tuples": ("""\
fn f() -> Unit {
    let t = (1, "a");
    let x = t.2;
    let n = 5;
    let y = n.0;
    let (a, b, c) = t;
    let (p, q) = t;
}
""", [("E034", 3), ("E049", 5), ("E028", 6)]),
    "generic inference and turbofish": ("""\
fn empty<T>() -> List<T> { return []; }
record Pair<A, B> { a: A, b: B }
fn f() -> Unit {
    let x = empty();
    let y: List<Int> = empty();
    let z = empty::<Int, String>();
    let w = json_decode("1") catch { 0 };
    let p: Pair<Int> = Pair { a: 1, b: 2 };
    let q = Pair::<Int, String> { a: 1, b: "s" };
    let r = Pair { a: 1, b: true };
    let v: Bool = r.b;
}
""", [("E046", 4), ("E046", 6), ("E046", 7), ("E046", 8)]),
    "generic argument mismatch": ("""\
fn f() -> Unit {
    let xs = push([1, 2], "three");
    let ys = map([1], |x: Int| x * 2);
    let s: List<String> = ys;
}
""", [("E018", 2), ("E018", 4)]),
    "fails function as a value and variant constructors": ("""\
fn risky(x: Int) -> Int fails { fail "no"; }
fn safe(x: Int) -> Int { return x; }
fn f() -> Unit {
    let g = risky;
    let h = safe;
    let s = Some;
    let n: Option<Int> = None;
}
""", [("E018", 4), ("E018", 6)]),
    "intrinsics": ("""\
fn f() -> Unit {
    let a = len("abc");
    let b = sort([Some(1)]);
    let c = len([1]) + len({"a": 1});
    let d: String = str(3.5);
    let e = sort(["b", "a"]);
}
""", [("E018", 2), ("E018", 3)]),
    "map_set needs a map variable": ("""\
fn f() -> Unit {
    let m = {"a": 1};
    map_set(m, "b", 2);
    map_set(m, "c", "three");
    map_delete(m, 1);
    map_set({"x": 1}, "y", 2);
    let n = 3;
    map_set(n, "k", 1);
}
""", [("E018", 4), ("E018", 5), ("E047", 6), ("E018", 8)]),
    "oracle means T and divine types": ("""\
record R { n: Int }
agent A {
    on start {
        let r: Oracle<R> = try divine("give" -> R);
        let s: Int = try divine("text");
        yield(r.n);
    }
}
""", [("E018", 5)]),
    "persisted fields": ("""\
agent A {
    @persistent n: Int
    on start {
        self.n.set(self.n.get() + 1);
        self.n.set("x");
        self.n.checkpoint();
        self.n.reset();
        let m: Int = self.n;
    }
}
""", [("E018", 5), ("E021", 7), ("E018", 8)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_types(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected


def test_mismatch_message_uses_source_syntax(tmp_path):
    found = check_files(tmp_path, {"main.sg": """\
fn f() -> Unit {
    let x: List<Map<String, Int>> = [(1, "a")];
}
"""}, "main.sg")
    assert [d.message for d in found] == [
        "type mismatch: expected List<Map<String, Int>>, found List<(Int, String)>"]


def test_valid_generics_closures_and_fn_values(tmp_path):
    source = """\
record Box<T> { items: List<T> }
enum Maybe<T> { Nope, Yep(T) }
fn id<T>(x: T) -> T { x }
fn wrap<T>(x: T) -> Option<T> { Some(x) }
fn make_adder(n: Int) -> Fn(Int) -> Int { return |x: Int| x + n; }
fn apply(f: Fn(Int) -> Int, x: Int) -> Int { return f(x); }
fn twice(x: Int) -> Int { return x * 2; }
fn f() -> Int {
    let b: Box<Int> = Box { items: [] };
    let c = Box { items: push(b.items, 1) };
    let m: Maybe<String> = Nope;
    let y = Maybe::Yep(1.5);
    let n = Option::<Int>::None;
    let r = Result::<Int, String>::Ok(3);
    let total = reduce([1, 2], 0, |acc: Int, x: Int| acc + x);
    let pairs = zip([1], ["a"]);
    let firsts = map(pairs, |p: (Int, String)| p.0);
    let opt = None;
    opt = Some(3);
    let best = unwrap_or(opt, 0) + unwrap_or(wrap(2), 0);
    let k = json_decode::<List<Int>>("[1]") catch { [] };
    let e: Map<String, List<Int>> = {};
    let sorted = sort_by([3, 1], |a: Int, b: Int| a - b);
    let decoded: List<Int> = map(["1"], |s: String| json_decode(s) catch { 0 });
    return id(total) + apply(make_adder(1), 2) + apply(twice, best) + len(k) + len(e) + len(c.items)
        + len(firsts) + len(sorted) + len(decoded);
}
"""
    assert codes(tmp_path, source) == []
