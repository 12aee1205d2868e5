"""Lexical and syntax errors (E001-E009): reported by the parser, every one found in the file."""
from .entry import ErrorCode

SECTION = ("Lexical and syntax errors", "Reported while a file is read and parsed, before any checking. The "
           "lexer reports every lexical error of a file; the parser reports the first syntax error.", [
    ErrorCode("E001", "invalid character",
              """A character that starts no token: `$`, `?`, a backtick, a `#` not followed by `[`, or any
              non-ASCII character outside a string or comment. A file that is not valid UTF-8 is E001 at the
              first invalid byte.""",
              wrong="""\
fn total(a: Int, b: Int) -> Int {
    return a $ b;
}
""",
              fixed="""\
fn total(a: Int, b: Int) -> Int {
    return a + b;
}
"""),
    ErrorCode("E002", "unterminated string or block comment",
              """A string literal or a `/* … */` comment that is not closed before the end of the file.
              Strings may span lines, so the error is reported at the opening quote, which is where to
              look.""",
              wrong="""\
fn greeting() -> String {
    return "hello;
}
""",
              fixed="""\
fn greeting() -> String {
    return "hello";
}
"""),
    ErrorCode("E003", "invalid escape sequence",
              """Strings accept the escapes `\\n \\t \\r \\\\ \\" \\' \\{ \\} \\0`, `\\xNN` (two hex digits)
              and `\\u{H…}` (one to six hex digits). Any other backslash sequence is an error, reported at its
              position; write `\\\\` for a literal backslash.""",
              wrong="""\
fn folder() -> String {
    return "C:\\data";
}
""",
              fixed="""\
fn folder() -> String {
    return "C:\\\\data";
}
"""),
    ErrorCode("E004", "integer literal out of range",
              """`Int` is a signed 64-bit integer: a literal must lie between -9223372036854775808 and
              9223372036854775807. Use a `Float` for larger magnitudes.""",
              wrong="""\
fn big() -> Int {
    return 10000000000000000000;
}
""",
              fixed="""\
fn big() -> Float {
    return 10000000000000000000.0;
}
"""),
    ErrorCode("E005", "unexpected token (syntax error)",
              """The parser met a token that cannot continue the program at that point. The message names the
              token and what was expected. E005 also covers a reserved word used as a name, comparisons
              chained without `&&` (`a < b < c`), and nesting deeper than 1,000 levels.""",
              wrong="""\
fn total(a: Int, b: Int) -> Int {
    return a + * b;
}
""",
              fixed="""\
fn total(a: Int, b: Int) -> Int {
    return a + b;
}
"""),
    ErrorCode("E006", "unexpected end of file",
              """The file ended while a construct was still open: usually a `{`, `(` or `[` without its
              closing partner.""",
              wrong="""\
fn total(a: Int, b: Int) -> Int {
    return a + b;
""",
              fixed="""\
fn total(a: Int, b: Int) -> Int {
    return a + b;
}
"""),
    ErrorCode("E007", "invalid interpolation",
              """In a double-quoted string, `{` starts an interpolation that must hold an expression and end
              with `}`. An empty `{}`, an unterminated `{`, or a syntax error inside the braces is E007. Write
              `\\{` for a literal brace, or use a single-quoted string, which never interpolates (`'{}'`).
              An interpolation may not contain `"`: use single-quoted strings inside it.""",
              wrong="""\
fn label(n: Int) -> String {
    return "count: {}";
}
""",
              fixed="""\
fn label(n: Int) -> String {
    return "count: {n}";
}
"""),
    ErrorCode("E008", "misplaced `run`",
              """`run X;` names the program's entry agent or supervisor. It must be the very last item of the
              entry file, and there is at most one.""",
              wrong="""\
agent Main {
    on start {
        print(greeting());
    }
}

run Main;

fn greeting() -> String {
    return "hello";
}
""",
              fixed="""\
agent Main {
    on start {
        print(greeting());
    }
}

fn greeting() -> String {
    return "hello";
}

run Main;
"""),
    ErrorCode("E009", "unknown or misplaced attribute or annotation",
              """The only attribute is `#[mcp_name = "…"]` (or `#[mcp_name("…")]`) on a tool function; the only
              annotations are `@persistent` on an agent field and `@serial` on a test. Anything else, or one
              of these in another place, is E009.""",
              wrong="""\
agent Counter {
    @saved count: Int

    on start {
        yield(self.count.get());
    }
}
""",
              fixed="""\
agent Counter {
    @persistent count: Int

    on start {
        yield(self.count.get());
    }
}
"""),
])
