"""Mutations of Sage source, as bytes: the program and checker corpora bent in the ways that reach parts of
sagepy well-formed programs never reach (byte flips, token deletion, duplication and swaps, splicing of two
files, deep nesting, huge literals, odd Unicode, NUL bytes, invalid UTF-8)."""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Callable

_TESTS = Path(__file__).resolve().parent.parent
CORPUS_DIRS = (_TESTS / "programs", _TESTS / "check")

# A Sage-ish token: words, numbers, strings, two-character operators, any other single character.
_TOKEN = re.compile(rb'[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]+)?|"(?:[^"\\\n]|\\.)*"|'
                    rb"'(?:[^'\\\n]|\\.)*'|::|->|=>|==|!=|<=|>=|&&|\|\||\+\+|#\[|\s+|.", re.S)

ODD_TEXT = [
    "\u00e9", "\u0301", "\u200b", "\u200d", "\u2028", "\u2029", "\ufeff", "\ufffd", "\U0001f600",
    "\u202e", "\u0000", "\x7f", "\x85", "\u00a0", "\u3000", "\U0010ffff", "\\u{110000}", "\\u{D800}",
    "\\x", "\\u{", "\\u{}", "{", "}", "{{", "\"{", "'", "/*", "*/", "//", "\r", "\t", "\\",
]
INVALID_UTF8 = [b"\xff", b"\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80",
                b"\xc3", b"\xf0\x9f\x98"]
HUGE_INTS = ["9223372036854775807", "9223372036854775808", "18446744073709551616", "9" * 4301, "9" * 5000,
             "0" * 4400 + "1", "1" + "0" * 25]
HUGE_FLOATS = ["1.0e308", "1.0e309", "1.0e-400", "9" * 400 + ".0", "0." + "0" * 400 + "1", "1.5e99999999999"]


def load_corpus() -> list[tuple[str, bytes]]:
    """(file name, content) of every single-file program of both corpora, in a fixed order."""
    found = []
    for directory in CORPUS_DIRS:
        for path in sorted(directory.glob("*.sg")):
            found.append((path.name, path.read_bytes()))
    return found


def tokens(source: bytes) -> list[bytes]:
    return _TOKEN.findall(source)


def _significant(parts: list[bytes]) -> list[int]:
    return [i for i, part in enumerate(parts) if not part.isspace()]


def flip_bytes(rng: random.Random, source: bytes, other: bytes) -> bytes:
    data = bytearray(source)
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def delete_tokens(rng: random.Random, source: bytes, other: bytes) -> bytes:
    parts = tokens(source)
    for _ in range(rng.randint(1, 3)):
        where = _significant(parts)
        if where:
            del parts[rng.choice(where)]
    return b"".join(parts)


def duplicate_tokens(rng: random.Random, source: bytes, other: bytes) -> bytes:
    parts = tokens(source)
    where = _significant(parts)
    if where:
        start = rng.choice(where)
        run = parts[start:start + rng.randint(1, 6)]
        parts[start:start] = run * rng.randint(1, 3)
    return b"".join(parts)


def swap_tokens(rng: random.Random, source: bytes, other: bytes) -> bytes:
    parts = tokens(source)
    where = _significant(parts)
    if len(where) >= 2:
        a, b = rng.sample(where, 2)
        parts[a], parts[b] = parts[b], parts[a]
    return b"".join(parts)


def replace_token(rng: random.Random, source: bytes, other: bytes) -> bytes:
    """A token replaced by a token of the other file: keywords, types and names land in foreign places."""
    parts, donor = tokens(source), [t for t in tokens(other) if not t.isspace()]
    where = _significant(parts)
    if where and donor:
        parts[rng.choice(where)] = rng.choice(donor)
    return b"".join(parts)


def splice(rng: random.Random, source: bytes, other: bytes) -> bytes:
    lines, donor = source.split(b"\n"), other.split(b"\n")
    cut = rng.randint(0, len(lines))
    start = rng.randrange(len(donor))
    return b"\n".join(lines[:cut] + donor[start:start + rng.randint(1, 12)] + lines[cut:])


def deep_nesting(rng: random.Random, source: bytes, other: bytes) -> bytes:
    """A deeply nested or very long construct in place of a token that is an expression, often a literal."""
    depth = rng.choice([50, 200, 300, 600, 1100, 3000, 20000])
    shape = rng.choice(["parens", "plus", "minus", "not", "list", "if", "block", "call", "concat", "closure"])
    if shape == "parens":
        text = "(" * depth + "1" + ")" * depth
    elif shape == "plus":
        text = "1" + " + 1" * depth
    elif shape == "minus":
        text = "-" * depth + "1"
    elif shape == "not":
        text = "!" * depth + "true"
    elif shape == "list":
        text = "[" * depth + "]" * depth
    elif shape == "if":
        text = "if true { " * depth + "1" + " } else { 0 }" * depth
    elif shape == "block":
        text = "{ " * depth + "1" + " }" * depth
    elif shape == "call":
        text = "abs(" * depth + "1" + ")" * depth
    elif shape == "concat":
        text = '"a"' + ' ++ "a"' * depth
    else:
        text = "|| " * depth + "1"
    return _at_literal(rng, source, text.encode())


def huge_literal(rng: random.Random, source: bytes, other: bytes) -> bytes:
    kind = rng.choice(["int", "float", "string", "template"])
    if kind == "int":
        text = rng.choice(HUGE_INTS)
    elif kind == "float":
        text = rng.choice(HUGE_FLOATS)
    elif kind == "string":
        text = '"' + "x" * rng.choice([10_000, 200_000]) + '"'
    else:
        text = '"' + "{1}" * rng.choice([1000, 20_000]) + '"'
    return _at_literal(rng, source, text.encode())


def odd_unicode(rng: random.Random, source: bytes, other: bytes) -> bytes:
    data = bytearray(source)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(data))
        data[at:at] = rng.choice(ODD_TEXT).encode("utf-8", "surrogatepass")
    return bytes(data)


def nul_bytes(rng: random.Random, source: bytes, other: bytes) -> bytes:
    data = bytearray(source)
    at = rng.randint(0, len(data))
    data[at:at] = b"\0" * rng.randint(1, 3)
    return bytes(data)


def invalid_utf8(rng: random.Random, source: bytes, other: bytes) -> bytes:
    data = bytearray(source)
    at = rng.randint(0, len(data))
    data[at:at] = rng.choice(INVALID_UTF8)
    return bytes(data)


def truncate(rng: random.Random, source: bytes, other: bytes) -> bytes:
    return source[:rng.randint(0, len(source))]


def _at_literal(rng: random.Random, source: bytes, replacement: bytes) -> bytes:
    """`replacement` in place of a number or string literal of `source` (anywhere at all if it has none)."""
    parts = tokens(source)
    literals = [i for i, part in enumerate(parts) if part[:1].isdigit() or part[:1] in (b'"', b"'")]
    if literals:
        parts[rng.choice(literals)] = replacement
        return b"".join(parts)
    at = rng.randint(0, len(source))
    return source[:at] + replacement + source[at:]


Mutator = Callable[[random.Random, bytes, bytes], bytes]

# Mutators with their weights: the structural ones most often, since they keep a program closest to valid.
MUTATORS: list[tuple[Mutator, int]] = [
    (flip_bytes, 2), (delete_tokens, 4), (duplicate_tokens, 3), (swap_tokens, 3), (replace_token, 5),
    (splice, 3), (deep_nesting, 2), (huge_literal, 2), (odd_unicode, 2), (nul_bytes, 1), (invalid_utf8, 1),
    (truncate, 1),
]


def mutate(rng: random.Random, source: bytes, other: bytes) -> tuple[str, bytes]:
    """One to three mutations of `source` (`other` is a second corpus file for splicing): (names, result)."""
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        mutator = rng.choices([m for m, _ in MUTATORS], weights=[w for _, w in MUTATORS])[0]
        source = mutator(rng, source, other)
        names.append(mutator.__name__)
    return "+".join(names), source
