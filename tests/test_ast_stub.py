"""sagepy/syntax/ast.pyi, the type stub of the node classes that ast.py generates from its table, is kept in
sync by regenerating it here (issue 31: the AST visible to type checkers and editors)."""
from __future__ import annotations

import ast

from sagepy.syntax import ast as A
from sagepy.syntax.stub import STUB, stub_text


def test_the_checked_in_stub_is_the_generated_one() -> None:
    assert STUB.read_text(encoding="utf-8") == stub_text(), \
        "sagepy/syntax/ast.pyi is stale: run `python -m sagepy.syntax.stub`"


def test_the_stub_declares_every_node_with_its_slots() -> None:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for name, cls in A.NODE_CLASSES.items():
        declared = [s.target.id for s in classes[name].body if isinstance(s, ast.AnnAssign)]
        assert declared == list(cls.__slots__), name


def test_call_ref_is_the_checkers_union() -> None:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    call = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Call")
    ref = next(s for s in call.body if isinstance(s, ast.AnnAssign) and s.target.id == "ref")
    assert ast.unparse(ref.annotation) == "CallRef | None"
    from sagepy.check.names import BUILTIN, CallRef, VariantRef
    from sagepy.check.symbols import Entity, ToolRef
    assert set(CallRef.__args__) == {Entity, VariantRef, ToolRef, type(BUILTIN)}
