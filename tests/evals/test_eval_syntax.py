"""`sage fmt` on eval files (SPEC §19.1, §22): the canonical layout of `eval`, `score` and `replay`, comments
kept, and a second formatting changes nothing."""
from __future__ import annotations

from sagepy.fmt import format_source

MESSY = """\
record Case { title: String, label: String }
// the labels
eval   'labels'   over "data/issues.jsonl"  as c : Case { let got = try divine("Label: {c.title}");
 score "exact"=got == c.label;   // exact match
   score "half" = 0.5; }
test "replays" {   replay "run.jsonl";
  assert_eq(1, 1); }
"""
TIDY = """\
record Case {
    title: String,
    label: String,
}

// the labels
eval 'labels' over "data/issues.jsonl" as c: Case {
    let got = try divine("Label: {c.title}");
    score "exact" = got == c.label; // exact match
    score "half" = 0.5;
}

test "replays" {
    replay "run.jsonl";
    assert_eq(1, 1);
}
"""


def test_eval_blocks_format_canonically() -> None:
    assert format_source(MESSY, "labels_eval.sg") == TIDY
    assert format_source(TIDY, "labels_eval.sg") == TIDY
