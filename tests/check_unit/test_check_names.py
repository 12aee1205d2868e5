"""Name resolution (SPEC §3.1): undefined names and types, duplicates, variants, modules and `use`."""
from __future__ import annotations

import pytest
from check_helpers import check_files, codes

CASES = {
    "undefined variable": ("""\
fn f() -> Int {
    return y + 1;
}
""", [("E010", 2)]),
    "out of scope after block": ("""\
fn f(c: Bool) -> Int {
    if c {
        let inner = 1;
    }
    return inner;
}
""", [("E010", 5)]),
    "undefined function": ("""\
fn f() -> Int {
    return gone(1);
}
""", [("E010", 2)]),
    "record name used as a value": ("""\
record P { x: Int }
fn f() -> Int {
    let p = P;
    return 1;
}
""", [("E010", 3)]),
    "unknown type": ("""\
fn f(x: Missing) -> Int {
    return 1;
}
""", [("E011", 1)]),
    "unknown agent in summon and Agent<...>": ("""\
fn f(h: Agent<Nobody>) -> Unit {
    let w = summon Ghost {};
}
""", [("E011", 1), ("E011", 2)]),
    "agent name used as a type": ("""\
agent W { on start { yield(1); } }
fn f(w: W) -> Int { return 1; }
""", [("E011", 2)]),
    "duplicate items, fields, variants, params": ("""\
fn f() -> Int { return 1; }
const f: Int = 2;
record R { a: Int, a: Int }
enum E { A, A }
fn g(x: Int, x: Int) -> Int { return x; }
""", [("E012", 2), ("E012", 3), ("E012", 4), ("E012", 5)]),
    "duplicate handlers": ("""\
agent A {
    on start { yield(1); }
    on start { yield(2); }
    on message(m: Int) { print(m); }
    on message(n: Int) { print(n); }
    on message(s: String) { print(s); }
}
""", [("E012", 3), ("E012", 5)]),
    "ambiguous bare variant": ("""\
enum Light { Red, Green }
enum Paint { Red, Blue }
fn f() -> Unit {
    let c = Red;
    let d = Light::Red;
}
""", [("E030", 4)]),
    "unknown variant path": ("""\
enum Light { Red, Green }
fn f() -> Light {
    return Light::Purple;
}
""", [("E030", 3)]),
    "unknown tool in use": ("""\
agent A {
    use Nothing
    on start { yield(1); }
}
""", [("E037", 2)]),
    "turbofish on a non-generic function": ("""\
fn one() -> Int { return 1; }
fn f() -> Int {
    return one::<Int>();
}
""", [("E100", 3)]),
    "prelude names are shadowed by user items": ("""\
fn map(x: Int) -> Int { return x; }
record McpTool { n: Int }
fn f() -> Int {
    let t = McpTool { n: 1 };
    return map(t.n);
}
""", []),
    "items are visible regardless of order": ("""\
fn even(n: Int) -> Bool {
    if n == 0 { return true; }
    return odd(n - 1);
}
fn odd(n: Int) -> Bool {
    if n == 0 { return false; }
    return even(n - 1);
}
fn f() -> Point { return Point { x: ORIGIN }; }
record Point { x: Int }
const ORIGIN: Int = 0;
""", []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_names(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected


def test_did_you_mean_hint(tmp_path):
    found = check_files(tmp_path, {"main.sg": """\
fn compute_total(x: Int) -> Int { return x; }
fn f() -> Int {
    let counter = 1;
    return compute_totl(countr);
}
"""}, "main.sg")
    hints = sorted(d.hint for d in found)
    assert hints == ["did you mean `compute_total`?", "did you mean `counter`?"]


def test_modules_private_missing_and_paths(tmp_path):
    files = {
        "main.sg": """\
mod shapes;
use shapes::{area, Square};
use shapes::secret;
use shapes::nothing;
use absent::thing;
fn f() -> Int {
    let s = Square { side: 2 };
    let x = secret(1) + nothing;
    return area(s) + shapes::area(s);
}
""",
        "shapes.sg": """\
pub record Square { side: Int }
pub fn area(s: Square) -> Int { return s.side * s.side; }
fn secret(x: Int) -> Int { return x; }
""",
    }
    found = check_files(tmp_path, files, "main.sg")
    got = sorted((d.code, d.span[0]) for d in found)
    # a failed import is reported once, not again where the name is used
    assert got == [("E042", 5), ("E043", 3), ("E044", 4), ("E100", 9)]


def test_pub_use_reexport_and_glob(tmp_path):
    files = {
        "main.sg": """\
mod outer;
use outer::helper;
use outer::inner::*;
fn f() -> Int {
    return helper(1) + twice(2);
}
""",
        "outer/mod.sg": """\
pub mod inner;
pub use inner::helper;
""",
        "outer/inner.sg": """\
pub fn helper(x: Int) -> Int { return x; }
pub fn twice(x: Int) -> Int { return x * 2; }
""",
    }
    assert check_files(tmp_path, files, "main.sg") == []


def test_module_types_by_path_and_imported_enum_variants(tmp_path):
    files = {
        "main.sg": """\
mod colors;
use colors::Color;
fn name(c: colors::Color) -> String {
    return match c {
        Red => "red",
        Color::Green => "green",
    };
}
""",
        "colors.sg": "pub enum Color { Red, Green }\n",
    }
    assert check_files(tmp_path, files, "main.sg") == []


def test_field_hints_for_records_and_agents(tmp_path):
    # a close name is offered (the checker's did-you-mean cutoff); with none close, the fields are listed
    found = check_files(tmp_path, {"main.sg": """\
record Point { x: Int, y: Int }
record Person { name: String, age: Int }
agent Counter {
    count: Int
    on start { yield(self.cuont + self.zz); }
}
fn f(p: Point, q: Person) -> Int {
    let c = summon Counter { count: 1, totl: 2 };
    let r = Person { nmae: "a", age: 1 };
    return p.xx + len(q.nmae);
}
"""}, "main.sg")
    hints = {(d.code, d.span[0], d.hint) for d in found if d.severity == "error"}
    assert hints == {
        ("E026", 5, "did you mean `count`?"),
        ("E026", 5, "agent `Counter` has field `count`"),
        ("E032", 8, "agent `Counter` has field `count`"),
        ("E027", 9, "did you mean `name`?"),
        ("E027", 9, None),     # `name` is missing: no hint
        ("E027", 10, "record `Point` has fields `x`, `y`"),
        ("E027", 10, "did you mean `name`?"),
    }
