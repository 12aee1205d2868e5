"""Checker errors about names, types, functions and fallibility."""
from .entry import ErrorCode

SECTION = ("Names, types and errors", "Reported by the checker, which every command (`run`, `check`, `test`) "
           "runs before anything executes. The checker reports every error it finds, sorted by position.", [
    ErrorCode("E010", "undefined name",
              """A variable, function or constant that is not declared in scope. Names are looked up among
              local variables and parameters, then the module's items and imports, then the prelude. Items of
              another module are visible only after `use`.""",
              wrong="""\
fn area(width: Int, height: Int) -> Int {
    return width * hieght;
}
""",
              fixed="""\
fn area(width: Int, height: Int) -> Int {
    return width * height;
}
"""),
    ErrorCode("E011", "undefined type, agent, record or enum",
              """A type annotation, record literal, `summon` or `run` names a type or agent that does not
              exist in scope.""",
              wrong="""\
record Point { x: Int, y: Int }

fn origin() -> Pointt {
    return Point { x: 0, y: 0 };
}
""",
              fixed="""\
record Point { x: Int, y: Int }

fn origin() -> Point {
    return Point { x: 0, y: 0 };
}
"""),
    ErrorCode("E012", "duplicate definition",
              """Two items of one module with the same name, or two fields, parameters, variants, handlers or
              tool functions with the same name in one declaration. Two `on message` handlers are allowed when
              their parameter types differ.""",
              wrong="""\
fn double(n: Int) -> Int {
    return n * 2;
}

fn double(n: Float) -> Float {
    return n * 2.0;
}
""",
              fixed="""\
fn double(n: Int) -> Int {
    return n * 2;
}

fn double_float(n: Float) -> Float {
    return n * 2.0;
}
"""),
    ErrorCode("E013", "fallible operation not covered by `try` or `catch`",
              """Tool calls, `divine`, `await`, `send`, `retry`, calls to `fails` functions and the fallible
              builtins (file and stdin I/O, `json_parse`, `json_decode`, `parse_timestamp`, `mcp_*`) may fail.
              Each must be covered: `try op` passes the error on to the caller or handler, `op catch { fallback
              }` replaces it with a value. A closure body is not covered by a `try` outside the closure.""",
              wrong="""\
agent Main {
    on start {
        let notes = read_file("notes.txt");
        print(notes);
    }
}
""",
              fixed="""\
agent Main {
    on start {
        let notes = read_file("notes.txt") catch(e) {
            print_err("no notes: {e.message}");
            ""
        };
        print(notes);
    }
}
"""),
    ErrorCode("E014", "`try` or `fail` outside a fallible context",
              """`try` and `fail` pass an error on, so they may only appear where an error can go: in a
              function declared `fails`, in agent handlers (except `on stop`/`on resting`), in test blocks and
              in `retry` bodies. Declare the function `fails`, or handle the error with `catch`.""",
              wrong="""\
fn load(path: String) -> String {
    return try read_file(path);
}
""",
              fixed="""\
fn load(path: String) -> String fails {
    return try read_file(path);
}
"""),
    ErrorCode("E015", "`catch` fallback of the wrong type",
              """The block after `catch` replaces the failed expression's value, so its value must have the
              same type as the expression.""",
              wrong="""\
fn load() -> String {
    return read_file("notes.txt") catch { 0 };
}
""",
              fixed="""\
fn load() -> String {
    return read_file("notes.txt") catch { "" };
}
"""),
    ErrorCode("E016", "`try` or `fail` inside `on stop` / `on resting`",
              """When `on stop` runs, the agent's result is already fixed, so an error there has nowhere to
              go. Handle it in place with `catch`.""",
              wrong="""\
agent Main {
    on start {
        yield(0);
    }

    on stop {
        try write_file("done.txt", "finished");
    }
}
""",
              fixed="""\
agent Main {
    on start {
        yield(0);
    }

    on stop {
        write_file("done.txt", "finished") catch(e) {
            print_err("could not record the end: {e}");
        };
    }
}
"""),
    ErrorCode("E017", "`yield` inside `on stop` / `on resting`",
              """An agent's result is fixed by its first `yield`, in `on start`, `on message` or `on error`. By
              the time `on stop` runs it is too late to change it.""",
              wrong="""\
agent Main {
    on start {
        print("working");
    }

    on stop {
        yield(0);
    }
}
""",
              fixed="""\
agent Main {
    on start {
        print("working");
        yield(0);
    }
}
"""),
    ErrorCode("E018", "type mismatch",
              """A value of one type where another is expected: an annotation, an argument, a return value, a
              record field, a match arm, a `yield`, a map key. The message names both types in source syntax.
              There are no implicit conversions: `Int` and `Float` never mix (use `int_to_float`), and a
              `fails` function cannot be used as a value.""",
              wrong="""\
fn half(n: Int) -> Float {
    return n / 2;
}
""",
              fixed="""\
fn half(n: Int) -> Float {
    return int_to_float(n) / 2.0;
}
"""),
    ErrorCode("E019", "operator not defined for these operand types",
              """Arithmetic needs two `Int`s or two `Float`s; `++` joins two `String`s; `&&`, `||` and `!`
              take `Bool`s; `<` and friends compare numbers or strings.""",
              wrong="""\
fn full_name(first: String, last: String) -> String {
    return first + " " + last;
}
""",
              fixed="""\
fn full_name(first: String, last: String) -> String {
    return first ++ " " ++ last;
}
"""),
    ErrorCode("E020", "wrong number of arguments",
              """A function, builtin or variant constructor called with more or fewer arguments than it
              declares. An enum variant carries at most one payload: use a tuple for several.""",
              wrong="""\
fn add(a: Int, b: Int) -> Int {
    return a + b;
}

fn three() -> Int {
    return add(1, 1, 1);
}
""",
              fixed="""\
fn add(a: Int, b: Int) -> Int {
    return a + b;
}

fn three() -> Int {
    return add(add(1, 1), 1);
}
"""),
    ErrorCode("E021", "value is not callable",
              """A call of something that is not a function or closure, or a method call `.m()` on a value
              that has no such callable member. Sage has no methods on plain values: builtins take the value
              as their first argument (`len(xs)`, not `xs.len()`).""",
              wrong="""\
fn count(xs: List<Int>) -> Int {
    return xs.len();
}
""",
              fixed="""\
fn count(xs: List<Int>) -> Int {
    return len(xs);
}
"""),
    ErrorCode("E022", "condition is not `Bool`",
              """`if` and `while` conditions must be `Bool`: there is no truthiness. Compare explicitly.""",
              wrong="""\
fn describe(xs: List<Int>) -> String {
    if len(xs) {
        return "some";
    }
    return "none";
}
""",
              fixed="""\
fn describe(xs: List<Int>) -> String {
    if len(xs) > 0 {
        return "some";
    }
    return "none";
}
"""),
    ErrorCode("E023", "`for` over a value that is neither a list nor a map",
              """`for` iterates a `List<T>` (each element) or a `Map<K, V>` (each `(key, value)` tuple in
              insertion order). Convert other values first, e.g. `chars(s)` for the characters of a
              string.""",
              wrong="""\
fn vowels(word: String) -> Int {
    let n = 0;
    for c in word {
        if str_contains("aeiou", c) {
            n = n + 1;
        }
    }
    return n;
}
""",
              fixed="""\
fn vowels(word: String) -> Int {
    let n = 0;
    for c in chars(word) {
        if str_contains("aeiou", c) {
            n = n + 1;
        }
    }
    return n;
}
"""),
    ErrorCode("E024", "`break`, `continue`, `return` or `yield` out of place",
              """`break` and `continue` belong inside a loop, `return` inside a function or closure, and
              `yield` inside an agent handler.""",
              wrong="""\
fn first_even(xs: List<Int>) -> Int {
    for x in xs {
        if x % 2 == 0 {
            yield(x);
        }
    }
    return -1;
}
""",
              fixed="""\
fn first_even(xs: List<Int>) -> Int {
    for x in xs {
        if x % 2 == 0 {
            return x;
        }
    }
    return -1;
}
"""),
    ErrorCode("E025", "retired: empty map literal",
              """Earlier versions rejected `{}`. It is now a valid empty map, and E025 is never reported."""),
    ErrorCode("E026", "`self` outside an agent handler, or unknown agent field",
              """`self.f` reads field `f` of the agent whose handler is running; it exists only inside agent
              handlers and only for declared fields.""",
              wrong="""\
agent Greeter {
    name: String

    on start {
        yield("hello {self.nmae}");
    }
}
""",
              fixed="""\
agent Greeter {
    name: String

    on start {
        yield("hello {self.name}");
    }
}
"""),
    ErrorCode("E027", "record field error",
              """A record literal must give every field exactly once and no others; `r.f` needs a field `f`
              on a record value (an `Error` has `message` and `kind`).""",
              wrong="""\
record Point { x: Int, y: Int }

fn origin() -> Point {
    return Point { x: 0 };
}
""",
              fixed="""\
record Point { x: Int, y: Int }

fn origin() -> Point {
    return Point { x: 0, y: 0 };
}
"""),
    ErrorCode("E028", "tuple arity mismatch",
              """A tuple pattern or destructuring `let` has a different number of elements than the
              tuple.""",
              wrong="""\
fn sum3(t: (Int, Int, Int)) -> Int {
    let (a, b) = t;
    return a + b;
}
""",
              fixed="""\
fn sum3(t: (Int, Int, Int)) -> Int {
    let (a, b, c) = t;
    return a + b + c;
}
"""),
    ErrorCode("E029", "non-exhaustive `match`",
              """A `match` must cover every value: every variant of an enum, `Some` and `None`, `Ok` and `Err`,
              `true` and `false`; other types need a catch-all arm (`_` or a binding). A payload arm covers its
              variant only when its payload pattern matches everything (`Some(1)` does not cover `Some`).""",
              wrong="""\
enum Light { Red, Amber, Green }

fn next(l: Light) -> Light {
    return match l {
        Red => Green,
        Green => Amber,
    };
}
""",
              fixed="""\
enum Light { Red, Amber, Green }

fn next(l: Light) -> Light {
    return match l {
        Red => Green,
        Green => Amber,
        Amber => Red,
    };
}
"""),
    ErrorCode("E030", "unknown or ambiguous enum variant",
              """`Enum::Variant` names a variant the enum does not have, or a bare variant name is defined by
              two enums in scope (qualify it as `Enum::Variant`).""",
              wrong="""\
enum Light { Red, Amber, Green }

fn caution() -> Light {
    return Light::Yellow;
}
""",
              fixed="""\
enum Light { Red, Amber, Green }

fn caution() -> Light {
    return Light::Amber;
}
"""),
    ErrorCode("E031", "invalid pattern",
              """A pattern that cannot match the scrutinee's type, alternatives (`p | q`) that bind different
              names, or an interpolated string used as a pattern.""",
              wrong="""\
fn name(n: Int) -> String {
    return match n {
        "one" => "1",
        _ => "many",
    };
}
""",
              fixed="""\
fn name(n: Int) -> String {
    return match n {
        1 => "one",
        _ => "many",
    };
}
"""),
    ErrorCode("E034", "tuple index out of range",
              """`t.0`, `t.1`, … index a tuple from 0; the index must be smaller than the tuple's size.""",
              wrong="""\
fn second(pair: (Int, String)) -> String {
    return pair.2;
}
""",
              fixed="""\
fn second(pair: (Int, String)) -> String {
    return pair.1;
}
"""),
    ErrorCode("E040", "closure parameter without a type",
              """Closure parameters are always annotated: `|x: Int| x * 2`.""",
              wrong="""\
fn doubled(xs: List<Int>) -> List<Int> {
    return map(xs, |x| x * 2);
}
""",
              fixed="""\
fn doubled(xs: List<Int>) -> List<Int> {
    return map(xs, |x: Int| x * 2);
}
"""),
    ErrorCode("E045", "function may end without returning a value",
              """A function whose return type is not `Unit` must end every path with `return`, `fail`, a
              trailing expression, or an `if`/`else` whose branches all do; `if` is a statement, so the value
              of an `if` branch does not count. The same holds for `on start` of an agent whose result is not
              `Unit`: every path must `yield` or fail.""",
              wrong="""\
fn sign(n: Int) -> String {
    if n < 0 {
        return "negative";
    }
}
""",
              fixed="""\
fn sign(n: Int) -> String {
    if n < 0 {
        return "negative";
    }
    return "not negative";
}
"""),
    ErrorCode("E046", "type arguments cannot be inferred",
              """A generic function, record or variant whose type arguments follow neither from the arguments
              nor from the expected type, or a wrong number of type arguments. Give them with a turbofish
              (`f::<Int>(x)`) or an annotation.""",
              wrong="""\
fn nothing<T>() -> Option<T> {
    return None;
}

fn use_it() -> Bool {
    let n = nothing();
    return is_none(n);
}
""",
              fixed="""\
fn nothing<T>() -> Option<T> {
    return None;
}

fn use_it() -> Bool {
    let n = nothing::<Int>();
    return is_none(n);
}
"""),
    ErrorCode("E047", "invalid assignment target",
              """`x = e;` needs a visible `let` or parameter `x`. Agent fields (`self.f = …`) and record fields
              (`p.x = …`) cannot be assigned, a closure may not assign to a variable it captured, and
              `map_set`/`map_delete` need a plain variable as their first argument.""",
              wrong="""\
fn count(xs: List<Int>) -> Int {
    for x in xs {
        total = total + x;
    }
    return total;
}
""",
              fixed="""\
fn count(xs: List<Int>) -> Int {
    let total = 0;
    for x in xs {
        total = total + x;
    }
    return total;
}
"""),
    ErrorCode("E048", "`const` initialiser is not a constant expression",
              """Constants are evaluated once, at load time, from literals, other constants, operators and
              constructions of constants. Function calls are not allowed: use a function instead.""",
              wrong="""\
const GREETING: String = to_upper("hello");
""",
              fixed="""\
const GREETING: String = "HELLO";
"""),
    ErrorCode("E049", "tuple index on a non-tuple",
              """`.0`, `.1`, … apply to tuples only.""",
              wrong="""\
fn first_char(s: String) -> String {
    return s.0;
}
""",
              fixed="""\
fn first_char(s: String) -> String {
    return str_slice(s, 0, 1);
}
"""),
    ErrorCode("E100", "other static errors",
              """Errors that fit no other code: a turbofish on a non-generic item, or a module path `m::item`
              in an expression or pattern (import the item with `use` instead; the only path allowed there is
              `Enum::Variant`).""",
              wrong="""\
fn one() -> Int {
    return 1;
}

fn two() -> Int {
    return one::<Int>() + 1;
}
""",
              fixed="""\
fn one() -> Int {
    return 1;
}

fn two() -> Int {
    return one() + 1;
}
"""),
])
