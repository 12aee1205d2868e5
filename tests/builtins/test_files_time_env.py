"""File, timestamp and environment builtins (SPEC §6.1), plus the registry that merges every family and its
agreement with the declarations in stdlib/*.sg."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagepy.builtins import (conversions, environ, files, json_, lists, load_builtins, load_constants, maps,
                             numbers, options, strings, timefmt)
from sagepy.core.errors import SageRaise
from sagepy.core.values import NONE, UNIT, some

F = files.BUILTINS
T = timefmt.BUILTINS
REPO = Path(__file__).resolve().parents[2]


def raised(fn, *args):
    with pytest.raises(SageRaise) as info:
        fn(*args)
    return info.value.error


def assert_agent_error(fn, *args, message):
    e = raised(fn, *args)
    assert (e.kind, e.code, e.message) == ("Agent", None, message)
    assert e.display() == "Agent error: " + message


# ------------------------------------------------------------------ files

def test_write_then_read_round_trips_exact_text(tmp_path):
    path = str(tmp_path / "f.txt")
    text = "héllo 😀\r\nline two\n"
    assert F["write_file"](path, text) is UNIT
    assert F["read_file"](path) == text
    assert (tmp_path / "f.txt").read_bytes() == text.encode("utf-8")
    F["write_file"](path, "short")
    assert F["read_file"](path) == "short"
    F["write_file"](path, "")
    assert F["read_file"](path) == ""


def test_append_file_creates_and_appends(tmp_path):
    path = str(tmp_path / "log.txt")
    assert F["append_file"](path, "a\n") is UNIT
    F["append_file"](path, "b\n")
    assert F["read_file"](path) == "a\nb\n"


def test_read_file_errors(tmp_path):
    missing = str(tmp_path / "nope.txt")
    assert_agent_error(F["read_file"], missing, message=f"failed to read file '{missing}': No such file or directory")
    assert_agent_error(F["read_file"], str(tmp_path),
                       message=f"failed to read file '{tmp_path}': Is a directory")
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\xfe\x00abc")
    assert_agent_error(F["read_file"], str(binary),
                       message=f"failed to read file '{binary}': stream did not contain valid UTF-8")


def test_write_and_append_errors(tmp_path):
    target = str(tmp_path / "missing" / "f.txt")
    assert_agent_error(F["write_file"], target, "x",
                       message=f"failed to write file '{target}': No such file or directory")
    assert_agent_error(F["append_file"], target, "x",
                       message=f"failed to append to file '{target}': No such file or directory")


def test_delete_file(tmp_path):
    path = tmp_path / "gone.txt"
    path.write_text("x")
    assert F["delete_file"](str(path)) is UNIT
    assert not path.exists()
    assert_agent_error(F["delete_file"], str(path),
                       message=f"failed to delete file '{path}': No such file or directory")
    e = raised(F["delete_file"], str(tmp_path))
    assert e.kind == "Agent" and e.message.startswith(f"failed to delete file '{tmp_path}': ")
    assert tmp_path.is_dir()


def test_make_dir_creates_parents_and_accepts_existing(tmp_path):
    nested = tmp_path / "a" / "b" / "c"
    assert F["make_dir"](str(nested)) is UNIT
    assert nested.is_dir()
    assert F["make_dir"](str(nested)) is UNIT
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_agent_error(F["make_dir"], str(blocker), message=f"failed to create directory '{blocker}': File exists")


def test_list_dir_is_sorted(tmp_path):
    for name in ["b.txt", "a.txt", "C", "é"]:
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    assert F["list_dir"](str(tmp_path)) == ["C", "a.txt", "b.txt", "sub", "é"]
    assert F["list_dir"](str(tmp_path / "sub")) == []
    missing = str(tmp_path / "none")
    assert_agent_error(F["list_dir"], missing,
                       message=f"failed to list directory '{missing}': No such file or directory")
    assert_agent_error(F["list_dir"], str(tmp_path / "a.txt"),
                       message=f"failed to list directory '{tmp_path / 'a.txt'}': Not a directory")


def test_file_exists(tmp_path):
    (tmp_path / "f").write_text("")
    assert F["file_exists"](str(tmp_path / "f")) is True
    assert F["file_exists"](str(tmp_path)) is True
    assert F["file_exists"](str(tmp_path / "g")) is False
    assert F["file_exists"]("") is False


# ------------------------------------------------------------------ timestamps

@pytest.mark.parametrize("ms, fmt, expected", [
    (0, "%Y-%m-%d %H:%M:%S", "1970-01-01 00:00:00"),
    (1700000000123, "%F %T", "2023-11-14 22:13:20"),
    (1700000000123, "%FT%TZ", "2023-11-14T22:13:20Z"),
    (-1, "%F %T", "1969-12-31 23:59:59"),
    (86_400_000, "%d/%m/%Y", "02/01/1970"),
    (1700000000000, "%%F %R %D", "%F 22:13 11/14/23"),
    (1700000000000, "%z %Z", "+0000 UTC"),
    (0, "plain text", "plain text"),
    (0, "", ""),
])
def test_format_timestamp(ms, fmt, expected):
    assert T["format_timestamp"](ms, fmt) == expected


def test_format_timestamp_out_of_range_is_e206():
    e = raised(T["format_timestamp"], 1 << 62, "%F")
    assert e.code == "E206"
    assert e.message == f"invalid argument: format_timestamp: timestamp out of range: {1 << 62}"


@pytest.mark.parametrize("text, fmt, expected", [
    ("2023-11-14 22:13:20", "%F %T", 1700000000000),
    ("2023-11-14 22:13:20", "%Y-%m-%d %H:%M:%S", 1700000000000),
    ("1970-01-01", "%F", 0),
    ("1969-12-31 23:59:59", "%F %T", -1000),
    ("2023-11-14T23:13:20+0100", "%Y-%m-%dT%H:%M:%S%z", 1700000000000),
    ("2023-11-14T17:13:20-05:00", "%FT%T%z", 1700000000000),
    ("2023-11-14T22:13:20Z", "%FT%T%z", 1700000000000),
    ("2023-11-14 22:13:20.123456", "%F %T.%f", 1700000000123),
    ("14/11/2023 22:13", "%d/%m/%Y %R", 1699999980000),
])
def test_parse_timestamp(text, fmt, expected):
    assert T["parse_timestamp"](text, fmt) == expected


@pytest.mark.parametrize("text, fmt", [
    ("nope", "%F"),
    ("2023-11-14x", "%F"),
    ("2023-13-01", "%F"),
    ("", "%F"),
    ("2023-11-14", "%"),
])
def test_parse_timestamp_failure_is_an_agent_error(text, fmt):
    assert_agent_error(T["parse_timestamp"], text, fmt, message=f"invalid timestamp '{text}' for format '{fmt}'")


def test_local_time_zone_is_ignored(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert T["parse_timestamp"]("2023-11-14 22:13:20", "%F %T") == 1700000000000
        assert T["format_timestamp"](1700000000000, "%F %T") == "2023-11-14 22:13:20"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_format_and_parse_round_trip():
    ms = 1234567890000
    assert T["parse_timestamp"](T["format_timestamp"](ms, "%F %T"), "%F %T") == ms


def test_time_constants():
    assert timefmt.CONSTANTS == {
        "MS_PER_SECOND": 1000, "MS_PER_MINUTE": 60000, "MS_PER_HOUR": 3600000, "MS_PER_DAY": 86400000,
    }


# ------------------------------------------------------------------ environment

def test_env(monkeypatch):
    monkeypatch.setenv("SAGEPY_BUILTIN_TEST", "vålue")
    monkeypatch.setenv("SAGEPY_BUILTIN_EMPTY", "")
    monkeypatch.delenv("SAGEPY_BUILTIN_MISSING", raising=False)
    env, env_or = environ.BUILTINS["env"], environ.BUILTINS["env_or"]
    assert env("SAGEPY_BUILTIN_TEST") == some("vålue")
    assert env("SAGEPY_BUILTIN_EMPTY") == some("")
    assert env("SAGEPY_BUILTIN_MISSING") == NONE
    assert env_or("SAGEPY_BUILTIN_TEST", "d") == "vålue"
    assert env_or("SAGEPY_BUILTIN_EMPTY", "d") == ""
    assert env_or("SAGEPY_BUILTIN_MISSING", "d") == "d"


def test_env_of_a_name_with_a_lone_surrogate_is_unset():
    """json_decode can make such a String; no environment variable can have that name."""
    env, env_or = environ.BUILTINS["env"], environ.BUILTINS["env_or"]
    assert env("X\ud800") == NONE
    assert env_or("X\ud800", "d") == "d"


# ------------------------------------------------------------------ registry and stdlib declarations

MY_FAMILIES = (conversions, strings, numbers, lists, maps, options, files, timefmt, environ)
MY_STDLIB = ("core", "strings", "lists", "maps", "options", "math", "io")
INTERPRETER_OWNED = {"sleep_ms", "now_ms", "now_s", "read_line", "read_all", "args", "ask"}
INTRINSICS = {"str", "len", "sort"}
INTERPRETER_HELPERS = {"map_with", "map_without"}
KEYWORDS = set("""agent as await belief break catch checkpoint children const continue delay divine else enum
error extern fail fails false fn follows for handler handles if in infer let loop match message mock mod on
pause protocol pub receive receives record reply restart resting resume retry return run self send span start
stop strategy summon super supervisor test timeout tool trace true try use waking while yield Int Float Bool
String Unit List Map Option Result Oracle Agent Fn Error ErrorKind""".split())
EXTERN = re.compile(r"extern fn (\w+)(?:<([^>]*)>)?\((.*)\) -> (.+?)( fails)?;")
CONST = re.compile(r"const (\w+): (\w+) = (.+);")


def _declarations():
    externs, consts, comments = {}, {}, []
    for name in MY_STDLIB:
        for line in (REPO / "stdlib" / f"{name}.sg").read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("//"):
                comments.append(line)
            elif m := EXTERN.fullmatch(line):
                externs[m[1]] = m
            elif m := CONST.fullmatch(line):
                consts[m[1]] = (m[2], m[3])
            else:
                raise AssertionError(f"unexpected line in stdlib/{name}.sg: {line}")
    return externs, consts, comments


def test_no_builtin_is_defined_by_two_families():
    seen: dict[str, str] = {}
    for family in (*MY_FAMILIES, json_):
        for name in family.BUILTINS:
            assert name not in seen, f"{name} in {family.__name__} and {seen[name]}"
            seen[name] = family.__name__


def test_load_builtins_and_constants_merge_every_family():
    merged = load_builtins()
    for family in (*MY_FAMILIES, json_):
        for name, fn in family.BUILTINS.items():
            assert merged[name] is fn
    assert merged["str_len"]("héllo") == 5
    assert load_constants() == {**numbers.CONSTANTS, **timefmt.CONSTANTS}


def test_every_native_builtin_is_declared_and_every_declaration_is_implemented():
    externs, _, comments = _declarations()
    natives = set().union(*(family.BUILTINS for family in MY_FAMILIES))
    assert natives - set(externs) == INTRINSICS | INTERPRETER_HELPERS
    assert set(externs) - natives == INTERPRETER_OWNED
    documented = " ".join(comments)
    for intrinsic in ("print", "print_err", "str", "len", "sort", "map_set", "map_delete"):
        assert f"{intrinsic}(" in documented


def test_fallible_declarations_match_spec():
    externs, _, _ = _declarations()
    fallible = {name for name, m in externs.items() if m[5]}
    assert fallible == {"read_file", "write_file", "append_file", "delete_file", "make_dir", "list_dir",
                        "read_line", "read_all", "parse_timestamp", "ask"}


def test_declared_parameter_names_are_identifiers():
    externs, _, _ = _declarations()
    for name, m in externs.items():
        assert name not in KEYWORDS
        for param in re.findall(r"(?:^|,)\s*(\w+)\s*:", m[3]):
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", param) and param not in KEYWORDS, (name, param)


def test_declared_constants_match_native_values():
    _, consts, _ = _declarations()
    native = load_constants()
    assert set(consts) == set(native)
    for name, (type_, literal) in consts.items():
        assert {"Int": int, "Float": float}[type_](literal) == native[name]
        assert type(native[name]) is {"Int": int, "Float": float}[type_]


def test_loading_builtins_does_not_import_datetime():
    code = "import sys, sagepy.builtins as b; b.load_builtins(); print('datetime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "False"
