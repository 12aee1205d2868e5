"""Incremental parsing (sagepy/syntax/incremental.py): the same items, spans, doc comments and diagnostics as a
full parse, on every file of the repository and along chains of random edits, and only changed items parsed."""
from __future__ import annotations

import random
from pathlib import Path

from sagepy.syntax import ast as A
from sagepy.syntax.incremental import IncrementalParser, split_items
from sagepy.syntax.parser import parse_source
from tests.fuzz.generate import generate_program
from tests.fuzz.mutate import load_corpus, mutate

REPO = Path(__file__).resolve().parent.parent.parent
FILES = sorted(p for top in ("examples", "stdlib", "tests") for p in (REPO / top).rglob("*.sg"))

# What an editing user types: lines that keep the file valid (new items, comments, doc comments, blank
# lines), and brackets and quotes that unbalance it, comments that swallow code, a `run` in the middle.
VALID = ["", "// a comment", "/// documented", "fn extra() {}", "pub fn extra2(x: Int) -> Int { x }",
         "const K: Int = 1;", "record R { a: Int }", "enum E { A, B }", "/* a { block } */"]
BREAKING = ["}", "{", "(", '"', "/*", "*/", "// }", "    let q = 1;", "run main;", '#[mcp_name("x")]', 'r#"',
            "    return 0;", "\t", "@", "fn"]


def dump(value: object) -> list:
    """Everything a parse produced (node classes, every slot, spans and doc comments included), flattened
    without recursion: some files nest a thousand levels."""
    out: list = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, A.Node):
            out.append(type(v).__name__)
            stack.extend(reversed([getattr(v, s, None) for s in v._all_slots]))
        elif isinstance(v, (list, tuple)):
            out.append((type(v).__name__, len(v)))
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out


def same_as_full(parser: IncrementalParser, text: str, path: str) -> bool:
    """Whether the text parses without diagnostics, after checking it parses as the full parse does."""
    items, diagnostics = parser.parse(text, path)
    full_items, full_diagnostics = parse_source(text, path)
    assert dump(items) == dump(full_items), path
    assert ([(d.code, d.message, d.span, d.hint, d.notes) for d in diagnostics]
            == [(d.code, d.message, d.span, d.hint, d.notes) for d in full_diagnostics]), path
    return not full_diagnostics


def test_every_file_of_the_repository_parses_as_the_full_parse_does() -> None:
    assert len(FILES) > 400
    split = 0
    for path in FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        parser = IncrementalParser()
        chunks = split_items(text)
        if chunks is not None:
            split += 1
            assert "".join(c for c, _ in chunks) == text
        same_as_full(parser, text, str(path))
        same_as_full(parser, text, str(path))   # every item now from the kept chunks
    assert split > 400


def test_random_edits_parse_as_the_full_parse_does() -> None:
    rng = random.Random(25)
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in FILES}
    sample = [p for p in FILES if len(split_items(texts[p]) or ()) >= 3 and not parse_source(texts[p], str(p))[1]]
    assert len(sample) > 100
    for path in sample[::3]:
        text = texts[path]
        parser = IncrementalParser()
        parser.parse(text, str(path))
        valid = text   # each edit applies to the last valid text: a typo is typed, then undone or fixed
        for _ in range(6):
            lines = valid.split("\n")
            at = rng.randrange(len(lines))
            action = rng.randrange(5)
            if action == 0:
                lines.insert(at, rng.choice(BREAKING))
            elif action == 4:
                lines.insert(at, rng.choice(VALID))
            elif action == 1 and len(lines) > 1:
                del lines[at]
            elif action == 2:
                lines.insert(at, lines[rng.randrange(len(lines))])
            else:
                col = rng.randrange(len(lines[at]) + 1)
                lines[at] = lines[at][:col] + rng.choice(BREAKING + VALID) + lines[at][col:]
            text = "\n".join(lines)
            if same_as_full(parser, text, str(path)):
                valid = text


def test_fuzz_inputs_parse_as_the_full_parse_does() -> None:
    """The fuzz harness's inputs (generated programs, and corpus files with bytes flipped, tokens deleted,
    swapped or duplicated, deep nesting, huge literals, odd Unicode, truncation), each parsed after the file
    it came from, so that the kept chunks of the original serve it."""
    corpus = load_corpus()
    for index in range(120):
        rng = random.Random(f"incremental:{index}")
        name, source = rng.choice(corpus)
        parser = IncrementalParser()
        if index % 4 == 0:
            text = generate_program(rng).decode("utf-8", errors="replace")
        else:
            parser.parse(source.decode("utf-8", errors="replace"), name)
            text = mutate(rng, source, rng.choice(corpus)[1])[1].decode("utf-8", errors="replace")
        same_as_full(parser, text, name)


def test_an_edit_reparses_only_the_item_it_changed() -> None:
    text = ("/// Adds.\nfn add(a: Int, b: Int) -> Int {\n    a + b\n}\n\n"
            "fn brace() -> String {\n    \"}\nfn not_an_item() \\{\\}\"\n}\n"
            "/* fn hidden() {\n} */\nrecord P { x: Int }\n\n/// The entry.\nfn main() -> Int { add(1, 2) }\n")
    chunks = split_items(text)
    assert [line for _, line in chunks] == [1, 6, 12, 15]   # not inside the string, nor the block comment
    parser = IncrementalParser()
    path = "/project/main.sg"
    parser.parse(text, path)
    before = dict(parser.kept[path])
    edited = text.replace("    a + b\n", "    // two lines\n    a + b\n")
    items, diagnostics = parser.parse(edited, path)
    assert diagnostics == []
    after = parser.kept[path]
    changed = [chunk for chunk in after if chunk not in before]
    assert changed == [chunks[0][0].replace("    a + b\n", "    // two lines\n    a + b\n")]
    assert all(after[chunk] is before[chunk] for chunk in after if chunk in before)   # kept, not re-parsed
    assert [(type(i).__name__, i.span[0], i.doc) for i in items] == [
        ("FnDecl", 2, "Adds."), ("FnDecl", 7, None), ("RecordDecl", 13, None), ("FnDecl", 16, "The entry.")]
    same_as_full(parser, edited, path)


def test_unbalanced_or_invalid_text_is_parsed_whole() -> None:
    assert split_items("fn a() {\n}\n}\nfn b() {}\n") is None
    assert split_items("fn a() {\n\nfn b() {}\n") is None
    assert split_items("fn a() {}\nfn b() { ` }\n") is None
    parser = IncrementalParser()
    for text in ("fn a() {\n}\n}\nfn b() {}\n", "fn a() {}\nrun a;\nfn b() {}\n", "fn a() { 1 + }\nfn b() {}\n"):
        same_as_full(parser, text, "/p/x.sg")
        assert parser.parse(text, "/p/x.sg")[1]
