"""One registry of the builtins that are effects steps (sagepy.effect_builtins, issue 31): it and the stdlib's
`extern fn` declarations describe each builtin, and no other module keeps a table of them of its own."""
from __future__ import annotations

import ast
from pathlib import Path

from sagepy.builtins import load_builtins, load_io_builtins
from sagepy.check.prelude import load_prelude
from sagepy.core import types as T
from sagepy.effect_builtins import EFFECT_BUILTINS, IO, MCP, MCP_MOCK_KEYS
from sagepy.resources import stdlib_dir
from sagepy.syntax import ast as A
from sagepy.syntax.cache import parse_file_cached

PACKAGE = Path(__file__).resolve().parents[2] / "sagepy"


def externs_of(stdlib_file: str) -> set[str]:
    path = Path(stdlib_dir()) / stdlib_file
    items, _ = parse_file_cached(str(path), path.read_text(encoding="utf-8"))
    return {item.name for item in items if isinstance(item, A.FnDecl) and item.extern}


def test_the_registry_and_the_stdlib_declare_the_same_builtins() -> None:
    mcp = {name for name, b in EFFECT_BUILTINS.items() if b.kind == MCP}
    io = {name for name, b in EFFECT_BUILTINS.items() if b.kind == IO}
    assert mcp == externs_of("mcp.sg")
    declared_io = externs_of("io.sg")
    assert io <= declared_io
    # the rest of io.sg: pure functions of the native library, and the run's arguments
    assert declared_io - io == {"format_timestamp", "parse_timestamp", "args"}
    assert not (declared_io - io - {"args"}) & set(load_io_builtins())


def test_each_description_fits_its_declaration_and_its_performer() -> None:
    from sagepy.effects import wire
    from sagepy.mcp.pool import ConnectionPool
    prelude = load_prelude()
    native = load_builtins()
    for name, b in EFFECT_BUILTINS.items():
        sig = prelude.fns[name]
        assert b.safety in ("read_only", "idempotent", "destructive", None), name
        assert b.unit == (sig.ret == T.UNIT), name
        assert b.optional == isinstance(sig.ret, T.OptionT) or name == "mcp_connection", name
        if b.record is not None:
            value = sig.ret.inner if name == "mcp_connection" else sig.ret
            value = value.elem if b.listed else value
            assert isinstance(value, T.RecordT) and value.info.name == b.record, name
        if b.kind == IO:
            assert b.mock_key is None and b.shape is None, name
            assert (b.perform == "native") == (name in native), name
            assert b.perform in ("native", None), name
            continue
        if not b.step:
            continue
        assert b.mock_key is not None and b.mock_key.startswith("mcp."), name
        assert callable(getattr(ConnectionPool, b.perform)), name
        assert b.shape is None or callable(getattr(wire, b.shape)), name
        assert b.declared_type <= (b.record is not None), name
    assert MCP_MOCK_KEYS == ("connect", "list_tools", "server_info", "call", "disconnect", "resources",
                             "resource_templates", "read_resource", "prompts", "get_prompt")


# Where a builtin's name may still be written outside the registry: what is particular to it, not a table.
PARTICULAR = {
    ("effects/boundary.py", "mcp_call"),     # a dynamic tool's call: its class is the tool's; it may need approval
    ("effects/otel.py", "mcp_call"),         # an `execute_tool` span, like a typed tool's call
    ("effects/mocks.py", "mcp_connect"),     # a mocked handle counts as open for mcp_connection
    ("effects/journal.py", "mcp_connect"),   # a replayed connect's handle, connected again on first use
    ("effects/journal.py", "mcp_disconnect"),
    ("mcp/dynamic.py", "mcp_connect"),       # the table name in messages about a connect's configuration
}


def test_no_other_module_keeps_a_table_of_them() -> None:
    """No module but the registry names an `mcp_*` builtin beyond `PARTICULAR`, and none holds a collection
    of two or more effect builtins' names (the native functions of sagepy.builtins aside: they are what
    `perform = "native"` calls)."""
    named, tables = set(), []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "effect_builtins.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("mcp_") \
                    and node.value in EFFECT_BUILTINS:
                named.add((rel, node.value))
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and not rel.startswith("builtins/"):
                elements = node.keys if isinstance(node, ast.Dict) else node.elts
                names = [e.value for e in elements if isinstance(e, ast.Constant) and e.value in EFFECT_BUILTINS]
                if len(names) > 1:
                    tables.append(f"{rel}:{node.lineno}: {names}")
    assert named <= PARTICULAR, sorted(named - PARTICULAR)
    assert tables == []
