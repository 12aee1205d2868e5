"""Comments as trivia (sagepy/syntax/trivia.py): found where the lexer finds them, with their positions."""
from __future__ import annotations

from pathlib import Path

from sagepy.syntax.lexical import skipped_token_scanner
from sagepy.syntax.trivia import scan_comments

REPO = Path(__file__).resolve().parent.parent.parent


def test_comments_and_their_positions() -> None:
    text = 'let a = "// not {x} /* one */"; // one\n  /* two\n three */ f(\'//\'); /// three\n'
    found = [(c.text, c.line, c.col, c.end_line, c.own_line) for c in scan_comments(text)]
    assert found == [("// one", 1, 33, 1, False), ("/* two\n three */", 2, 3, 3, True), ("/// three", 3, 20, 3, False)]


def test_the_scan_finds_what_the_lexer_skips_in_every_file_of_the_repository() -> None:
    """The scan reads the grammar's terminals from grammar/sage.lark without building the parser; it must
    agree with the lexer's own scanner (built from the parser) on every file."""
    files = sorted(p for top in ("examples", "stdlib", "tests") for p in (REPO / top).rglob("*.sg"))
    assert len(files) > 400
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        lexer = [m.group() for m in skipped_token_scanner().finditer(text)
                 if m.lastgroup in ("LINE_COMMENT", "BLOCK_COMMENT")]
        assert [c.text for c in scan_comments(text)] == lexer, path
