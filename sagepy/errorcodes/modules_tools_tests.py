"""Checker errors and warnings about modules, tools and test files."""
from .entry import ErrorCode

SECTION = ("Modules, tools and test files", "Also reported by the checker, before anything runs.", [
    ErrorCode("E036", "tool has no such function",
              """A call `T.f(…)` or `mock tool T.f` names a function that tool `T` does not declare. For a
              tool block, see its declaration; for the built-in tools, see the guide.""",
              wrong="""\
agent Reader {
    use Fs

    on start {
        yield(try Fs.read_text("notes.txt"));
    }
}
""",
              fixed="""\
agent Reader {
    use Fs

    on start {
        yield(try Fs.read("notes.txt"));
    }
}
"""),
    ErrorCode("E037", "unknown tool",
              """`use T`, a call `T.f(…)` or `mock tool T.f` names a tool that is neither a declared tool
              block nor a built-in tool (`Http`, `Fs`, `Shell`, `Database`).""",
              wrong="""\
agent Reader {
    use Files

    on start {
        yield(try Files.read("notes.txt"));
    }
}
""",
              fixed="""\
agent Reader {
    use Fs

    on start {
        yield(try Fs.read("notes.txt"));
    }
}
"""),
    ErrorCode("E038", "tool call where it is not allowed",
              """An agent may call a tool only after declaring it with `use T`; test blocks may call tools
              directly. Plain functions and constants never call tools: pass the result in instead.""",
              wrong="""\
agent Reader {
    on start {
        yield(try Fs.read("notes.txt"));
    }
}
""",
              fixed="""\
agent Reader {
    use Fs

    on start {
        yield(try Fs.read("notes.txt"));
    }
}
"""),
    ErrorCode("E039", "wrong number of arguments to a tool function",
              """A tool call with more or fewer arguments than the tool function declares. Optional MCP
              parameters are declared `Option<T>` and passed as `None`.""",
              wrong="""\
agent Writer {
    use Fs

    on start {
        try Fs.write("notes.txt");
    }
}
""",
              fixed="""\
agent Writer {
    use Fs

    on start {
        try Fs.write("notes.txt", "remember the milk");
    }
}
"""),
    ErrorCode("E042", "module file not found",
              """`mod m;` loads `m.sg` or `m/mod.sg` from the directory of the file that declares it; neither
              exists.""",
              wrong="""\
mod helpers;

use helpers::greeting;

agent Main {
    on start {
        print(greeting());
    }
}

run Main;
""",
              fixed="""\
mod helpers;

use helpers::greeting;

agent Main {
    on start {
        print(greeting());
    }
}

run Main;
// file: helpers.sg
pub fn greeting() -> String {
    return "hello";
}
"""),
    ErrorCode("E043", "private item imported",
              """Items are private to their module unless declared `pub`.""",
              wrong="""\
mod helpers;

use helpers::greeting;

agent Main {
    on start {
        print(greeting());
    }
}

run Main;
// file: helpers.sg
fn greeting() -> String {
    return "hello";
}
""",
              fixed="""\
mod helpers;

use helpers::greeting;

agent Main {
    on start {
        print(greeting());
    }
}

run Main;
// file: helpers.sg
pub fn greeting() -> String {
    return "hello";
}
"""),
    ErrorCode("E044", "item not found in module",
              """A `use` path names an item that the module does not declare.""",
              wrong="""\
mod helpers;

use helpers::greet;

agent Main {
    on start {
        print(greet());
    }
}

run Main;
// file: helpers.sg
pub fn greeting() -> String {
    return "hello";
}
""",
              fixed="""\
mod helpers;

use helpers::greeting;

agent Main {
    on start {
        print(greeting());
    }
}

run Main;
// file: helpers.sg
pub fn greeting() -> String {
    return "hello";
}
"""),
    ErrorCode("E050", "test-only construct outside a test file",
              """`test` blocks, `mock` statements and the `assert_*` builtins belong in files whose name ends
              in `_test.sg`. A test file `x_test.sg` sees the items of its sibling `x.sg`, private ones
              included.""",
              wrong="""\
fn double(n: Int) -> Int {
    return n * 2;
}

test "double doubles" {
    assert_eq(double(2), 4);
}
""",
              fixed="""\
fn double(n: Int) -> Int {
    return n * 2;
}
// file: main_test.sg
test "double doubles" {
    assert_eq(double(2), 4);
}
"""),
    ErrorCode("E051", "`run` in a test file",
              """A test file is run by `sage test`, test by test; it cannot name an entry agent.""",
              file="main_test.sg",
              wrong="""\
agent Main {
    on start {
        print("hello");
    }
}

test "hello" {
    assert_eq(1 + 1, 2);
}

run Main;
""",
              fixed="""\
agent Main {
    on start {
        print("hello");
    }
}

test "hello" {
    assert_eq(1 + 1, 2);
}
"""),
    ErrorCode("E055", "duplicate test name",
              """Test names identify tests in results and on the command line (`file::name`), so they are
              unique within a file.""",
              file="main_test.sg",
              wrong="""\
test "adds" {
    assert_eq(1 + 1, 2);
}

test "adds" {
    assert_eq(2 + 2, 4);
}
""",
              fixed="""\
test "adds one and one" {
    assert_eq(1 + 1, 2);
}

test "adds two and two" {
    assert_eq(2 + 2, 4);
}
"""),
    ErrorCode("E056", "`mock divine`, `mock infer` or `mock elicit` outside a test block",
              """Mocks are queued for the test that runs them, so `mock` statements belong inside `test`
              blocks (anywhere in them).""",
              file="main_test.sg",
              wrong="""\
fn prepare() -> Unit {
    mock divine -> "positive";
}

test "mood" {
    prepare();
    assert_eq(try divine("Mood of: great!"), "positive");
}
""",
              fixed="""\
test "mood" {
    mock divine -> "positive";
    assert_eq(try divine("Mood of: great!"), "positive");
}
"""),
    ErrorCode("E057", "`mock tool` outside a test block",
              """Like E056, for `mock tool T.f -> v;`.""",
              file="main_test.sg",
              wrong="""\
fn prepare() -> Unit {
    mock tool Fs.read -> "hello";
}

test "reads" {
    prepare();
    assert_eq(try Fs.read("notes.txt"), "hello");
}
""",
              fixed="""\
test "reads" {
    mock tool Fs.read -> "hello";
    assert_eq(try Fs.read("notes.txt"), "hello");
}
"""),
    ErrorCode("E058", "failure mock message is not a `String`",
              """A failure mock `mock … -> fail(m);` raises the error the real call would raise, with message
              `m`, which must be a `String`.""",
              file="main_test.sg",
              wrong="""\
test "tool down" {
    mock tool Fs.read -> fail(404);
    assert_fails(try Fs.read("notes.txt"));
}
""",
              fixed="""\
test "tool down" {
    mock tool Fs.read -> fail("not found");
    assert_fails(try Fs.read("notes.txt"));
}
"""),
    ErrorCode("E064", "invalid `divine` options",
              """`divine(p, tools: [...], max_steps: n)` lets the model call tools. The only options are `tools`
              (a list written out, not empty), `max_steps` (which needs `tools`) and `model` (a `String`
              naming the model of that call); each may be given once.
              A `tools` entry is a tool `T`, a tool function `T.f` or a `String` handle from `mcp_connect`;
              no function may be offered twice (`T` already offers every function of `T`).""",
              wrong="""\
agent Librarian {
    use Fs

    on start {
        let notes = try divine("Summarise the notes", tools: [Fs, Fs.read]);
        print(notes);
    }
}
""",
              fixed="""\
agent Librarian {
    use Fs

    on start {
        let notes = try divine("Summarise the notes", tools: [Fs.list, Fs.read], max_steps: 5);
        print(notes);
    }
}
"""),
    ErrorCode("E065", "a function offered to the model has no JSON form",
              """The model calls tools with JSON arguments and reads JSON results, so every parameter and the
              return type of a function offered through `tools:` must have a JSON form: no `Fn` and no agent
              handle anywhere inside. Offer the other functions of the tool one by one.""",
              wrong="""\
tool Jobs {
    fn schedule(name: String, job: Fn(Int) -> Int) -> String
    fn status(name: String) -> String
}

agent Operator {
    use Jobs

    on start {
        print(try divine("Is the nightly job done?", tools: [Jobs]));
    }
}

// file: grove.toml
[tools.Jobs]
command = "jobs-server"
""",
              fixed="""\
tool Jobs {
    fn schedule(name: String, job: Fn(Int) -> Int) -> String
    fn status(name: String) -> String
}

agent Operator {
    use Jobs

    on start {
        print(try divine("Is the nightly job done?", tools: [Jobs.status]));
    }
}

// file: grove.toml
[tools.Jobs]
command = "jobs-server"
"""),
    ErrorCode("E085", "invalid `#[mcp_name]`",
              """The remote name given by `#[mcp_name]` must be 1 to 128 characters of `A-Z a-z 0-9 _ . -`,
              and two functions of one tool block may not map to the same remote name.""",
              wrong="""\
tool Tracker {
    #[mcp_name = "search issues"]
    fn search(query: String) -> String
}
""",
              fixed="""\
tool Tracker {
    #[mcp_name = "search-issues"]
    fn search(query: String) -> String
}
"""),
    ErrorCode("E086", "tool block shadows a built-in tool",
              """A tool block named `Http`, `Fs`, `Shell` or `Database` replaces the built-in tool only when
              grove.toml configures an MCP server under exactly that key (`[tools.Fs]`). Configure it, or give
              the block another name.""",
              wrong="""\
tool Fs {
    fn read(path: String) -> String
}
""",
              fixed="""\
tool Files {
    fn read(path: String) -> String
}
// file: grove.toml
[tools.Files]
command = "files-mcp"
"""),
    ErrorCode("W084", "tool block bound to no `[tools.X]` entry",
              """A tool block `T` binds to the MCP server configured as `[tools.T]` in grove.toml (or the one
              table whose key equals `T` ignoring case). Without one, each call fails at run time with `MCP
              tool not found`.""",
              wrong="""\
tool Tracker {
    fn search(query: String) -> String
}
""",
              fixed="""\
tool Tracker {
    fn search(query: String) -> String
}
// file: grove.toml
[tools.Tracker]
command = "tracker-mcp"
"""),
])
