"""The requests of SPEC §19.2, answered from the checker's name index (positions here are 1-based lines and
code-point columns, ends exclusive; the server converts them to the client's encoding).

A request on a document uses the last analysis of a program that loads it. When the document changed since
(it does not parse now, or the change is not analysed yet), an occurrence is still used where the line that
holds it is unchanged.
"""
from __future__ import annotations

import re
from typing import Any

from ..core import types as T
from ..check.index import Occurrence, PERSISTED_METHODS, Symbol, locals_of
from ..check.typeops import PersistedT, show
from ..syntax import ast as A
from .describe import INTRINSICS, builtin_signature, documentation, fn_signature, reserved_words, signature
from .workspace import Analysis, Workspace

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
PLACEHOLDER = "sage_lsp_completion_"


class RequestError(Exception):
    """A request that cannot be answered as asked (an error response to the client)."""


def _line(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def occurrence_at(ws: Workspace, path: str, text: str, line: int, col: int) -> tuple[Analysis, Occurrence] | None:
    for analysis in ws.analyses_of(path):
        old = analysis.sources.get(path)
        if old is None or (old != text and _line(old, line) != _line(text, line)):
            continue
        occ = analysis.index.at(path, line, col)
        if occ is not None and occ.symbol is not None:
            return analysis, occ
    return None


# ---------------------------------------------------------------- hover, definition, references, rename
def hover(ws: Workspace, path: str, text: str, line: int, col: int) -> tuple[str, tuple] | None:
    found = occurrence_at(ws, path, text, line, col)
    if found is None:
        return None
    occ = found[1]
    markdown = f"```sage\n{signature(occ.symbol)}\n```"
    doc = documentation(occ.symbol)
    if doc:
        markdown += "\n\n" + doc.strip()
    return markdown, occ.span


def definition(ws: Workspace, path: str, text: str, line: int, col: int) -> tuple[str, tuple] | None:
    found = occurrence_at(ws, path, text, line, col)
    if found is None or found[1].symbol.path is None:
        return None
    sym = found[1].symbol
    return sym.path, sym.span


def references(ws: Workspace, path: str, text: str, line: int, col: int,
               declaration: bool = True) -> list[tuple[str, tuple]]:
    found = occurrence_at(ws, path, text, line, col)
    if found is None:
        return []
    return _uses(ws, path, found[1].symbol, declaration)


def _uses(ws: Workspace, path: str, sym: Symbol, declaration: bool) -> list[tuple[str, tuple]]:
    seen: dict[tuple, None] = {}
    for analysis in ws.all_analyses(path):
        for file, occ in analysis.index.uses_of(sym.key):
            if declaration or not occ.define:
                seen.setdefault((file, occ.span), None)
    return sorted(seen)


def rename(ws: Workspace, path: str, text: str, line: int, col: int, new: str) -> dict[str, list[tuple[tuple, str]]]:
    """The edits of a rename: {file: [(span, new text)]}; spans of zero width insert."""
    if not IDENT.match(new):
        raise RequestError(f"`{new}` is not a valid name")
    if new in reserved_words():
        raise RequestError(f"`{new}` is a keyword and cannot be used as a name")
    found = occurrence_at(ws, path, text, line, col)
    if found is None:
        raise RequestError("no symbol to rename here")
    analysis, occ = found
    sym = occ.symbol
    if sym.path is None:
        raise RequestError(f"`{sym.name}` is a builtin and cannot be renamed")
    if sym.kind == "module":
        raise RequestError(f"`{sym.name}` is a module: rename its file instead")
    edits: dict[str, list[tuple[tuple, str]]] = {}
    for file, span in _uses(ws, path, sym, True):
        source = _source_of(ws, file)
        if _line(source, span[0])[span[1] - 1:span[3] - 1] == sym.name:   # `use m::f as g` keeps g
            edits.setdefault(file, []).append((span, new))
    if sym.kind == "toolfn" and isinstance(sym.decl, A.ToolFn):
        if not any(a.name == "mcp_name" for a in sym.decl.attrs):
            l0, c0 = sym.decl.span[:2]
            insert = f'#[mcp_name("{sym.name}")]\n' + " " * (c0 - 1)
            edits.setdefault(sym.path, []).append(((l0, c0, l0, c0), insert))
    return edits


def _source_of(ws: Workspace, path: str) -> str:
    text = ws.texts.get(path)
    if text is not None:
        return text
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


# ---------------------------------------------------------------- completion
class Item:
    __slots__ = ("label", "kind", "detail", "doc")

    def __init__(self, label: str, kind: str, detail: str | None = None, doc: str | None = None) -> None:
        self.label = label
        self.kind = kind
        self.detail = detail
        self.doc = doc


def completion(ws: Workspace, path: str, text: str, line: int, col: int) -> list[Item]:
    before = _line(text, line)[:col - 1]
    member = re.search(r"(\bself|[A-Za-z_]\w*|[)\]])\s*\.\s*(\w*)\Z", before)
    path_sep = re.search(r"([A-Za-z_]\w*)\s*::\s*(\w*)\Z", before)
    word = re.search(r"(\w*)\Z", before).group(1)
    if member or path_sep:
        analysis, occ_col = _fresh_analysis(ws, path, text, line, col, word)
        if analysis is None:
            return []
        return _members(analysis, path, line, occ_col, col - len(word), bool(path_sep))
    analysis, _ = _fresh_analysis(ws, path, text, line, col, word)
    return _names(ws, analysis, path, line, col)


def _fresh_analysis(ws: Workspace, path: str, text: str, line: int, col: int,
                    word: str) -> tuple[Analysis | None, int]:
    """An analysis of this text, or of the text with a name written at the cursor (what the user is about to
    type) and, failing that, also a `;` after it: the checker then tells what `x.` or `E::` is."""
    for analysis in ws.analyses_of(path):
        if analysis.sources.get(path) == text and word:
            return analysis, col
    lines = text.split("\n")
    current = lines[line - 1]
    for tail in ("", ";", ");", "};"):
        patched = current[:col - 1] + PLACEHOLDER + tail + current[col - 1:]
        analysis = ws.analyze_text(path, "\n".join(lines[:line - 1] + [patched] + lines[line:]))
        if analysis is not None and analysis.index is not None:
            return analysis, col + len(PLACEHOLDER)
    stale = ws.analyses_of(path)
    return (stale[0] if stale else None), col


def _members(analysis: Analysis, path: str, line: int, end_col: int, start_col: int, variants: bool) -> list[Item]:
    index = analysis.index
    occ = index.at(path, line, end_col)
    container = occ.container if occ is not None and occ.span[1] == start_col else None
    items = _type_members(container) if container is not None and not variants else []
    if items:
        return items
    receiver = _receiver(index, path, line, start_col)
    if receiver is None:
        return []
    sym = receiver.symbol
    if sym.kind in ("enum", "tool"):
        return _symbol_members(sym)
    return [] if variants else _type_members(sym.type)


def _receiver(index: Any, path: str, line: int, start_col: int) -> Occurrence | None:
    for occ in reversed(index.occurrences.get(path, ())):
        if occ.span[2] == line and occ.span[3] <= start_col and occ.symbol is not None:
            return occ
    return None


def _symbol_members(sym: Symbol) -> list[Item]:
    if sym.path is None and sym.name in ("Option", "Result"):
        names = ("Some", "None") if sym.name == "Option" else ("Ok", "Err")
        return [Item(n, "variant", f"{sym.name}::{n}") for n in names]
    if sym.kind == "tool" and not sym.members and sym.info is not None:   # a built-in tool
        return [Item(f, "method", fn_signature(f, s)[0].replace(" fails", ""), sym.info.docs.get(f))
                for f, s in sym.info.fns.items()]
    kinds = {"variant": "variant", "toolfn": "method", "field": "field"}
    return [Item(name, kinds.get(m.kind, "field"), signature(m), documentation(m)) for name, m in sym.members.items()]


def _type_members(t: Any) -> list[Item]:
    from ..check.symbols import AgentInfo, ToolInfo
    if isinstance(t, AgentInfo):
        return [Item(f.name, "field", f"{'@persistent ' if f.persistent else ''}{f.name}: {show(f.type)}")
                for f in t.fields.values()]
    if isinstance(t, ToolInfo):
        return [Item(f, "method", fn_signature(f, s)[0].replace(" fails", ""), t.docs.get(f)) for f, s in t.fns.items()]
    if isinstance(t, T.RecordT):
        return [Item(f, "field", f"{f}: {show(ft)}") for f, ft in t.fields()]
    if isinstance(t, PersistedT):
        return [Item(m, "method") for m in PERSISTED_METHODS]
    if isinstance(t, T.Prim) and t.name == "Error":
        return [Item("message", "field", "message: String"), Item("kind", "field", "kind: String")]
    return []


def _names(ws: Workspace, analysis: Analysis | None, path: str, line: int, col: int) -> list[Item]:
    items: dict[str, Item] = {}
    if analysis is not None:
        for sym in _visible_locals(analysis, path, line, col):
            items.setdefault(sym.name, Item(sym.name, "variable", signature(sym)))
        scope = analysis.index.scopes.get(path)
        if scope is not None:
            declared: dict[int, Symbol] = {}
            for occs in analysis.index.occurrences.values():
                for occ in occs:
                    if occ.define and occ.symbol is not None and occ.symbol.decl is not None:
                        declared[id(occ.symbol.decl)] = occ.symbol
            for name, entity in list(scope.items.items()) + list(scope.imports.items()):
                if name.startswith(PLACEHOLDER) or entity.kind == "error":
                    continue
                sym = declared.get(id(entity.decl)) if entity.decl is not None else None
                detail = signature(sym) if sym is not None else entity.kind
                items.setdefault(name, Item(name, entity.kind, detail, documentation(sym) if sym else None))
    from ..check.prelude import load_prelude
    prelude = load_prelude()
    for name in list(prelude.fns) + list(prelude.consts) + list(INTRINSICS):
        items.setdefault(name, Item(name, "function" if name not in prelude.consts else "const",
                                    builtin_signature(name)))
    for name in prelude.tools:
        items.setdefault(name, Item(name, "tool", f"tool {name}"))
    for word in reserved_words():
        if word[:1].islower():
            items.setdefault(word, Item(word, "keyword"))
    return list(items.values())


_SCOPES = (A.Block, A.Arm, A.Closure, A.FnDecl, A.Handler, A.ForStmt, A.CatchExpr, A.TestDecl)


def _visible_locals(analysis: Analysis, path: str, line: int, col: int) -> list[Symbol]:
    """The locals declared before the cursor whose scope (the innermost block, arm, closure, function,
    handler, loop or `catch` around their declaration) holds the cursor."""
    module = analysis.modules.get(path)
    cursor = (line, col)
    item = next((i for i in (module.items if module is not None else ())
                 if i.span and i.span[:2] <= cursor <= i.span[2:]), None)
    if item is None:
        return []
    regions: list[tuple] = []
    _collect_regions(item, regions)
    visible = []
    for sym in locals_of(analysis.index, path):
        at = sym.span[:2]
        if at >= cursor or not item.span[:2] <= at or sym.name.startswith(PLACEHOLDER):
            continue
        around = [r for r in regions if r[:2] <= at < r[2:]]
        if not around:
            continue
        inner = max(around, key=lambda r: r[:2])
        if inner[:2] <= cursor <= inner[2:]:
            visible.append(sym)
    return visible


def _collect_regions(node: Any, out: list[tuple]) -> None:
    if isinstance(node, (list, tuple)):
        for x in node:
            _collect_regions(x, out)
        return
    if not isinstance(node, A.Node):
        return
    if isinstance(node, _SCOPES) and node.span:
        out.append(node.span)
    for slot in node._fields:
        _collect_regions(getattr(node, slot, None), out)


# ---------------------------------------------------------------- signature help
def signature_help(ws: Workspace, path: str, text: str, line: int, col: int) -> tuple[str, list, int, str | None] | None:
    lines = text.split("\n")
    before = "\n".join(lines[:line - 1] + [lines[line - 1][:col - 1]])
    depth, commas, i = 0, 0, len(before) - 1
    while i >= 0:
        ch = before[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch == ";" and depth == 0:
            return None
        i -= 1
    if i < 0 or before[i] != "(":
        return None
    callee = re.search(r"(?:([A-Za-z_]\w*)\s*\.\s*)?([A-Za-z_]\w*)\s*\Z", before[:i])
    if callee is None:
        return None
    call_line = before[:i].count("\n") + 1
    name_col = callee.start(2) - (before.rfind("\n", 0, callee.start(2)) + 1) + 1
    found = occurrence_at(ws, path, text, call_line, name_col)
    sig, doc = None, None
    if found is not None:
        sym = found[1].symbol
        sig, doc = _callable(sym), documentation(sym)
        label_name = sym.name.rpartition(".")[2]
    else:
        label_name = callee.group(2)
        sig, doc = _callable_by_name(ws, path, callee.group(1), label_name)
    if sig is None:
        if label_name in INTRINSICS:
            label, text_doc = INTRINSICS[label_name]
            params = label[label.index("(") + 1:label.rindex(")")]
            offsets, pos = [], label.index("(") + 1
            for part in params.split(", ") if params else []:
                offsets.append((pos, pos + len(part)))
                pos += len(part) + 2
            return label, offsets, commas, text_doc
        return None
    label, offsets = fn_signature(label_name, sig, keyword="")
    return label, offsets, commas, doc


def _callable(sym: Symbol) -> Any:
    if sym.kind in ("fn", "toolfn") and sym.info is not None:
        return sym.info
    if sym.kind == "builtin":
        from ..check.prelude import load_prelude
        return load_prelude().fns.get(sym.name)
    return None


def _callable_by_name(ws: Workspace, path: str, owner: str | None, name: str) -> tuple[Any, str | None]:
    """A callee the current text names but no analysis has seen yet (an unclosed call does not parse): looked
    up in the module scope the checker built, then in the prelude."""
    from ..check.prelude import load_prelude
    prelude = load_prelude()
    scope = None
    for analysis in ws.analyses_of(path):
        scope = analysis.index.scopes.get(path)
        if scope is not None:
            break
    if owner is not None:
        entity = scope.lookup(owner) if scope is not None else None
        tool = entity.info if entity is not None and entity.kind == "tool" else prelude.tools.get(owner)
        if tool is not None and name in tool.fns:
            return tool.fns[name], tool.docs.get(name)
        return None, None
    entity = scope.lookup(name) if scope is not None else None
    if entity is not None and entity.kind == "fn":
        return entity.info, getattr(entity.decl, "doc", None)
    if name in prelude.fns:
        from .describe import builtin_descriptions
        return prelude.fns[name], builtin_descriptions().get(name)
    return None, None


# ---------------------------------------------------------------- document symbols
class Outline:
    __slots__ = ("name", "kind", "span", "name_span", "children", "detail")

    def __init__(self, name: str, kind: str, span: tuple, name_span: tuple, detail: str | None = None) -> None:
        self.name = name
        self.kind = kind
        self.span = span
        self.name_span = name_span
        self.detail = detail
        self.children: list[Outline] = []


def document_symbols(ws: Workspace, path: str) -> list[Outline]:
    analyses = ws.analyses_of(path)
    if not analyses:
        return []
    analysis = analyses[0]
    module = analysis.modules.get(path)
    if module is None:
        return []
    names = {id(o.symbol.decl): o.span for o in analysis.index.occurrences.get(path, ())
             if o.define and o.symbol is not None and o.symbol.decl is not None}
    out = []
    for item in module.items:
        span = names.get(id(item))
        name = getattr(item, "name", None)
        if span is None or not isinstance(name, str):
            continue
        node = Outline(name, type(item).__name__, item.span, span)
        for member in _members_of(item):
            mspan = names.get(id(member), member.span)
            label = getattr(member, "name", None) or _handler_label(member)
            node.children.append(Outline(label, type(member).__name__, member.span, mspan))
        out.append(node)
    return out


def _members_of(item: Any) -> list:
    if isinstance(item, A.RecordDecl):
        return list(item.fields)
    if isinstance(item, A.EnumDecl):
        return list(item.variants)
    if isinstance(item, A.AgentDecl):
        return list(item.fields) + list(item.handlers)
    if isinstance(item, A.ToolDecl):
        return list(item.fns)
    return []


def _handler_label(h: Any) -> str:
    if h.kind in ("message", "error") and h.param:
        return f"on {h.kind}({h.param})"
    return f"on {h.kind}"
