"""AST node classes.

Plain classes with `__slots__`, generated once from a compact table: a `@dataclass` per node would cost about a
millisecond of import time each. Every node has `span = (line, col, end_line, end_col)` (1-based, columns in
code points). The checker fills the annotation slots (the second column of `_TABLE`); the parser leaves them
None, except `doc` (the `///` doc comment of an item or tool function, SPEC §1.1), which the parser sets after
building the tree. Nodes pickle (the AST cache of SPEC §0.1 stores them). The AST holds no runtime value: `()` is
`Literal(UNIT)` with this module's `UNIT` marker.
"""
from __future__ import annotations

from typing import Any

Span = tuple  # (line, col, end_line, end_col)


class UnitLiteral:
    """The value of the `Literal` written `()`. The AST holds no runtime value: the checker types this marker as
    `Unit` and the runtime turns it into its own unit value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "()"

    def __reduce__(self) -> str:
        return "UNIT"  # pickles as a reference to this module's singleton, so `is UNIT` holds after a cache load


UNIT = UnitLiteral()


class Node:
    __slots__ = ("span",)
    _fields: tuple = ()

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f, None)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def __getstate__(self) -> tuple:
        return tuple(getattr(self, s, None) for s in self._all_slots)

    def __setstate__(self, state: tuple) -> None:
        for s, v in zip(self._all_slots, state):
            object.__setattr__(self, s, v)


# name: (fields set by the parser, annotation slots filled in later)
_TABLE: dict[str, tuple[str, str]] = {
    # ---- module and items
    "Module": ("path items source", "name parent children namespace sibling"),
    "ModDecl": ("name pub", "module"),
    "UseDecl": ("path kind alias names pub", ""),        # kind: "leaf" | "group" | "glob"; names: [(name, alias)]
    "RecordDecl": ("name tparams fields pub", "doc"),   # fields: [Field]
    "FieldDecl": ("name type", ""),
    "EnumDecl": ("name tparams variants pub", "doc"),   # variants: [VariantDecl]
    "VariantDecl": ("name type", ""),
    "ConstDecl": ("name type value pub", "nslots doc"),
    "FnDecl": ("name tparams params ret fails body extern pub", "nslots info doc"),
    "Param": ("name type", ""),
    "ToolDecl": ("name fns pub", "doc"),
    "ToolFn": ("name params ret attrs", "doc"),             # attrs: [Attribute]
    "Attribute": ("name value", ""),
    "AgentDecl": ("name receives follows uses fields handlers pub", "info doc"),
    "AgentField": ("name type annotation", ""),
    "Handler": ("kind param param_type body", "nslots"),   # kind: start/waking/.../message/error
    "SupervisorDecl": ("name strategy children pub", "doc"),
    "ChildSpec": ("name restart handlers fields", "nslots"),  # handlers: [(name, handler)], fields: [(name, expr)]
    "ProtocolDecl": ("name steps pub", "doc"),
    "EffectHandlerDecl": ("name effect entries pub", ""),
    "TestDecl": ("name annotation body", "nslots"),
    "RunDecl": ("name", ""),
    # ---- types
    "TypeExpr": ("kind name args", ""),   # kind: prim list option oracle map result agent fn tuple named
    # ---- statements
    "Block": ("stmts value", ""),
    "LetStmt": ("target type value", ""),
    "AssignStmt": ("name value", "slot"),
    "IfStmt": ("cond then orelse", ""),
    "ForStmt": ("target iter body", ""),
    "WhileStmt": ("cond body", ""),
    "LoopStmt": ("body", ""),
    "BreakStmt": ("", ""),
    "ContinueStmt": ("", ""),
    "ReturnStmt": ("value", ""),
    "SpanStmt": ("name body", ""),
    "CheckpointStmt": ("", ""),
    "MockStmt": ("kind tool fn value", ""),   # kind: divine infer tool elicit/other (tool/fn for `mock tool`)
    "MockCalls": ("calls", ""),                # the value of `mock divine -> call T.f(…), …`: [Call]
    "ExprStmt": ("expr", ""),
    "MatchStmt": ("match", ""),
    "TargetName": ("name", "slot"),
    "TargetTuple": ("items", ""),
    # ---- expressions
    "Literal": ("value", ""),
    "Template": ("parts", ""),                 # parts: str | expression node
    "Name": ("name targs", "ref slot"),
    "VariantPath": ("enum_name targs variant", "ref"),
    "SelfExpr": ("", ""),
    "FieldAccess": ("obj name", ""),
    "TupleIndex": ("obj index", ""),
    "Call": ("fn args", "ref target"),
    "Binary": ("op left right", ""),
    "Unary": ("op operand", ""),               # op: "-" | "!"
    "TryExpr": ("expr", ""),
    "AwaitExpr": ("expr timeout", ""),
    "FailExpr": ("expr", ""),
    "CatchExpr": ("expr binder fallback", "slot"),
    "ListLit": ("items", ""),
    "TupleLit": ("items", ""),
    "MapLit": ("entries", ""),                 # [(key, value)]
    "RecordLit": ("name targs fields", "ref"),  # fields: [(name, expr, span)]
    "Closure": ("params body", "nslots captures"),
    "ClosureParam": ("name type", ""),
    "MatchExpr": ("scrutinee arms", ""),
    "Arm": ("pattern body", ""),
    "ArmBreak": ("", ""),
    "ArmContinue": ("", ""),
    "ArmReturn": ("value", ""),
    "RetryExpr": ("count delay kinds body", ""),
    "DivineExpr": ("prompt type infer options", "target offered max_steps model"),   # options: [DivineOption]
    "DivineOption": ("name value", ""),
    "SummonExpr": ("agent fields", "ref"),     # fields: [(name, expr, span)]
    "SendExpr": ("target message", ""),
    "ReceiveExpr": ("", ""),
    "ReplyExpr": ("value", ""),
    "YieldExpr": ("value", ""),
    "TraceExpr": ("value", ""),
    # ---- patterns
    "PatWild": ("", ""),
    "PatBind": ("name", "slot"),
    "PatLiteral": ("value", ""),
    "PatTuple": ("items", ""),
    "PatVariant": ("enum_name targs name payload", "ref"),
    "PatOr": ("alts", ""),
}


def _make(name: str, fields: str, notes: str) -> type:
    field_names = tuple(fields.split())
    note_names = tuple(notes.split())

    def __init__(self, *args: Any, span: Span | None = None) -> None:
        for f, v in zip(field_names, args):
            setattr(self, f, v)
        for n in note_names:
            setattr(self, n, None)
        self.span = span

    cls = type(name, (Node,), {
        "__slots__": field_names + note_names,
        "_fields": field_names,
        "_all_slots": ("span",) + field_names + note_names,
        "__init__": __init__,
    })
    return cls


for _name, (_fields_, _notes_) in _TABLE.items():
    globals()[_name] = _make(_name, _fields_, _notes_)

NODE_CLASSES = {name: globals()[name] for name in _TABLE}
