"""The comparison rules of `sage check --verify-tools` (SPEC §10.3) on nested schemas, against the
in-process server of `servers/rich.py`: arguments must fit the input schema, results must be representable
by the declared return type."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tools_cli_helpers import run_sage, write

RICH = Path(__file__).resolve().parent / "servers" / "rich.py"

DECLARATIONS = '''
    enum Hue { red, green, blue }
    record Tag { name: String, weight: Option<Float> }
    record BadQuery { text: String, tags: List<Tag>, color: Option<Hue>, limits: Option<Map<String, String>> }
    record Query { text: String, tags: List<Tag> }
    record Leaf { label: String, children: List<Leaf> }

    tool Rich {
        fn search(query: BadQuery, page: Option<Int>, exact: Option<Bool>) -> List<Tag>
        fn paint(color: Hue, shade: Int) -> String
        fn tree(depth: Int) -> Leaf
        fn maybe(flag: Bool) -> Int
        #[mcp_name = "count-words"]
        fn count_words(text: String) -> Map<String, Bool>
        fn greet(who: Option<String>, punctuation: String) -> String
    }

    tool rich {
        fn search(query: Query) -> List<Tag>
        #[mcp_name = "count-words"]
        fn count(text: String) -> Map<String, Float>
        fn maybe(flag: Bool) -> Option<Int>
        fn greet(who: String) -> Unit
    }
'''


def test_nested_mismatches(tmp_path, capsys, monkeypatch):
    shutil.copy(RICH, tmp_path / "rich.py")
    write(tmp_path / "grove.toml", '[tools.Rich]\nmodule = "rich.py"\n')
    write(tmp_path / "src" / "main.sg", DECLARATIONS)
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "check", "--verify-tools", "--format", "json")
    assert code == 1
    found = [(d["line"], d["code"], d["message"]) for d in json.loads(out)["diagnostics"]]
    assert found == [
        (9, "E082", "parameter 'query' of Rich.search does not fit tool 'search': color: variant blue of Hue is "
                    "not one of the server's values (red, green)"),
        (10, "E082", "parameter 'color' of Rich.paint does not fit tool 'paint': variant blue of Hue is not one of "
                     "the server's values (red, green)"),
        (11, "W083", "return type Leaf of Rich.tree cannot represent the outputSchema of tool 'tree': children: the "
                     "server may leave it out; declare it Option in Leaf"),
        (12, "W083", "return type Int of Rich.maybe cannot represent the outputSchema of tool 'maybe': result: the "
                     "server may send null, which Int cannot hold"),
        (14, "W083", "return type Map<String, Bool> of Rich.count_words cannot represent the outputSchema of tool "
                     "'count-words': .*: the server may send integer, which Bool cannot hold"),
        (15, "E082", "parameter 'who' of Rich.greet is declared Option<String>, but tool 'greet' requires it"),
    ]
    assert err == "check failed: 3 errors, 3 warnings\n"


def test_map_value_types_and_unit_results(tmp_path, capsys, monkeypatch):
    shutil.copy(RICH, tmp_path / "rich.py")
    write(tmp_path / "grove.toml", '[tools.Rich]\nmodule = "rich.py"\n')
    write(tmp_path / "src" / "main.sg", '''
        record Tag { name: String, weight: Option<Float> }
        record Query { text: String, tags: List<Tag>, limits: Option<Map<String, Float>> }

        tool Rich {
            fn search(query: Query) -> List<Tag>
        }
    ''')
    code, out, err = run_sage(capsys, monkeypatch, tmp_path, "check", "--verify-tools")
    assert code == 1
    assert "error[E082]: parameter 'query' of Rich.search does not fit tool 'search': limits.*: declared Float, " \
           "the server expects integer\n" in err
