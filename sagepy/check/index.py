"""The name index of a checked program: every declaration and every use of each name, with spans and types.

The checker is the only resolver. While it resolves a name it appends one tuple to `Checker.refs` (see
`Checker.note`): the file, the span of the node that holds the name, the name, where the name sits inside that
span, what it denotes (a checker object: an `Entity`, a local `Var`, a `VariantRef`, a `ToolInfo`, a module
scope, a member of a type), and whether this is the name's definition. That is all `sage check` pays. Only a
client that asks for the index (the language server) turns those records into `Symbol`s and `Occurrence`s
here: it locates each name's own span in the source and keys every symbol by the place it is declared, so the
indexes of two programs that share a module (the entry program and a test file) agree on what is one symbol.

Where a name sits inside its node's span (`where`): "h" at the start, "t" at the end, "f" the first
identifier equal to it, "l" the last one, a `(line, col)` pair: the first one from there on, any other string:
the first one after the first occurrence of that text.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any, Iterator

from ..core import types as T
from .body import Var
from .env import ModuleScope
from .names import BUILTIN
from .symbols import AgentInfo, Entity, ToolInfo
from .typeops import PersistedT

_TOKENS = re.compile(r'r#*"|"(?:\\.|[^"\\\n])*"?|//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z0-9_]*', re.S)

Key = tuple   # (path, line, col) of the declared name, or ("builtin", name), or ("module", path)


class Symbol:
    """One named thing. kind: fn, const, record, enum, agent, supervisor, tool, protocol, handler, module,
    local, field (of a record or agent), variant, toolfn, builtin. `info` is the checker's own object for it
    (a FnSig, RecordInfo, EnumInfo, AgentInfo, ToolInfo, FieldInfo, or a payload type for a variant); `type`
    is the type of a local, field or constant; `owner` the symbol a member belongs to; `members` a
    container's fields, variants or tool functions by name."""

    __slots__ = ("key", "kind", "name", "path", "span", "decl", "info", "type", "owner", "members")

    def __init__(self, key: Key, kind: str, name: str, path: str | None = None, span: tuple | None = None,
                 decl: Any = None, info: Any = None, type_: T.Type | None = None, owner: "Symbol | None" = None) -> None:
        self.key = key
        self.kind = kind
        self.name = name
        self.path = path
        self.span = span
        self.decl = decl
        self.info = info
        self.type = type_
        self.owner = owner
        self.members: dict[str, Symbol] = {}

    def __repr__(self) -> str:
        return f"Symbol({self.kind} {self.name} at {self.key})"


class Occurrence:
    """A name written in a file: its span (1-based, end exclusive), the symbol it denotes (None when it
    denotes nothing known), the container a member name was looked up in (a type, an AgentInfo or a ToolInfo:
    what completion after `.` offers), and whether it is the symbol's declaration."""

    __slots__ = ("span", "symbol", "container", "define")

    def __init__(self, span: tuple, symbol: Symbol | None, container: Any, define: bool) -> None:
        self.span = span
        self.symbol = symbol
        self.container = container
        self.define = define


class ProgramIndex:
    """The index of one checked program. Filled by `check_program(…, index=…)`."""

    def __init__(self) -> None:
        self.symbols: dict[Key, Symbol] = {}
        self.occurrences: dict[str, list[Occurrence]] = {}
        self.scopes: dict[str, ModuleScope] = {}
        self.prelude: Any = None
        self._starts: dict[str, list[tuple]] = {}

    # ---------------------------------------------------------------- queries
    def at(self, path: str, line: int, col: int) -> Occurrence | None:
        """The occurrence whose name covers (line, col), the end included (a cursor just after a word)."""
        occs = self.occurrences.get(path)
        if not occs:
            return None
        starts = self._starts.get(path)
        if starts is None:
            starts = self._starts[path] = [o.span[:2] for o in occs]
        i = bisect_right(starts, (line, col))
        best = None
        for occ in occs[max(0, i - 8):i]:
            l0, c0, l1, c1 = occ.span
            if l0 == line and c0 <= col <= c1:
                if best is None or occ.symbol is not None:
                    best = occ
        return best

    def uses_of(self, key: Key) -> Iterator[tuple[str, Occurrence]]:
        for path, occs in self.occurrences.items():
            for occ in occs:
                if occ.symbol is not None and occ.symbol.key == key:
                    yield path, occ

    # ---------------------------------------------------------------- building
    def fill(self, checker: Any) -> None:
        self.prelude = checker.prelude
        lines = {m.path: m.source.split("\n") for m in checker.program.modules}
        build = _Builder(self, checker, lines)
        for module in checker.program.modules:
            self.scopes[module.path] = checker.ns.scopes[id(module)]
            build.declarations(module)
        for file, span, name, where, target, define in checker.refs:
            build.reference(file, span, name, where, target, define)
        for path, occs in self.occurrences.items():
            occs.sort(key=lambda o: o.span)


class _Builder:
    def __init__(self, index: ProgramIndex, checker: Any, lines: dict[str, list[str]]) -> None:
        self.index = index
        self.checker = checker
        self.lines = lines
        self.by_id: dict[int, Symbol] = {}       # declarations, infos and module scopes -> symbol
        self.locals: dict[int, Symbol] = {}

    def symbol(self, sym: Symbol, *objects: Any) -> Symbol:
        sym = self.index.symbols.setdefault(sym.key, sym)
        for obj in objects:
            if obj is not None:
                self.by_id[id(obj)] = sym
        return sym

    def occur(self, path: str, span: tuple, sym: Symbol | None, container: Any = None, define: bool = False) -> None:
        self.index.occurrences.setdefault(path, []).append(Occurrence(span, sym, container, define))

    def declared(self, kind: str, path: str, node: Any, name: str, where: str, info: Any = None,
                 type_: Any = None, owner: Symbol | None = None, *objects: Any) -> Symbol | None:
        span = locate(self.lines.get(path), node.span, name, where)
        if span is None:
            return None
        sym = self.symbol(Symbol((path, span[0], span[1]), kind, name, path, span, node, info, type_, owner),
                          node, *objects)
        self.occur(path, span, sym, define=True)
        if owner is not None:
            owner.members.setdefault(name, sym)
        return sym

    # ---------------------------------------------------------------- declarations
    def declarations(self, module: Any) -> None:
        path = module.path
        scope = self.checker.ns.scopes[id(module)]
        self.symbol(Symbol(("module", path), "module", module.name or path, path, (1, 1, 1, 1)), scope)
        from .env import ITEM_KINDS
        for item in module.items:
            kind = ITEM_KINDS.get(type(item))
            if kind is None:
                continue
            entity = scope.items.get(item.name)
            own = entity is not None and entity.decl is item
            info = entity.info if own else None
            type_ = info if kind == "const" else None
            keyed = info if kind in ("record", "enum", "agent", "tool") else None
            sym = self.declared(kind, path, item, item.name, "f", info, type_, None, keyed)
            if sym is None:
                continue
            if kind == "record":
                fields = dict(info.fields) if own else {}
                for f in item.fields:
                    self.declared("field", path, f, f.name, "h", None, fields.get(f.name), sym)
            elif kind == "enum":
                payloads = dict(info.variants) if own else {}
                for v in item.variants:
                    self.declared("variant", path, v, v.name, "h", payloads.get(v.name), None, sym)
            elif kind == "agent":
                fields = info.fields if own else {}
                for f in item.fields:
                    field = fields.get(f.name)
                    self.declared("field", path, f, f.name, "f", field, field.type if field else None, sym)
            elif kind == "tool":
                fns = info.fns if own else {}
                for fn in item.fns:
                    self.declared("toolfn", path, fn, fn.name, "f", fns.get(fn.name), None, sym)

    # ---------------------------------------------------------------- references
    def reference(self, file: str, span: tuple | None, name: str, where: Any, target: Any, define: bool) -> None:
        at = locate(self.lines.get(file), span, name, where)
        if at is None:
            return
        container = None
        if isinstance(target, Var):
            sym = self.locals.get(id(target))
            if sym is None:
                sym = Symbol((file, at[0], at[1]), "local", name, file, at, None, None, target.type)
                sym = self.locals[id(target)] = self.index.symbols.setdefault(sym.key, sym)
        elif isinstance(target, tuple) and target[0] in ("member", "self"):
            container = target[1]
            sym = self.member(container, name)
        else:
            sym = self.resolve(target, name)
        self.occur(file, at, sym, container, define)

    def builtin(self, name: str, kind: str = "builtin", info: Any = None) -> Symbol:
        key = ("builtin", name)
        sym = self.index.symbols.get(key)
        if sym is None:
            sym = self.index.symbols[key] = Symbol(key, kind, name, info=info)
        return sym

    def resolve(self, target: Any, name: str) -> Symbol | None:
        if target is None:
            return None
        if isinstance(target, Entity):
            if target.kind == "module":
                return self.by_id.get(id(target.info))
            if target.kind == "error":
                return None
            if target.decl is None:
                return self.builtin(target.name, target.kind, target.info)
            return self.by_id.get(id(target.decl))
        if isinstance(target, ModuleScope):
            return self.by_id.get(id(target))
        if target is BUILTIN:
            return self.builtin(name)
        if isinstance(target, ToolInfo):
            return self.by_id.get(id(target)) or self.builtin(target.name, "tool", target)
        if isinstance(target, T.RecordInfo):
            return self.by_id.get(id(target)) or self.builtin(target.name, "record", target)
        if isinstance(target, tuple) and target[0] == "enum":
            return self.builtin(target[1], "enum") if target[1] in ("Option", "Result") else None
        result = getattr(target, "result", None)   # a VariantRef
        if isinstance(result, T.EnumT):
            owner = self.by_id.get(id(result.info))
            return owner.members.get(target.name) if owner is not None else None
        if result is not None:
            return self.builtin(target.name, "variant", target)
        return None

    def member(self, container: Any, name: str) -> Symbol | None:
        if isinstance(container, AgentInfo):
            owner = self.by_id.get(id(container))
            return owner.members.get(name) if owner is not None else None
        if isinstance(container, ToolInfo):
            owner = self.by_id.get(id(container))
            if owner is not None:
                return owner.members.get(name)
            sig = container.fns.get(name)
            return self.builtin(f"{container.name}.{name}", "toolfn", sig) if sig is not None else None
        if isinstance(container, T.RecordT):
            owner = self.by_id.get(id(container.info))
            if owner is not None:
                return owner.members.get(name)
            ftype = dict(container.fields()).get(name)
            return self.builtin(f"{container.name}.{name}", "field", ftype) if ftype is not None else None
        if isinstance(container, PersistedT) and name in PERSISTED_METHODS:
            return self.builtin(f"persistent.{name}", "builtin")
        if isinstance(container, T.Prim) and container.name == "Error" and name in ("message", "kind"):
            return self.builtin(f"Error.{name}", "field", T.STRING)
        return None


PERSISTED_METHODS = ("get", "set", "update", "checkpoint")


def locate(lines: list[str] | None, span: tuple | None, name: str, where: Any) -> tuple | None:
    """The span of `name` inside the node span `span` of a file's `lines` (see the module docstring)."""
    if lines is None or span is None or not name:
        return None
    l0, c0, l1, c1 = span
    n = len(name)
    if where == "h":
        if _text(lines, l0, c0, n) == name:
            return (l0, c0, l0, c0 + n)
        where = "f"
    elif where == "t":
        if c1 - n >= 1 and _text(lines, l1, c1 - n, n) == name:
            return (l1, c1 - n, l1, c1)
        where = "l"
    start = (l0, c0)
    if isinstance(where, tuple):
        start = max(start, tuple(where))
    elif where not in ("f", "l"):
        found = _find_text(lines, start, (l1, c1), where)
        if found is None:
            return None
        start = found
    hits = _identifiers(lines, start, (l1, c1), name)
    if not hits:
        return None
    line, col = hits[-1] if where == "l" else hits[0]
    return (line, col, line, col + n)


def _text(lines: list[str], line: int, col: int, n: int) -> str:
    if not 1 <= line <= len(lines):
        return ""
    return lines[line - 1][col - 1: col - 1 + n]


def _find_text(lines: list[str], start: tuple, end: tuple, marker: str) -> tuple | None:
    for line in range(start[0], min(end[0], len(lines)) + 1):
        text = lines[line - 1]
        lo = start[1] - 1 if line == start[0] else 0
        hi = end[1] - 1 if line == end[0] else len(text)
        i = text.find(marker, lo, hi)
        if i >= 0:
            return (line, i + 1 + len(marker))
    return None


def _identifiers(lines: list[str], start: tuple, end: tuple, name: str) -> list[tuple]:
    """Where `name` is written as an identifier between start and end, strings and comments skipped."""
    l0, c0 = start
    l1, c1 = end
    l1 = min(l1, len(lines))
    if l0 > l1:
        return []
    if l0 == l1:
        text = lines[l0 - 1][c0 - 1:c1 - 1]
    else:
        text = "\n".join([lines[l0 - 1][c0 - 1:]] + lines[l0:l1 - 1] + [lines[l1 - 1][:c1 - 1]])
    hits = []
    pos = 0
    while True:
        m = _TOKENS.search(text, pos)
        if m is None:
            break
        token = m.group()
        pos = m.end()
        if token.startswith("r") and token.endswith('"'):
            hashes = len(token) - 2
            close = text.find('"' + "#" * hashes, pos)
            pos = len(text) if close < 0 else close + 1 + hashes
            continue
        if token == name:
            before = text.count("\n", 0, m.start())
            line = l0 + before
            col = (m.start() - text.rfind("\n", 0, m.start())) if before else c0 + m.start()
            hits.append((line, col))
    return hits


def locals_of(index: ProgramIndex, path: str) -> list[Symbol]:
    """The local variables and parameters declared in a file."""
    return [o.symbol for o in index.occurrences.get(path, ()) if o.define and o.symbol is not None
            and o.symbol.kind == "local"]
