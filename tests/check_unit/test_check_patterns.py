"""`match` (SPEC §3.6): arm types, patterns and exhaustiveness."""
from __future__ import annotations

import pytest
from check_helpers import codes

CASES = {
    "arms must agree in expression position": ("""\
fn f(n: Int) -> String {
    return match n {
        0 => "zero",
        1 => 1,
        _ => return "many",
    };
}
""", [("E018", 4)]),
    "arms need not agree in statement position": ("""\
fn f(n: Int) -> Unit {
    match n {
        0 => "zero",
        _ => 1,
    }
    if n > 0 {
        match n { 1 => "one", _ => 2 }
    }
}
""", []),
    "a final match is the function's value": ("""\
fn f(o: Option<Int>) -> Int {
    match o {
        Some(n) => n,
        None => "none",
    }
}
""", [("E018", 4)]),
    "exhaustiveness": ("""\
enum Color { Red, Green, Blue(Int) }
fn f(c: Color, o: Option<Int>, r: Result<Int, String>, b: Bool, n: Int, s: String, t: (Int, Int)) -> Unit {
    match c { Red => print(1), Green => print(2) }
    match c { Red | Green => print(1), Blue(0) => print(2) }
    match c { Red | Green => print(1), Blue(_) => print(2) }
    match o { Some(x) => print(x) }
    match r { Ok(x) => print(x) }
    match b { true => print(1) }
    match b { true => print(1), false => print(0) }
    match n { 0 => print(0), 1 => print(1) }
    match s { "a" => print(0) }
    match t { (0, y) => print(y) }
    match t { (x, y) => print(x + y) }
    match n { 0 => print(0), other => print(other) }
}
""", [("E029", 3), ("E029", 4), ("E029", 6), ("E029", 7), ("E029", 8), ("E029", 10), ("E029", 11),
      ("E029", 12)]),
    "pattern types and arity": ("""\
enum Color { Red, Green }
fn f(n: Int, t: (Int, String), c: Color) -> Unit {
    match n { "one" => print(1), _ => print(2) }
    match n { Some(x) => print(x), _ => print(2) }
    match t { (a, b, c) => print(a), }
    match t { (1, "x") | (2, y) => print(1), _ => print(2) }
    match c { Red(x) => print(x), _ => print(0) }
    match c { Purple => print(0), _ => print(1) }
    match t { (a, b) | (b, a) => print(a), }
}
""", [("E031", 3), ("E031", 4), ("E028", 5), ("E031", 6), ("E031", 7), ("E030", 8), ("E031", 9)]),
    "qualified and generic patterns": ("""\
enum Maybe<T> { Nope, Yep(T) }
fn f(m: Maybe<Int>, o: Option<Int>) -> Int {
    let a = match m { Maybe::Yep(n) => n, Maybe::Nope => 0 };
    let b = match o { Option::<Int>::None => 0, Some(x) => x };
    let c = match (m, o) { (Yep(x), Some(y)) => x + y, _ => 0 };
    return a + b + c;
}
""", []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_patterns(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected
