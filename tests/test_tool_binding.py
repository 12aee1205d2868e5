"""A tool block is bound to its `[tools.X]` table once, by the checker (SPEC §8.1): the binding is on every
`ToolRef` of its calls, and an ambiguous one is the checker's E090, pointing into grove.toml."""
from __future__ import annotations

from pathlib import Path

from sagepy.session import Session
from sagepy.syntax import ast as A

PROGRAM = """\
tool tracker {
    fn list(state: String) -> String
}

agent Main {
    use tracker

    on start {
        let open = try tracker.list("open");
        print(open);
        yield(0);
    }
}

run Main;
"""

TABLE = """\
[tools.{key}]
command = "python3"
args = ["server.py"]
"""


def project(root: Path, *keys: str) -> Path:
    (root / "grove.toml").write_text('[project]\nname = "p"\nentry = "main.sg"\n\n'
                                     + "\n".join(TABLE.format(key=key) for key in keys))
    (root / "main.sg").write_text(PROGRAM)
    return root / "main.sg"


def tool_refs(program) -> list:
    found = []

    def walk(node) -> None:
        if isinstance(node, A.Call) and getattr(node, "ref", None) is not None and hasattr(node.ref, "server"):
            found.append(node.ref)
        for name in getattr(type(node), "__slots__", ()):
            child = getattr(node, name, None)
            for item in child if isinstance(child, (list, tuple)) else (child,):
                if isinstance(item, A.Node):
                    walk(item)
    for module in program.modules:
        for item in module.items:
            walk(item)
    return found


def test_the_checker_records_the_binding_on_each_call(tmp_path: Path) -> None:
    entry = project(tmp_path, "Tracker")
    session, _ = Session.open(str(entry))
    program, diags = session.analyze(str(entry), link=False)
    assert [d.code for d in diags if d.severity == "error"] == []
    (ref,) = tool_refs(program)
    assert (ref.tool, ref.server, ref.remote) == ("tracker", "Tracker", "list")


def test_an_ambiguous_binding_is_the_checkers_e090(tmp_path: Path) -> None:
    entry = project(tmp_path, "TRACKER", "Tracker")
    session, _ = Session.open(str(entry))
    _, diags = session.analyze(str(entry), link=False)
    (e090,) = [d for d in diags if d.code == "E090"]
    assert e090.message == "grove.toml: tool block tracker matches several tables in grove.toml: " \
                           "[tools.TRACKER], [tools.Tracker]"
    assert e090.file == str(tmp_path / "grove.toml") and e090.span is not None and e090.span[0] == 5


def test_every_user_of_the_rule_binds_alike(tmp_path: Path) -> None:
    """sagepy.binding is the one statement of the rule: the checker's binding, grove.toml's tables
    (`sage tools X`, the background start) and bare keys (a check without grove.toml) all give its answer."""
    from sagepy.binding import AmbiguousBinding, bound_key
    from sagepy.check.symbols import TableKeys
    cases = [(["tracker"], "tracker"), (["Tracker"], "Tracker"), (["Tracker", "tracker"], "tracker"),
             (["TRACKER", "Tracker"], AmbiguousBinding), (["other"], None), (["shell"], None)]
    for keys, want in cases:
        name = "Shell" if keys == ["shell"] else "tracker"
        if want is AmbiguousBinding:
            try:
                bound_key(name, keys)
            except AmbiguousBinding:
                pass
            else:
                raise AssertionError(f"{keys}: not ambiguous")
            assert TableKeys(keys).binding(name) == (None, None)
            continue
        assert bound_key(name, keys) == want, keys
        assert TableKeys(keys).binding(name) == (want, None), keys
        root = tmp_path / "_".join(keys)
        root.mkdir()
        entry = project(root, *keys)
        session, _ = Session.open(str(entry))
        assert session.settings.tools.binding(name) == (want, None), keys
        tools = session.settings.tools
        assert tools.bind(name) is (tools.servers[want] if want else None), keys
        if name == "tracker":
            program, _ = session.analyze(str(entry), link=False)
            (ref,) = tool_refs(program)
            assert ref.server == (want or "tracker"), keys
