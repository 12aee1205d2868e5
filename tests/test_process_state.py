"""No process-wide mutable state but what docs/architecture.md lists with its reason (issue: runs share only
what is safe to share, SPEC §20). A module-level variable counts when a function rebinds it (`global`) or when
it holds a mutable container, a synchronisation object or an instance of a class of its module; `__all__` and upper-case tables that nothing rebinds
are constants."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sagepy"
DOC = ROOT / "docs" / "architecture.md"

_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "count", "WeakValueDictionary",
                  "WeakKeyDictionary", "WeakSet", "local", "Lock", "RLock", "Condition", "Event", "Semaphore",
                  "BoundedSemaphore"}
_MUTABLE_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _is_mutable(value: ast.expr | None, classes: set[str]) -> bool:
    if isinstance(value, _MUTABLE_LITERALS):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name in _MUTABLE_CALLS or (isinstance(func, ast.Name) and name in classes)
    return False


def found_state() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}   # an instance holds state
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                found.update((module, name) for name in node.names)
        for node in tree.body:
            if isinstance(node, ast.Assign) and _is_mutable(node.value, classes):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and _is_mutable(node.value, classes):
                targets = [node.target]
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name) and target.id != "__all__" and not target.id.isupper():
                    found.add((module, target.id))
    return found


def listed_state() -> set[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Process-wide state"):]
    section = section[:section.index("\n## ", 1)]
    listed = set()
    for row in re.findall(r"^\| `([\w.]+)` \| (.+?) \|", section, re.M):
        module, names = row
        listed.update((module, name) for name in re.findall(r"`(\w+)`", names))
    return listed


def test_every_process_wide_variable_is_listed_with_its_reason() -> None:
    unlisted = sorted(found_state() - listed_state())
    assert not unlisted, ("module-level state not listed under 'Process-wide state' in docs/architecture.md "
                          f"(give the run its own, or list it with why there is one per process): {unlisted}")


def test_the_list_names_no_variable_that_is_gone() -> None:
    stale = sorted(listed_state() - found_state())
    assert not stale, f"docs/architecture.md lists process-wide state that no longer exists: {stale}"
