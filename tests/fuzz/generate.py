"""Grammar-aware generation of Sage programs (grammar/sage.lark, SPEC §2 and §6).

The generator knows Sage's items, statements and expressions and their types, so most programs it writes
check clean and reach the runtime: records, enums, functions that fail, agents that are summoned and
awaited, `match`, `catch`/`try`, closures, templates, and the builtins of SPEC §6 on edge values (division
by zero, infinities and NaN, overflow, huge repeat counts, negative indices). With a small probability it
breaks a rule on purpose (a wrong type, a missing name, a long chain), so the checker's paths are covered too.
Loops always count down a bounded counter, so a generated program ends.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

INT, FLOAT, BOOL, STRING = "Int", "Float", "Bool", "String"
LIST_INT, LIST_STRING, OPT_INT, MAP = "List<Int>", "List<String>", "Option<Int>", "Map<String, Int>"
TUPLE, POINT, SHAPE = "(Int, String)", "Point", "Shape"
TYPES = [INT, INT, INT, FLOAT, BOOL, STRING, STRING, LIST_INT, LIST_STRING, OPT_INT, MAP, TUPLE, POINT, SHAPE]

PRELUDE = """record Point { x: Int, y: Int }
enum Shape { Circle(Int), Square(Int), Empty }
"""

EDGE_INTS = ["0", "1", "-1", "2", "7", "63", "64", "100", "9223372036854775807", "-9223372036854775808",
             "4611686018427387904", "3037000500"]
EDGE_FLOATS = ["0.0", "1.5", "-2.25", "1.0e308", "1.0e-308", "(1.0 / 0.0)", "(-1.0 / 0.0)", "(0.0 / 0.0)",
               "PI", "E"]
EDGE_STRINGS = ['""', '"a"', '"héllo"', '"\\u{1F600}"', '"a,b,,c"', "'{not}'", '"\\n\\t\\\\"', '"\\x00"',
                '"  pad  "', '"\\u{10FFFF}"']


@dataclass
class Scope:
    names: dict[str, str] = field(default_factory=dict)
    mutable: list[str] = field(default_factory=list)

    def of_type(self, type_: str) -> list[str]:
        return [n for n, t in self.names.items() if t == type_]


class Generator:
    def __init__(self, rng: random.Random, max_depth: int = 4) -> None:
        self.rng = rng
        self.max_depth = max_depth
        self.counter = 0
        self.functions: list[tuple[str, list[str], str, bool]] = []  # name, parameter types, result, fails
        # one program in five breaks a rule here and there; the others aim to check clean
        self.wrong_rate = 0.02 if rng.random() < 0.2 else 0.0

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # ------------------------------------------------------------------ programs and items
    def program(self) -> str:
        parts = [PRELUDE]
        if self.chance(0.3):
            parts.append(f"const LIMIT: Int = {self.rng.choice(EDGE_INTS[:8])};\n")
        for _ in range(self.rng.randint(0, 3)):
            parts.append(self.function())
        worker = self.chance(0.4)
        if worker:
            parts.append(self.worker_agent())
        parts.append("agent Main {\n    on start {\n" + self.statements(Scope(), 2, 4, worker=worker)
                     + "    }\n}\nrun Main;\n")
        return "\n".join(parts)

    def function(self) -> str:
        name = self.fresh("f")
        params = [(self.fresh("p"), self.rng.choice(TYPES)) for _ in range(self.rng.randint(0, 3))]
        result = self.rng.choice(TYPES)
        fails = self.chance(0.3)
        scope = Scope({n: t for n, t in params})
        body = self.statements(scope, 1, 3, fails=fails)
        if fails and self.chance(0.5):
            body += f"        if {self.expr(BOOL, scope, 2)} {{ fail \"{name} failed\"; }}\n"
        body += f"        return {self.expr(result, scope, 0, fails=fails)};\n"
        self.functions.append((name, [t for _, t in params], result, fails))
        signature = ", ".join(f"{n}: {t}" for n, t in params)
        return f"fn {name}({signature}) -> {result}{' fails' if fails else ''} {{\n{body}}}\n"

    def worker_agent(self) -> str:
        body = self.statements(Scope({"n": INT}), 2, 2)
        return ("agent Worker {\n    n: Int\n    on start {\n        let n = self.n;\n" + body
                + f"        yield({self.expr(INT, Scope({'n': INT}), 1)});\n    }}\n}}\n")

    # ------------------------------------------------------------------ statements
    def statements(self, scope: Scope, indent: int, count: int, fails: bool = True, worker: bool = False,
                   depth: int = 0) -> str:
        lines = []
        for _ in range(self.rng.randint(1, count)):
            lines.append(self.statement(scope, indent, fails, worker, depth))
        return "".join(lines)

    def statement(self, scope: Scope, indent: int, fails: bool, worker: bool, depth: int) -> str:
        pad = "    " * indent
        kind = self.rng.choice(["let", "let", "let", "print", "print", "assign", "if", "while", "for", "match",
                                "catch", "summon", "map_set", "expr"])
        if depth >= 2 and kind in ("if", "while", "for", "match"):
            kind = "print"
        if kind == "let" or (kind == "assign" and not scope.mutable):
            type_ = self.rng.choice(TYPES)
            name = self.fresh()
            annotated = f": {type_}" if self.chance(0.3) else ""
            line = f"{pad}let {name}{annotated} = {self.expr(type_, scope, 0, fails)};\n"
            scope.names[name] = type_
            scope.mutable.append(name)
            return line
        if kind == "assign":
            name = self.rng.choice(scope.mutable)
            return f"{pad}{name} = {self.expr(scope.names[name], scope, 0, fails)};\n"
        if kind == "print":
            return f"{pad}print({self.expr(self.rng.choice(TYPES), scope, 0, fails)});\n"
        if kind == "if":
            inner = Scope(dict(scope.names), list(scope.mutable))
            text = f"{pad}if {self.expr(BOOL, scope, 1, fails)} {{\n"
            text += self.statements(inner, indent + 1, 2, fails, worker, depth + 1)
            if self.chance(0.5):
                text += f"{pad}}} else {{\n" + self.statements(Scope(dict(scope.names), list(scope.mutable)),
                                                              indent + 1, 2, fails, worker, depth + 1)
            return text + f"{pad}}}\n"
        if kind == "while":
            counter = self.fresh("i")
            inner = Scope(dict(scope.names), list(scope.mutable))
            return (f"{pad}let {counter} = {self.rng.randint(0, 5)};\n{pad}while {counter} > 0 {{\n"
                    f"{pad}    {counter} = {counter} - 1;\n"
                    + self.statements(inner, indent + 1, 2, fails, worker, depth + 1) + f"{pad}}}\n")
        if kind == "for":
            item = self.fresh("x")
            inner = Scope(dict(scope.names), list(scope.mutable))
            inner.names[item] = INT
            return (f"{pad}for {item} in {self.expr(LIST_INT, scope, 2, fails)} {{\n"
                    + self.statements(inner, indent + 1, 2, fails, worker, depth + 1) + f"{pad}}}\n")
        if kind == "match":
            return f"{pad}{self.match(self.rng.choice([INT, STRING]), scope, 1, fails)};\n"
        if kind == "catch":
            type_ = self.rng.choice([INT, STRING])
            return (f"{pad}let {self.fresh()} = {self.fallible(type_, scope, 1)} catch(e) {{ print(e.message); "
                    f"{self.expr(type_, scope, 2, fails)} }};\n")
        if kind == "summon" and worker:
            handle = self.fresh("h")
            wait = f"await {handle} timeout({self.rng.choice([1, 500, 5000])})" if self.chance(0.5) else \
                f"await {handle}"
            return (f"{pad}let {handle} = summon Worker {{ n: {self.expr(INT, scope, 2, fails)} }};\n"
                    f"{pad}print({wait} catch(e) {{ print(e.message); 0 }});\n")
        if kind == "map_set":
            maps = scope.of_type(MAP)
            if maps:
                return f"{pad}map_set({self.rng.choice(maps)}, {self.expr(STRING, scope, 2, fails)}, " \
                       f"{self.expr(INT, scope, 2, fails)});\n"
        return f"{pad}({self.expr(self.rng.choice(TYPES), scope, 1, fails)});\n"

    # ------------------------------------------------------------------ expressions
    def expr(self, type_: str, scope: Scope, depth: int, fails: bool = True) -> str:
        if self.wrong_rate and self.chance(self.wrong_rate):
            return self.wrong(type_, scope)
        if depth >= self.max_depth or self.chance(0.25):
            return self.leaf(type_, scope)
        options = getattr(self, "_" + {INT: "int", FLOAT: "float", BOOL: "bool", STRING: "string",
                                       LIST_INT: "list_int", LIST_STRING: "list_string", OPT_INT: "opt_int",
                                       MAP: "map", TUPLE: "tuple", POINT: "point", SHAPE: "shape"}[type_])
        text = options(scope, depth + 1, fails)
        if type_ in (INT, STRING) and self.chance(0.05):
            return f"({self.fallible(type_, scope, depth + 1)} catch {{ {self.leaf(type_, scope)} }})"
        return text

    def leaf(self, type_: str, scope: Scope) -> str:
        names = scope.of_type(type_)
        if names and self.chance(0.6):
            return self.rng.choice(names)
        if type_ == INT:
            return self.rng.choice(EDGE_INTS) if self.chance(0.3) else str(self.rng.randint(0, 9))
        if type_ == FLOAT:
            return self.rng.choice(EDGE_FLOATS) if self.chance(0.3) else f"{self.rng.randint(0, 9)}.5"
        if type_ == BOOL:
            return self.rng.choice(["true", "false"])
        if type_ == STRING:
            return self.rng.choice(EDGE_STRINGS)
        return {LIST_INT: "[1, 2, 3]", LIST_STRING: '["b", "a"]', OPT_INT: "None", MAP: '{"k": 1}',
                TUPLE: '(1, "t")', POINT: "Point { x: 0, y: 0 }", SHAPE: "Empty"}[type_]

    def wrong(self, type_: str, scope: Scope) -> str:
        """A deliberate checker error: a value of another type, an unknown name, or a long chain."""
        choice = self.rng.randrange(3)
        if choice == 0:
            return self.leaf(self.rng.choice([t for t in TYPES if t != type_]), scope)
        if choice == 1:
            return self.fresh("undefined")
        return "(" + " + ".join(["1"] * self.rng.choice([20, 120, 600])) + ")"

    def call(self, scope: Scope, type_: str, depth: int, fails: bool) -> str | None:
        candidates = [f for f in self.functions if f[2] == type_ and (fails or not f[3])]
        if not candidates:
            return None
        name, params, _, fallible = self.rng.choice(candidates)
        text = f"{name}({', '.join(self.expr(t, scope, depth, fails) for t in params)})"
        return f"try {text}" if fallible else text

    def pick(self, options: list) -> str:
        """One of `options`, each a string or a function that builds one: only the chosen one is built, since
        building every alternative of every level would grow exponentially with the depth."""
        chosen = self.rng.choice(options)
        return chosen() if callable(chosen) else chosen

    def fallible(self, type_: str, scope: Scope, depth: int) -> str:
        """An expression that fails (a fallible builtin or function), for `catch`; only Int and String."""
        users = [f for f in self.functions if f[2] == type_ and f[3]]
        if users and self.chance(0.4):
            name, params, _, _ = self.rng.choice(users)
            return f"{name}({', '.join(self.expr(t, scope, depth, False) for t in params)})"
        if type_ == INT:
            return self.pick([lambda: f"parse_timestamp({self.expr(STRING, scope, depth, False)}, '%Y-%m-%d')",
                              lambda: f"json_decode::<Int>({self.expr(STRING, scope, depth, False)})"])
        return self.pick([lambda: f"read_file({self.expr(STRING, scope, depth, False)})",
                          lambda: f"json_parse({self.expr(STRING, scope, depth, False)})"])

    def _int(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=INT: self.expr(t, scope, depth, fails)  # noqa: E731
        op = self.rng.choice(["+", "-", "*", "/", "%"])
        options = [
            lambda: f"({e()} {op} {e()})", lambda: f"-{e()}", lambda: f"len({e(LIST_INT)})",
            lambda: f"str_len({e(STRING)})",
            lambda: f"abs({e()})", lambda: f"min({e()}, {e()})", lambda: f"clamp({e()}, {e()}, {e()})",
            lambda: f"pow({e()}, {e()})",
            lambda: f"float_to_int({e(FLOAT)})", lambda: f"round({e(FLOAT)})", lambda: f"floor({e(FLOAT)})",
            lambda: f"sum({e(LIST_INT)})",
            lambda: f"unwrap_or({e(OPT_INT)}, {e()})", lambda: f"{e(TUPLE)}.0", lambda: f"{e(POINT)}.x",
            lambda: f"match {e(BOOL)} {{ true => {e()}, false => {e()} }}",
            lambda: self.match(INT, scope, depth, fails),
            lambda: f"reduce({e(LIST_INT)}, {e()}, |a: Int, b: Int| a + b)",
            lambda: f"count_where({e(LIST_INT)}, |x: Int| x > {e()})",
            lambda: f"unwrap_or(str_index_of({e(STRING)}, {e(STRING)}), -1)", lambda: f"len({e(MAP)})",
            lambda: f"unwrap_or_result(parse_int({e(STRING)}), 0)",
        ]
        called = self.call(scope, INT, depth, fails) if self.chance(0.15) else None
        return called or self.pick(options)

    def _float(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=FLOAT: self.expr(t, scope, depth, fails)  # noqa: E731
        op = self.rng.choice(["+", "-", "*", "/", "%"])
        return self.pick([
            lambda: f"({e()} {op} {e()})", lambda: f"-{e()}", lambda: f"int_to_float({e(INT)})",
            lambda: f"sqrt({e()})", lambda: f"pow_float({e()}, {e()})",
            lambda: f"floor_float({e()})", lambda: f"abs_float({e()})", lambda: f"clamp_float({e()}, {e()}, {e()})",
            lambda: f"sum_floats([{e()}, {e()}])", lambda: f"unwrap_or_result(parse_float({e(STRING)}), 0.5)",
        ])

    def _bool(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t: self.expr(t, scope, depth, fails)  # noqa: E731
        t = self.rng.choice([INT, FLOAT, STRING])
        return self.pick([
            lambda: f"({e(t)} {self.rng.choice(['<', '>', '<=', '>=', '==', '!='])} {e(t)})",
            lambda: f"({e(BOOL)} && {e(BOOL)})", lambda: f"({e(BOOL)} || {e(BOOL)})", lambda: f"!{e(BOOL)}",
            lambda: f"list_contains({e(LIST_INT)}, {e(INT)})", lambda: f"starts_with({e(STRING)}, {e(STRING)})",
            lambda: f"is_some({e(OPT_INT)})", lambda: f"map_has({e(MAP)}, {e(STRING)})",
            lambda: f"({e(POINT)} == {e(POINT)})",
            lambda: f"any({e(LIST_INT)}, |x: Int| x == {e(INT)})", lambda: f"({e(SHAPE)} == {e(SHAPE)})",
        ])

    def _string(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=STRING: self.expr(t, scope, depth, fails)  # noqa: E731
        names = [n for n, t in scope.names.items()]
        template = f'"x{{{self.rng.choice(names)}}}y"' if names else '"plain"'
        return self.pick([
            lambda: f"({e()} ++ {e()})", lambda: f"str({e(self.rng.choice(TYPES))})", template,
            lambda: f"to_upper({e()})",
            lambda: f"str_repeat({e()}, {e(INT)})", lambda: f"str_slice({e()}, {e(INT)}, {e(INT)})",
            lambda: f"join({e(LIST_STRING)}, {e()})",
            lambda: f"replace({e()}, {e()}, {e()})", lambda: f"str_pad_start({e()}, {e(INT)}, {e()})",
            lambda: f"chr({e(INT)})",
            lambda: f"str_truncate({e()}, {e(INT)})", lambda: f"trim({e()})", lambda: f"float_to_str({e(FLOAT)})",
            lambda: f"format_timestamp({e(INT)}, {e()})", lambda: f"json_stringify({e(self.rng.choice(TYPES))})",
            lambda: f"unwrap_or(first({e(LIST_STRING)}), {e()})", lambda: self.match(STRING, scope, depth, fails),
        ])

    def _list_int(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=INT: self.expr(t, scope, depth, fails)  # noqa: E731
        return self.pick([
            lambda: f"[{e()}, {e()}]", lambda: f"range({e()}, {self.rng.randint(0, 20)})",
            lambda: f"push({e(LIST_INT)}, {e()})",
            lambda: f"sort({e(LIST_INT)})", lambda: f"reverse({e(LIST_INT)})", lambda: f"unique({e(LIST_INT)})",
            lambda: f"map({e(LIST_INT)}, |x: Int| x * {e()})", lambda: f"filter({e(LIST_INT)}, |x: Int| x % 2 == 0)",
            lambda: f"list_slice({e(LIST_INT)}, {e()}, {e()})", lambda: f"take({e(LIST_INT)}, {e()})",
            lambda: f"flatten(chunk({e(LIST_INT)}, {self.rng.randint(-1, 3)}))",
            lambda: f"concat({e(LIST_INT)}, {e(LIST_INT)})",
            lambda: f"map_values({e(MAP)})",
            lambda: f"range_step(0, {self.rng.randint(0, 30)}, {self.rng.randint(-1, 4)})",
            lambda: f"sort_by({e(LIST_INT)}, |a: Int, b: Int| b - a)",
        ])

    def _list_string(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=STRING: self.expr(t, scope, depth, fails)  # noqa: E731
        return self.pick([
            lambda: f"[{e()}, {e()}]", lambda: f"split({e()}, {e()})", lambda: f"chars({e()})",
            lambda: f"lines({e()})",
            lambda: f"map_keys({e(MAP)})", lambda: f"sort({e(LIST_STRING)})", "[]"])

    def _opt_int(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=INT: self.expr(t, scope, depth, fails)  # noqa: E731
        return self.pick([
            lambda: f"Some({e()})", "None", lambda: f"get({e(LIST_INT)}, {e()})", lambda: f"first({e(LIST_INT)})",
            lambda: f"map_get({e(MAP)}, {e(STRING)})", lambda: f"ok(parse_int({e(STRING)}))",
            lambda: f"find({e(LIST_INT)}, |x: Int| x > {e()})"])

    def _map(self, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=STRING: self.expr(t, scope, depth, fails)  # noqa: E731
        return self.pick([lambda: f"{{{e()}: {e(INT)}, {e()}: {e(INT)}}}", '{"a": 1}'])

    def _tuple(self, scope: Scope, depth: int, fails: bool) -> str:
        return f"({self.expr(INT, scope, depth, fails)}, {self.expr(STRING, scope, depth, fails)})"

    def _point(self, scope: Scope, depth: int, fails: bool) -> str:
        return f"Point {{ x: {self.expr(INT, scope, depth, fails)}, y: {self.expr(INT, scope, depth, fails)} }}"

    def _shape(self, scope: Scope, depth: int, fails: bool) -> str:
        return self.pick([lambda: f"Circle({self.expr(INT, scope, depth, fails)})", "Empty",
            lambda: f"Square({self.expr(INT, scope, depth, fails)})"])

    def match(self, type_: str, scope: Scope, depth: int, fails: bool) -> str:
        e = lambda t=type_: self.expr(t, scope, depth, fails)  # noqa: E731
        subject = self.rng.choice([SHAPE, OPT_INT, INT])
        if subject == SHAPE:
            arms = f"Circle(r) => {e()}, Square(s) | Circle(s) => {e()}, Empty => {e()}"
        elif subject == OPT_INT:
            arms = f"Some(0) => {e()}, Some(n) => {e()}, None => {e()}"
        else:
            arms = f"0 | 1 => {e()}, -5 => {e()}, _ => {e()}"
        return f"match ({self.expr(subject, scope, depth, fails)}) {{ {arms} }}"


def generate_program(rng: random.Random) -> bytes:
    return Generator(rng, max_depth=rng.choice([2, 3, 4, 5])).program().encode("utf-8")
