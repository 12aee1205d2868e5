"""grove.toml errors, and the findings of `sage check --verify-tools` / `sage tools verify`."""
from .entry import ErrorCode

SECTION = ("Configuration and tool verification",
           "grove.toml is validated whenever a command loads the project; the E08x codes and E091/E092 come "
           "from `sage check --verify-tools` and `sage tools verify`, which connect to every configured MCP "
           "server and compare it with the program's tool blocks.", [
    ErrorCode("E080", "declared tool not offered by the server",
              """A function of a tool block maps (by its `#[mcp_name]`, else its own name) to a remote tool
              that the server does not list. The hint names the closest offered tool when one is close.
              `sage tools generate NAME` writes declarations that match the server."""),
    ErrorCode("E081", "server cannot be reached",
              """Verification could not connect to the server of a tool block (it did not start, the
              handshake failed, or the connection timed out). The connection error is quoted, and the block's
              functions are not compared. `.sage/logs/<Name>.log` holds the server's stderr."""),
    ErrorCode("E082", "parameter mismatch",
              """A declared parameter that the server's input schema lacks, a property the server requires
              that is not declared, a JSON type that does not fit the declared Sage type (a declared `Int`
              fits `number`, a declared `Float` does not fit `integer`), or a parameter declared `Option<…>`
              that the server requires. Extra optional properties of the server are fine."""),
    ErrorCode("W083", "return type incompatible with the server's `outputSchema`",
              """The server describes its result with an `outputSchema` that the declared return type cannot
              represent. A `String` return always fits; an `outputSchema` that wraps a single `result`
              property is compared by that property."""),
    ErrorCode("E090", "invalid grove.toml",
              """grove.toml is not valid TOML, has an unknown section or key (the message names the table and
              the key, with a did-you-mean hint), a value of the wrong type or an unknown enum value, or an MCP
              entry that misses what its transport needs (`command` for stdio, `url` for http, `module` for
              inprocess, `token_env` for bearer auth). docs/configuration.md lists every key.""",
              wrong="""\
agent Main {
    on start {
        print("hello");
    }
}

run Main;
// file: grove.toml
[project]
name = "demo"

[test]
timeout = 5000
""",
              fixed="""\
agent Main {
    on start {
        print("hello");
    }
}

run Main;
// file: grove.toml
[project]
name = "demo"

[test]
timeout_ms = 5000
"""),
    ErrorCode("E091", "`$` reference to an unset environment variable",
              """An `env`, `headers` or `args` value of a `[tools.X]` entry refers to a host environment
              variable (`$NAME` or `${NAME}`) that is not set. sagepy never substitutes an empty string: set
              the variable (a `.env` file in the project root is read too), or write `$$` for a literal
              `$`."""),
    ErrorCode("E092", "safety override names a tool the server does not offer",
              """A key of `[tools.X.safety]` is not the remote name of any tool the server lists; check the
              spelling against `sage tools inspect X`."""),
    ErrorCode("E093", "extern module or implementation not found",
              """A file listed in `[extern] modules` does not exist (paths are relative to the project root),
              or no listed module defines a callable with the name of an `extern fn` declaration.""",
              wrong="""\
extern fn slugify(text: String) -> String;

agent Main {
    on start {
        print(slugify("Hello World"));
    }
}

run Main;
// file: grove.toml
[extern]
modules = ["py/text.py"]
""",
              fixed="""\
extern fn slugify(text: String) -> String;

agent Main {
    on start {
        print(slugify("Hello World"));
    }
}

run Main;
// file: grove.toml
[extern]
modules = ["py/text.py"]
# file: py/text.py
def slugify(text):
    return "-".join(text.lower().split())
"""),
    ErrorCode("W085", "`[approvals]` key that names no tool of the program",
              """A key of `[approvals]` (other than `calls` and `prompt`) names neither a tool block of the
              program, a built-in tool (`Fs`, `Shell`, `Http`, `Database`) nor a `[tools.X]` table. It may
              still be the configured `name` of a dynamic connection, which is known only at run time, so
              this is a warning; check the spelling otherwise.""",
              wrong="""\
agent Main {
    use Fs;
    on start {
        print(try Fs.read("notes.txt"));
    }
}

run Main;
// file: grove.toml
[approvals]
Fss = "always"
""",
              fixed="""\
agent Main {
    use Fs;
    on start {
        print(try Fs.read("notes.txt"));
    }
}

run Main;
// file: grove.toml
[approvals]
Fs = "always"
"""),
])
