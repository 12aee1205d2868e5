"""How the language server shows a symbol: its declaration's signature, its doc comment, a builtin's one-line
description. Everything shown comes from the checker's objects (signatures, types, infos) and the AST."""
from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

from ..check.index import Symbol
from ..check.typeops import show
from ..resources import grammar_file, stdlib_dir

# the checker intrinsics have no declaration in stdlib/ (no single signature describes them)
INTRINSICS = {
    "print": ("print(v: T) -> Unit", "Writes the display form of v and a newline to stdout."),
    "print_err": ("print_err(v: T) -> Unit", "Writes the display form of v and a newline to stderr."),
    "str": ("str(v: T) -> String", "The display string of any value."),
    "len": ("len(x: List<T> | Map<K, V>) -> Int", "The number of elements of a list or entries of a map."),
    "sort": ("sort(xs: List<T>) -> List<T>", "A sorted copy of a list of Int, Float or String."),
    "map_set": ("map_set(m: Map<K, V>, key: K, value: V) -> Unit", "Sets key in the map held by variable m."),
    "map_delete": ("map_delete(m: Map<K, V>, key: K) -> Unit", "Removes key from the map held by variable m."),
    "assert": ("assert(cond: Bool) -> Unit", "Fails the test unless cond is true."),
    "assert_true": ("assert_true(cond: Bool) -> Unit", "Fails the test unless cond is true."),
    "assert_false": ("assert_false(cond: Bool) -> Unit", "Fails the test unless cond is false."),
    "assert_eq": ("assert_eq(actual: T, expected: T) -> Unit", "Fails the test unless the values are equal."),
    "assert_neq": ("assert_neq(a: T, b: T) -> Unit", "Fails the test when the values are equal."),
    "assert_gt": ("assert_gt(a: T, b: T) -> Unit", "Fails the test unless a > b."),
    "assert_lt": ("assert_lt(a: T, b: T) -> Unit", "Fails the test unless a < b."),
    "assert_gte": ("assert_gte(a: T, b: T) -> Unit", "Fails the test unless a >= b."),
    "assert_lte": ("assert_lte(a: T, b: T) -> Unit", "Fails the test unless a <= b."),
    "assert_contains": ("assert_contains(s: String, part: String) -> Unit", "Fails the test unless s contains part."),
    "assert_not_contains": ("assert_not_contains(s: String, part: String) -> Unit",
                            "Fails the test when s contains part."),
    "assert_starts_with": ("assert_starts_with(s: String, prefix: String) -> Unit",
                           "Fails the test unless s starts with prefix."),
    "assert_ends_with": ("assert_ends_with(s: String, suffix: String) -> Unit",
                         "Fails the test unless s ends with suffix."),
    "assert_empty": ("assert_empty(s: String) -> Unit", "Fails the test unless the string is empty."),
    "assert_not_empty": ("assert_not_empty(s: String) -> Unit", "Fails the test when the string is empty."),
    "assert_len": ("assert_len(xs: List<T>, n: Int) -> Unit", "Fails the test unless the list has n elements."),
    "assert_empty_list": ("assert_empty_list(xs: List<T>) -> Unit", "Fails the test unless the list is empty."),
    "assert_not_empty_list": ("assert_not_empty_list(xs: List<T>) -> Unit", "Fails the test when the list is empty."),
    "assert_fails": ("assert_fails(expr) -> Unit", "Fails the test unless the expression fails."),
}


@lru_cache(maxsize=1)
def reserved_words() -> tuple[str, ...]:
    """The words the grammar's IDENT refuses (its negative lookahead is the one list of them)."""
    with open(grammar_file(), encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("IDENT:"):
                inner = re.search(r"\(\?:([^)]*)\)", line)
                return tuple(inner.group(1).split("|")) if inner else ()
    return ()


@lru_cache(maxsize=1)
def builtin_descriptions() -> dict[str, str]:
    """The first line of the `//` comment above each `extern fn` and `const` of stdlib/ (a comment shared by
    consecutive declarations describes each of them)."""
    found: dict[str, str] = {}
    directory = stdlib_dir()
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".sg"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as fh:
            comment: list[str] = []
            shared: str | None = None
            for raw in fh:
                line = raw.strip()
                if line.startswith("//") and not line.startswith("///"):
                    comment.append(line[2:].strip())
                    shared = None
                    continue
                decl = re.match(r"(?:pub\s+)?(?:extern\s+fn|const)\s+([A-Za-z_]\w*)", line)
                if decl:
                    text = comment[0] if comment else shared
                    if text:
                        found.setdefault(decl.group(1), text)
                    shared = text
                else:
                    shared = None
                comment = []
    return found


def fn_signature(name: str, sig: Any, keyword: str = "fn") -> tuple[str, list[tuple[int, int]]]:
    """`fn name<T>(a: Int, b: String) -> Int fails`, and the offsets of each parameter in it."""
    head = f"{keyword} {name}" if keyword else name
    if sig.tparams:
        head += "<" + ", ".join(sig.tparams) + ">"
    head += "("
    offsets = []
    parts = []
    pos = len(head)
    for pname, ptype in sig.params:
        text = f"{pname}: {show(ptype)}"
        offsets.append((pos, pos + len(text)))
        parts.append(text)
        pos += len(text) + 2
    label = head + ", ".join(parts) + ") -> " + show(sig.ret) + (" fails" if sig.fails else "")
    return label, offsets


def signature(sym: Symbol) -> str:
    """The declaration of a symbol as Sage source (one or a few lines)."""
    kind, name, info, decl = sym.kind, sym.name, sym.info, sym.decl
    if kind == "fn" and info is not None:
        return fn_signature(name, info)[0]
    if kind == "const":
        return f"const {name}: {show(sym.type)}" if sym.type is not None else f"const {name}"
    if kind == "record" and info is not None:
        params = "<" + ", ".join(info.params) + ">" if info.params else ""
        fields = ", ".join(f"{f}: {show(t)}" for f, t in info.fields)
        return f"record {name}{params} {{ {fields} }}" if fields else f"record {name}{params} {{}}"
    if kind == "enum" and info is not None:
        params = "<" + ", ".join(info.params) + ">" if info.params else ""
        variants = ", ".join(v if t is None else f"{v}({show(t)})" for v, t in info.variants)
        return f"enum {name}{params} {{ {variants} }}"
    if kind == "variant":
        owner = sym.owner.name + "::" if sym.owner is not None else ""
        payload = getattr(info, "payload", info)
        return f"{owner}{name}" + (f"({show(payload)})" if payload is not None and not isinstance(payload, str)
                                   else "")
    if kind == "field":
        owner = f"{sym.owner.kind} {sym.owner.name}: " if sym.owner is not None else ""
        persistent = "@persistent " if getattr(info, "persistent", False) else ""
        type_ = show(sym.type) if sym.type is not None else "?"
        return f"{owner}{persistent}{name}: {type_}"
    if kind == "agent" and info is not None:
        served = [f'#[mcp_tool = "{a.value}"]\n' for a in getattr(decl, "attrs", None) or ()]
        lines = ["".join(served) + f"agent {name}" +
                 (f" receives {show(info.receives)}" if info.receives is not None else "") + " {"]
        lines += [f"    {'@persistent ' if f.persistent else ''}{f.name}: {show(f.type)}" for f in info.fields.values()]
        return "\n".join(lines + ["}"]) if len(lines) > 1 else lines[0] + " }"
    if kind == "tool" and info is not None:
        lines = [f"tool {name} {{"]
        lines += ["    " + fn_signature(f, s)[0].replace(" fails", "") for f, s in info.fns.items()]
        return "\n".join(lines + ["}"])
    if kind == "toolfn" and info is not None:
        tool = sym.owner.name if sym.owner is not None else name.partition(".")[0]
        fname = name.rpartition(".")[2]
        remote = next((a.value for a in getattr(decl, "attrs", ()) if a.name == "mcp_name"), None)
        head = f'#[mcp_name("{remote}")]\n' if remote else ""
        return head + fn_signature(fname, info)[0].replace(" fails", "") + f"  // tool {tool}"
    if kind == "local":
        return f"{name}: {show(sym.type)}" if sym.type is not None else name
    if kind == "module":
        return f"mod {name}"
    if kind == "builtin":
        return builtin_signature(name, info) or name
    return f"{kind} {name}"


def builtin_signature(name: str, info: Any = None) -> str | None:
    if name in INTRINSICS:
        return INTRINSICS[name][0]
    from ..check.prelude import load_prelude
    prelude = load_prelude()
    if name in prelude.fns:
        return fn_signature(name, prelude.fns[name])[0]
    if name in prelude.consts:
        return f"const {name}: {show(prelude.consts[name])}"
    return None


def documentation(sym: Symbol) -> str | None:
    doc = getattr(sym.decl, "doc", None)
    if doc:
        return doc
    if sym.kind == "toolfn" and sym.owner is None and sym.info is not None:
        tool, _, fn = sym.name.partition(".")
        from ..check.prelude import load_prelude
        info = load_prelude().tools.get(tool)
        return info.docs.get(fn) if info is not None else None
    if sym.kind == "builtin":
        if sym.name in INTRINSICS:
            return INTRINSICS[sym.name][1]
        return builtin_descriptions().get(sym.name)
    return None


def hover_markdown(sym: Symbol) -> str:
    text = f"```sage\n{signature(sym)}\n```"
    doc = documentation(sym)
    if doc:
        text += "\n\n" + doc.strip()
    return text
