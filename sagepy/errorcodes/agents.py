"""Checker errors and warnings about agents, messages, persistence, supervisors and protocols."""
from .entry import ErrorCode

_PLANNED = "This check is planned: sagepy does not report this code yet."

SECTION = ("Agents, messages and supervisors", "Also reported by the checker, before anything runs.", [
    ErrorCode("E032", "`summon` field error",
              """`summon A { … }` must give every non-persistent field of `A` exactly once and nothing else. A
              `@persistent` field may be given too: that value is its starting value when the store holds
              none.""",
              wrong="""\
agent Greeter {
    name: String

    on start {
        yield("hello {self.name}");
    }
}

agent Main {
    on start {
        let g = summon Greeter {};
        print(try await g);
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

agent Main {
    on start {
        let g = summon Greeter { name: "Ada" };
        print(try await g);
    }
}
"""),
    ErrorCode("E033", "`await` or `send` on a value that is not an agent handle",
              """`await h` and `send(h, m)` need an `Agent<A>` handle, as returned by `summon`.""",
              wrong="""\
agent Main {
    on start {
        let n = 5;
        print(try await n);
    }
}
""",
              fixed="""\
agent Five {
    on start {
        yield(5);
    }
}

agent Main {
    on start {
        let n = summon Five {};
        print(try await n);
    }
}
"""),
    ErrorCode("E035", "messaging error",
              """`send(h, m)` needs an agent that accepts `m`'s type through an `on message(x: T)` handler or
              `receives T`; `receive()` is allowed only in the handlers of an agent declared `receives T`.""",
              wrong="""\
agent Logger {
    on start {
        print("ready");
    }
}

agent Main {
    on start {
        let log = summon Logger {};
        try send(log, "hello");
    }
}
""",
              fixed="""\
agent Logger {
    on start {
        print("ready");
    }

    on message(line: String) {
        print(line);
    }
}

agent Main {
    on start {
        let log = summon Logger {};
        try send(log, "hello");
    }
}
"""),
    ErrorCode("E041", "invalid entry",
              """`run X;` must name an agent or a supervisor. An entry agent needs `on start` and may only have
              `@persistent` fields, since nothing summons it with values. `sage run` also reports E041 when
              the entry file has no `run` at all (`sage check` accepts library modules without one).""",
              wrong="""\
agent Main {
    name: String

    on start {
        print("hello {self.name}");
    }
}

run Main;
""",
              fixed="""\
const NAME: String = "Ada";

agent Main {
    on start {
        print("hello {NAME}");
    }
}

run Main;
"""),
    ErrorCode("E052", "`@persistent` field of a type that cannot be persisted",
              """Persistent fields are stored as JSON and start at their type's default, so their type must
              be built from primitives, lists, maps, options, tuples, records and enums whose first variant
              has no payload. `Fn`, `Agent`, `Error`, `Result` and type parameters cannot be persisted.""",
              wrong="""\
agent Counter {
    @persistent last: Result<Int, String>

    on start {
        yield(0);
    }
}
""",
              fixed="""\
agent Counter {
    @persistent last: Option<Int>

    on start {
        yield(unwrap_or(self.last.get(), 0));
    }
}
"""),
    ErrorCode("E053", "`checkpoint()` outside an agent handler",
              """`checkpoint();` saves the persistent fields of the running agent, so it belongs inside an
              agent handler.""",
              wrong="""\
fn save() -> Unit {
    checkpoint();
}
""",
              fixed="""\
agent Counter {
    @persistent count: Int

    on start {
        self.count.set(self.count.get() + 1);
        checkpoint();
    }
}
"""),
    ErrorCode("E060", "supervisor without children",
              """A supervisor exists to start and restart its children; it must declare at least one.""",
              wrong="""\
supervisor Root {
    strategy: OneForOne
    children {
    }
}
""",
              fixed="""\
agent Worker {
    on start {
        print("working");
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Transient }
    }
}
"""),
    ErrorCode("E061", "unknown child agent or supervisor",
              """A child spec names neither an agent nor a supervisor.""",
              wrong="""\
agent Worker {
    on start {
        print("working");
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Wroker { restart: Transient }
    }
}
""",
              fixed="""\
agent Worker {
    on start {
        print("working");
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Transient }
    }
}
"""),
    ErrorCode("E062", "child field missing or unknown",
              """A child spec initialises the agent's fields like `summon` does: every non-persistent field
              exactly once, nothing else (persistent fields may be given a starting value).""",
              wrong="""\
agent Worker {
    queue: String

    on start {
        print("draining {self.queue}");
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Transient }
    }
}
""",
              fixed="""\
agent Worker {
    queue: String

    on start {
        print("draining {self.queue}");
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Worker { restart: Transient, queue: "jobs" }
    }
}
"""),
    ErrorCode("E066", "fallible operation inside `self.f.update`",
              """The function given to `self.f.update(fn)` of a persistent field runs inside the store's
              transaction, which no other agent or process can interleave; it may not call tools, `divine`,
              `await`, `send` or any other fallible operation, covered or not (SPEC §3.4). Do the fallible work
              before `update` and use its result inside the function.""",
              wrong="""\
agent Counter {
    use Http
    @persistent total: Int

    on waking {}
    on start {
        let total = self.total.update(|n: Int| n + (try Http.get("https://example.com/n")).status);
        print(total);
    }
}
""",
              fixed="""\
agent Counter {
    use Http
    @persistent total: Int

    on waking {}
    on start {
        let response = try Http.get("https://example.com/n");
        let total = self.total.update(|n: Int| n + response.status);
        print(total);
    }
}
"""),
    ErrorCode("E070", "unknown protocol",
              """`follows P as R` names a protocol `P` that is not declared.""",
              wrong="""\
protocol Ping {
    Client -> Server: String
}

agent Pinger follows Pnig as Client {
    on start {
        print("ping");
    }
}
""",
              fixed="""\
protocol Ping {
    Client -> Server: String
}

agent Pinger follows Ping as Client {
    on start {
        print("ping");
    }
}
"""),
    ErrorCode("E071", "role not in the protocol",
              """`follows P as R` names a role `R` that no step of protocol `P` mentions.""",
              wrong="""\
protocol Ping {
    Client -> Server: String
}

agent Pinger follows Ping as Caller {
    on start {
        print("ping");
    }
}
""",
              fixed="""\
protocol Ping {
    Client -> Server: String
}

agent Pinger follows Ping as Client {
    on start {
        print("ping");
    }
}
"""),
    ErrorCode("E072", "unknown effect handler in a child spec",
              """`handler Infer: H` in a supervisor's child spec names an effect handler `H` that is not
              declared.""",
              wrong="""\
handler Careful handles Infer {
    model: "echo",
    temperature: 0.0,
}

agent Writer {
    on start {
        print(try divine("Say hi"));
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Writer { restart: Transient, handler Infer: Carefull }
    }
}
""",
              fixed="""\
handler Careful handles Infer {
    model: "echo",
    temperature: 0.0,
}

agent Writer {
    on start {
        print(try divine("Say hi"));
    }
}

supervisor Root {
    strategy: OneForOne
    children {
        Writer { restart: Transient, handler Infer: Careful }
    }
}
"""),
    ErrorCode("E073", "`reply` outside `on message`",
              """`reply(v)` answers the sender of the message being handled, so it exists only inside an `on
              message` handler.""",
              wrong="""\
agent Echo {
    on start {
        reply("ready");
    }

    on message(text: String) {
        print(text);
    }
}
""",
              fixed="""\
agent Echo {
    on start {
        print("ready");
    }

    on message(text: String) {
        reply(text);
    }
}
"""),
    ErrorCode("E074", "`send` not allowed by the shared protocol at this step", _PLANNED),
    ErrorCode("E075", "invalid effect handler",
              """An effect handler must handle `Infer` and may set only `model` (a `String`), `temperature`
              (a `Float`) and `max_tokens` (an `Int`).""",
              wrong="""\
handler Careful handles Infer {
    model: "echo",
    temperature: 0,
}
""",
              fixed="""\
handler Careful handles Infer {
    model: "echo",
    temperature: 0.0,
}
"""),
    ErrorCode("E076", "the protocol requires a reply that the handler never sends", _PLANNED),
    ErrorCode("E078", "the agents share no protocol that allows this message", _PLANNED),
    ErrorCode("W006", "`on waking` without `@persistent` fields",
              """`on waking` runs after an agent's persistent fields are loaded; an agent without any never
              runs it.""",
              wrong="""\
agent Worker {
    on waking {
        print("restored");
    }

    on start {
        print("working");
    }
}
""",
              fixed="""\
agent Worker {
    @persistent runs: Int

    on waking {
        print("restored after {self.runs.get()} runs");
    }

    on start {
        self.runs.set(self.runs.get() + 1);
    }
}
"""),
    ErrorCode("W007", "`on message` of the entry agent never runs",
              """The entry agent runs no message loop: the program ends when its result is fixed. Put message
              handling in a summoned agent.""",
              wrong="""\
agent Main {
    on start {
        yield(0);
    }

    on message(text: String) {
        print(text);
    }
}

run Main;
""",
              fixed="""\
agent Printer {
    on message(text: String) {
        print(text);
    }
}

agent Main {
    on start {
        let p = summon Printer {};
        try send(p, "hello");
        yield(0);
    }
}

run Main;
"""),
    ErrorCode("W008", "agent field never read",
              """A field that no handler reads through `self.f` is probably a mistake, or can go.""",
              wrong="""\
agent Greeter {
    name: String
    greeting: String

    on start {
        yield("hello {self.name}");
    }
}
""",
              fixed="""\
agent Greeter {
    name: String
    greeting: String

    on start {
        yield("{self.greeting} {self.name}");
    }
}
"""),
    ErrorCode("E095", "misplaced or invalid `#[mcp_tool]`",
              """`#[mcp_tool = "name"]` marks an agent that `sage serve` offers as an MCP tool of that name. It
              belongs on an agent declaration only (on a function, a tool function or any other item it is
              E095); the name is 1–64 characters of A–Z, a–z, 0–9, `_`, `.` and `-`, and no two agents of a
              program may use the same name. The agent's non-persistent fields are the tool's parameters, so
              each needs a JSON form (no `Fn` or `Agent` field).""",
              wrong="""\
/// Look a customer up.
#[mcp_tool = "find customer"]
agent FindCustomer {
    email: String,
    on start {
        yield(self.email);
    }
}
""",
              fixed="""\
/// Look a customer up.
#[mcp_tool = "find_customer"]
agent FindCustomer {
    email: String,
    on start {
        yield(self.email);
    }
}
"""),
])
