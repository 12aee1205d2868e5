"""`sage lsp` on an `_eval.sg` file (SPEC §19.2, §22.1): the row variable has a hover and its fields complete,
and an eval's mistakes are diagnosed as `sage check` reports them."""
from __future__ import annotations

import textwrap
from pathlib import Path

from .client import SageClient

EVAL = textwrap.dedent("""\
    record Case { title: String, label: String }

    eval "labels" over "cases.jsonl" as c: Case {
        let got = try divine("Label: {c.title}");
        score "exact" = got == c.label;
    }
    """)


def test_the_row_of_an_eval_has_a_hover_completion_and_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "grove.toml").write_text('[project]\nname = "evals"\n')
    (tmp_path / "labels_eval.sg").write_text(EVAL)
    client = SageClient(tmp_path)
    try:
        mark = client.mark()
        client.open("labels_eval.sg")
        client.wait_diagnostics("labels_eval.sg", mark)
        assert not client.diagnostics[client.uri("labels_eval.sg")]
        hover = client.hover("labels_eval.sg", 4, EVAL.splitlines()[4].index("c.label"))
        assert "c: Case" in hover.contents.value
        hover = client.hover("labels_eval.sg", 2, EVAL.splitlines()[2].index("c: Case"))
        assert "c: Case" in hover.contents.value
        typed = EVAL.replace("    score \"exact\" = got == c.label;\n", "    score \"exact\" = got == c.label;\n    c.\n")
        client.change("labels_eval.sg", typed)
        got = {item.label for item in (client.completion("labels_eval.sg", 5, 6).items)}
        assert got == {"title", "label"}
        mark = client.mark()
        client.change("labels_eval.sg", EVAL.replace("got == c.label", "str_len(got)"))
        diagnostics = client.wait_diagnostics("labels_eval.sg", mark)
        assert [d.code for d in diagnostics] == ["E018"]
    finally:
        client.close()
