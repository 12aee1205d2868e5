"""The shape of the code (issues 13, 22 and 31, DESIGN.md): no import cycle inside sagepy, no module over 600 lines
but the few that keep one pass in one place (`PASS_MODULES`, up to about 1,000), no class assembled from mixins
in the checker and the compiler (their helpers take a declared interface instead), and the packages in one order
(`ORDER`): each imports only packages listed before it, so the package graph is a DAG with `core` at the bottom
(docs/architecture.md draws it).

Imports are read statically with `ast`, at module level and inside functions alike: an import deferred into a
function for start-up speed still ties the two modules together. Imports under `if TYPE_CHECKING:` count too:
they never run, but a module that names a type of a higher package depends on that package all the same (a
lower package declares what it reads as a Protocol instead). `importlib.import_module` with a computed name
cannot be read and is not counted.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sagepy"
MAX_LINES = 600
# One pass or one protocol kept in one module, read top to bottom (DESIGN.md: "up to about 1,000 lines"); every
# other module stays within MAX_LINES.
PASS_MAX_LINES = 1_000
PASS_MODULES = ("sagepy.check.checker", "sagepy.runtime.compile.compiler")

# The packages of sagepy (a top-level module counts as a package of its own; `sagepy` is the package's own
# __init__), lowest first. A package may import only packages of earlier tiers, never one of its own tier or a
# later one. A new package goes in the lowest tier above everything it imports: a store backend inside `store`,
# an effects layer inside `effects`; editor tools (formatter, language server), clients of `syntax` and
# `check`, beside `cli`.
ORDER: tuple[tuple[str, ...], ...] = (
    ("core",),                                   # values, errors, types, Sage<->JSON conversion, JSON text
    ("aio", "binding", "decisions", "deepstack", "diagnostics", "effect_builtins", "errorcodes", "render",
     "resources", "secrecy", "terminal", "testfiles", "tls", "traceview", "version", "wake"),  # helpers that need nothing of sagepy but core; the trace viewer
    ("approval_policy", "net", "progress"),      # helpers on helpers (binding, tls, render)
    ("syntax",),                                 # source -> AST
    ("fmt", "loader", "project", "variables"),   # the formatter; programs and their modules; the project; SAGE_*
    ("check",),                                  # the only resolver
    ("grove", "link"),                           # grove.toml checked into typed data; extern functions found
    ("builtins", "llm", "mcp", "store", "telemetry", "tools"),  # the world: each knows wire data and core only
    ("settings",),                               # one command's grove.toml
    ("mcptools", "workers"),                     # MCP developer tooling (sage tools, --verify-tools); queued runs
    ("effects",),                                # the boundary: steps, the chain of layers
    ("runtime",),                                # compiled closures, agents
    ("session",),                                # one command's wiring: builds and connects the above
    ("engine",),                                 # the library: compile once, run many, each run with a Host
    ("evals", "lsp", "runs", "serve", "testing"),  # sage eval; the language server; the run service; sage serve; sage test
    ("console",),                                # the web console (sage ui), on the run service
    ("cli",),                                    # the sage command
    ("__main__", "sagepy"),                      # the command; the package's API, re-exported from engine
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _import_nodes(tree: ast.AST):
    """Every import statement: module level, in functions and classes, and under TYPE_CHECKING."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: Path, modules: set[str]) -> dict[str, int]:
    """The sagepy modules `name` imports, each with the line of its first import."""
    is_package = path.name == "__init__.py"
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target in modules and target != name:
            found.setdefault(target, line)

    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
            continue
        if node.level:
            base_parts = name.split(".") if is_package else name.split(".")[:-1]
            base_parts = base_parts[:len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            add(submodule if submodule in modules else base, node.lineno)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> the sagepy modules it imports, each with the line of its first import."""
    files = source_files()
    modules = set(files)
    return {name: imports_of(name, path, modules) for name, path in files.items()}


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is small, but recursion depth should not depend on it)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def a_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """One concrete cycle through the component's first module (breadth-first, so a shortest one)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return list(reversed(path)) + [start]
                if child not in came_from:
                    came_from[child] = node
                    next_frontier.append(child)
        frontier = next_frontier
    return component


def describe_cycle(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:])]
    return "  " + "\n  ".join(steps)


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = [a_cycle(graph, c) for c in strongly_connected(graph) if len(c) > 1]
    report = "\n".join(f"cycle {i + 1}:\n{describe_cycle(graph, c)}" for i, c in enumerate(cycles))
    assert not cycles, f"{len(cycles)} import cycle(s) inside sagepy:\n{report}"


def test_no_module_over_600_lines() -> None:
    """Every module within MAX_LINES, but the pass modules, within PASS_MAX_LINES."""
    files = source_files()
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}
    over = {name: n for name, n in lines.items() if n > (PASS_MAX_LINES if name in PASS_MODULES else MAX_LINES)}
    report = "\n".join(f"  {name}: {n} lines" for name, n in sorted(over.items(), key=lambda kv: -kv[1]))
    assert not over, f"modules over {MAX_LINES} lines ({PASS_MAX_LINES} for a pass module):\n{report}"
    assert set(PASS_MODULES) <= set(files), f"PASS_MODULES names no module: {sorted(set(PASS_MODULES) - set(files))}"


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_edges(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], str]:
    """(importing package, imported package) -> the first import making that edge, as `module (line n) -> module`."""
    edges: dict[tuple[str, str], str] = {}
    for source in sorted(graph):
        for target, line in sorted(graph[source].items()):
            pair = (package_of(source), package_of(target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, f"{source} (line {line}) -> {target}")
    return edges


def against_the_order(graph: dict[str, dict[str, int]], order: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every package missing from `order`, and every import of a package that is not in an earlier tier."""
    tier = {package: i for i, group in enumerate(order) for package in group}
    packages = sorted({package_of(m) for m in graph})
    wrong = [f"  package {p} is not in ORDER (put it in the lowest tier above what it imports)"
             for p in packages if p not in tier]
    for (a, b), where in package_edges(graph).items():
        if a in tier and b in tier and tier[b] >= tier[a]:
            wrong.append(f"  {a} may not import {b}: {where}")
    return wrong


def test_packages_import_only_packages_below_them() -> None:
    wrong = against_the_order(import_graph(), ORDER)
    assert not wrong, "imports against the package order (tests/test_architecture.py ORDER):\n" + "\n".join(wrong)


def test_no_package_cycle() -> None:
    packages: dict[str, dict[str, int]] = {}
    graph = import_graph()
    for module in graph:
        packages.setdefault(package_of(module), {})
    for a, b in package_edges(graph):
        packages[a][b] = 1
    cycles = [c for c in strongly_connected(packages) if len(c) > 1]
    assert cycles == [], f"{len(cycles)} package cycle(s): {cycles}"


def test_the_checks_see_what_they_guard(tmp_path: Path) -> None:
    """The import reader and the cycle finder on a known graph: a relative import of a sibling, an import
    inside a function, an import under TYPE_CHECKING (counted) and a three-module cycle."""
    modules = {"sagepy.a", "sagepy.b", "sagepy.c", "sagepy.d"}
    source = tmp_path / "a.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom . import b\nif TYPE_CHECKING:\n    from .d import X\n"
                      "def f():\n    from .c import y\n", encoding="utf-8")
    assert imports_of("sagepy.a", source, modules) == {"sagepy.b": 2, "sagepy.d": 4, "sagepy.c": 6}
    graph = {"sagepy.a": {"sagepy.b": 1}, "sagepy.b": {"sagepy.c": 1}, "sagepy.c": {"sagepy.a": 1, "sagepy.d": 1},
             "sagepy.d": {}}
    components = [c for c in strongly_connected(graph) if len(c) > 1]
    assert components == [["sagepy.a", "sagepy.b", "sagepy.c"]]
    assert a_cycle(graph, components[0]) == ["sagepy.a", "sagepy.b", "sagepy.c", "sagepy.a"]
    layered = {"sagepy.syntax.parser": {"sagepy.diagnostics": 1}, "sagepy.diagnostics": {},
               "sagepy.runtime.agents": {"sagepy.syntax.parser": 3, "sagepy.syntax.ast": 4},
               "sagepy.syntax.ast": {"sagepy.runtime.agents": 7}, "sagepy.extra": {}}
    order = (("diagnostics",), ("syntax",), ("runtime",))
    assert against_the_order(layered, order) == [
        "  package extra is not in ORDER (put it in the lowest tier above what it imports)",
        "  syntax may not import runtime: sagepy.syntax.ast (line 7) -> sagepy.runtime.agents"]


def test_core_imports_nothing_else_of_sagepy() -> None:
    """`sagepy.core` (values, errors, types, the Sage<->JSON conversion) is the bottom: everything may use it,
    it uses nothing of sagepy outside itself."""
    wrong = [f"  {source} (line {line}) -> {target}" for source, targets in sorted(import_graph().items())
             if source.startswith("sagepy.core") for target, line in sorted(targets.items())
             if not target.startswith("sagepy.core")]
    assert not wrong, "sagepy.core imports other sagepy modules:\n" + "\n".join(wrong)


# ---------------------------------------------------------------- passes: visitors, not mixins (issue 31)
# The checker and the compiler are each a visitor class; the helpers they delegate to take them through a declared
# interface (a Protocol: `check.context.Checking`, `check.env.Reporting`, `runtime.compile.context.Compiling`).
PASS_PACKAGES = ("sagepy.check", "sagepy.runtime.compile")


def _in_pass_package(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in PASS_PACKAGES)


def protocols_of(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Every Protocol class of the given modules: its name -> the members it declares (annotated attributes and
    methods)."""
    found: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) in ("Protocol", "typing.Protocol")
                                                      for b in node.bases):
                found[node.name] = {m.target.id if isinstance(m, ast.AnnAssign) else m.name for m in node.body
                                    if isinstance(m, (ast.AnnAssign, ast.FunctionDef))
                                    and (not isinstance(m, ast.AnnAssign) or isinstance(m.target, ast.Name))}
    return found


def undeclared_uses(module: str, tree: ast.Module, protocols: dict[str, set[str]]) -> list[str]:
    """Each use of an attribute of a parameter typed by one of `protocols` that the Protocol does not declare."""
    wrong = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        typed = {a.arg: ast.unparse(a.annotation).strip("'\"") for a in fn.args.args + fn.args.kwonlyargs
                 if a.annotation is not None}
        typed = {arg: proto for arg, proto in typed.items() if proto in protocols}
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in typed \
                    and node.attr not in protocols[typed[node.value.id]]:
                wrong.append(f"  {module}:{node.lineno} {fn.name}: `{node.value.id}.{node.attr}` is not declared "
                             f"in {typed[node.value.id]}")
    return wrong


def mixed_classes(module: str, tree: ast.Module, pass_classes: set[str]) -> list[str]:
    """Each class of a pass package assembled from several bases, or built on another class of a pass package."""
    wrong = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(b) for b in node.bases]
        if len(bases) > 1:
            wrong.append(f"  {module}:{node.lineno} class {node.name}({', '.join(bases)}): more than one base")
        wrong += [f"  {module}:{node.lineno} class {node.name}({b}): built on a class of the checker or compiler"
                  for b in bases if b.split(".")[-1] in pass_classes]
    return wrong


@functools.lru_cache(maxsize=1)
def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in source_files().items()}


def test_passes_are_visitors_not_mixins() -> None:
    trees = _trees()
    passes = {name: tree for name, tree in trees.items() if _in_pass_package(name)}
    pass_classes = {n.name for tree in passes.values() for n in tree.body if isinstance(n, ast.ClassDef)}
    wrong = [line for name, tree in sorted(passes.items()) for line in mixed_classes(name, tree, pass_classes)]
    assert not wrong, "classes assembled from mixins in the checker or the compiler:\n" + "\n".join(wrong)


# Each interface of a pass -> the class that provides it.
PASS_INTERFACES = {"Checking": "Checker", "Reporting": "Checker", "Compiling": "Compiler"}


def members_of(tree: ast.Module, name: str) -> set[str]:
    """The methods of class `name` and the attributes its methods assign to `self`."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found.add(item.name)
                    found |= {t.attr for t in ast.walk(item) if isinstance(t, ast.Attribute)
                              and isinstance(t.ctx, ast.Store) and isinstance(t.value, ast.Name)
                              and t.value.id == "self"}
    return found


def test_helpers_use_only_what_the_pass_declares() -> None:
    trees = _trees()
    passes = {name: tree for name, tree in trees.items() if _in_pass_package(name)}
    protocols = protocols_of(passes)
    assert set(PASS_INTERFACES) <= set(protocols), sorted(protocols)
    wrong = [line for name, tree in sorted(trees.items()) for line in undeclared_uses(name, tree, protocols)]
    assert not wrong, "helpers reaching past the declared interface of their pass:\n" + "\n".join(wrong)
    for interface, provider in PASS_INTERFACES.items():
        provided = set().union(*(members_of(tree, provider) for tree in passes.values()))
        missing = sorted(protocols[interface] - provided)
        assert not missing, f"{provider} lacks what {interface} declares: {missing}"


def test_the_pass_checks_see_what_they_guard() -> None:
    """The mixin finder and the interface reader on known code: a class of two bases, a class built on a pass
    class, a helper reading an attribute its Protocol declares and one it does not."""
    tree = ast.parse("from typing import Protocol\n"
                     "class Host(Protocol):\n    file: str\n    def expr(self, node): ...\n"
                     "class Visitor(Exprs, Stmts):\n    pass\n"
                     "class Sub(Visitor):\n    pass\n"
                     "def helper(c: Host, node):\n    c.expr(node)\n    return c.file + c.agent\n")
    protocols = protocols_of({"m": tree})
    assert protocols == {"Host": {"file", "expr"}}
    assert undeclared_uses("m", tree, protocols) == ["  m:11 helper: `c.agent` is not declared in Host"]
    assert mixed_classes("m", tree, {"Visitor", "Host"}) == [
        "  m:5 class Visitor(Exprs, Stmts): more than one base",
        "  m:7 class Sub(Visitor): built on a class of the checker or compiler"]
