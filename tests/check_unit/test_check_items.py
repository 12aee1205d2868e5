"""Functions, constants, closures, assignments, tool blocks and test files (SPEC §3.1, §3.2, §3.7, §3.8)."""
from __future__ import annotations

import pytest
from check_helpers import check_files, codes

CASES = {
    "functions that may end without a value": ("""\
fn a(c: Bool) -> Int {
    if c { return 1; }
}
fn b(c: Bool) -> Int {
    if c { return 1; } else if !c { return 2; }
}
fn d(c: Bool) -> Int {
    if c { 1 } else { 2 }
}
fn e() -> Int {
    loop { break; }
}
fn g() -> Int {
    while true { return 1; }
}
fn ok1(c: Bool) -> Int {
    if c { return 1; } else if !c { return 2; } else { fail_hard(); return 3; }
}
fn ok2() -> Int { loop { } }
fn ok3(c: Bool) -> Int fails { if c { return 1; } else { fail "no"; } }
fn ok4(o: Option<Int>) -> Int { match o { Some(n) => n, None => 0 } }
fn ok5() -> Unit { print(1); }
fn fail_hard() -> Unit { print(0); }
""", [("E045", 1), ("E045", 4), ("E045", 7), ("E045", 10), ("E045", 13)]),
    "constants": ("""\
fn two() -> Int { return 2; }
enum Mode { Fast, Slow(Int) }
record Cfg { mode: Mode, tags: List<String> }
const A: Int = 1 + 2 * 3;
const B: Int = two();
const C: Cfg = Cfg { mode: Slow(A), tags: ["x", "y"] };
const D: Map<String, Int> = {"a": A, "b": MS_PER_SECOND};
const E2: Option<Mode> = Some(Mode::Fast);
const F: Fn(Int) -> Int = |x: Int| x;
const G: String = "a {A}";
const H: Int = "one";
""", [("E048", 5), ("E048", 9), ("E018", 11)]),
    "closures and assignment": ("""\
const K: Int = 1;
fn f() -> Int {
    let count = 0;
    let inc = |x| x + 1;
    let bump = || { count = count + 1; };
    let m = {"a": 1};
    let put = |v: Int| map_set(m, "b", v);
    undeclared = 3;
    K = 2;
    count = "many";
    count = count + 1;
    return count;
}
""", [("E040", 4), ("E047", 5), ("E047", 7), ("E047", 8), ("E047", 9), ("E018", 10)]),
    "tool blocks": ("""\
tool Calendar {
    #[mcp_name = "events.find"]
    fn find(day: String) -> List<String>
    #[mcp_name("events.find")]
    fn search(day: String) -> List<String>
    #[mcp_name = "bad name!"]
    fn other() -> Unit
    fn find(x: Int) -> Unit
}
agent A {
    use Calendar
    on start {
        let a = try Calendar.find("d");
        let b = try Calendar.find("d", 2);
        let c = try Calendar.missing();
        let d = try Calendar.find(3);
        yield(len(a));
    }
}
""", [("W084", 1), ("E085", 4), ("E085", 6), ("E012", 8), ("E039", 14), ("E036", 15), ("E018", 16)]),
    "unknown tool in a call": ("""\
agent A {
    on start {
        let r = try Calender.find("d");
        yield(1);
    }
}
""", [("E037", 3)]),
    "built-in tool names need an exact grove.toml entry": ("""\
tool Http {
    fn get(url: String) -> String
}
""", [("E086", 1)]),
    "test-only constructs in a normal file": ("""\
test "t" {
    assert(true);
}
fn f() -> Unit {
    assert_eq(1, 1);
    mock divine -> "x";
}
""", [("E050", 1), ("E050", 2), ("E050", 5), ("E050", 6)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_items(tmp_path, name):
    source, expected = CASES[name]
    assert codes(tmp_path, source) == expected


def test_tool_binding_with_grove_config(tmp_path):
    source = """\
tool Http {
    fn get(url: String) -> String
}
tool Calendar {
    fn busy(day: String) -> Bool
}
tool Tracker {
    fn find(q: String) -> String
}
"""
    config = {"tools": {"Http": {"command": "x"}, "calendar": {"command": "y"}}}
    assert codes(tmp_path, source, config=config) == [("W084", 7)]
    config = {"tools": {"http": {"command": "x"}}}
    assert codes(tmp_path, source, config=config) == [("E086", 1), ("W084", 4), ("W084", 7)]


def test_builtin_tool_replaced_by_configured_server(tmp_path):
    source = """\
agent A {
    use Http
    on start { yield(1); }
}
"""
    assert codes(tmp_path, source, config={"tools": {"Http": {"command": "x"}}}) == [("E037", 2)]
    assert codes(tmp_path, source) == []


TEST_FILE = """\
fn helper() -> Int { return secret() + 1; }
test "uses the sibling" {
    mock tool Tracker.search -> '[{"id": 1}]';
    mock tool Tracker.nothing -> "x";
    mock tool Nowhere.search -> "x";
    mock tool mcp.call -> "x";
    mock tool mcp.bogus -> "x";
    mock elicit -> decline;
    mock divine -> fail("llm down");
    mock divine -> fail(42);
    let r = try await summon Worker { repo: "a" };
    assert_eq(r, helper());
    assert_contains([1, 2], 1);
    assert_fails(risky());
    let items = try Tracker.search("q");
}
test "uses the sibling" {
    assert_true(true);
}
fn later() -> Unit {
    mock tool Tracker.search -> "x";
    mock divine -> "y";
}
run Worker;
"""

SIBLING = """\
record Issue { id: Int }
tool Tracker {
    fn search(q: String) -> List<Issue>
}
fn secret() -> Int { return 41; }
fn risky() -> Int fails { fail "x"; }
agent Worker {
    use Tracker
    repo: String
    on start {
        let xs = try Tracker.search(self.repo);
        yield(len(xs));
    }
}
agent Main { on start { yield(0); } }
run Main;
"""


def test_test_file_rules(tmp_path):
    found = check_files(tmp_path, {"lib.sg": SIBLING, "lib_test.sg": TEST_FILE}, "lib_test.sg",
                        config={"tools": {"Tracker": {"command": "x"}}})
    got = sorted((d.code, d.span[0]) for d in found if d.file.endswith("lib_test.sg"))
    assert got == [("E036", 4), ("E036", 7), ("E037", 5), ("E051", 24), ("E055", 17), ("E056", 22), ("E057", 21),
                   ("E058", 10)]
    assert [d for d in found if d.file.endswith("lib.sg")] == []


def test_duplicate_across_sibling(tmp_path):
    found = check_files(tmp_path, {"lib.sg": SIBLING, "lib_test.sg": 'fn secret() -> Int { return 1; }\n'},
                        "lib_test.sg", config={"tools": {"Tracker": {"command": "x"}}})
    assert [(d.code, d.file.rsplit("/", 1)[-1], d.span[0]) for d in found] == [("E012", "lib_test.sg", 1)]
