"""`sage fmt` as a command (SPEC §19.1): in-place atomic rewrites with the `formatted N files (M unchanged)` line,
`--check`, `--diff`, `--stdin`, the project's files without PATH, and files with syntax errors left alone."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

MESSY = "fn f(a:Int)->Int{return a+1;}\n"
TIDY = "fn f(a: Int) -> Int {\n    return a + 1;\n}\n"
BROKEN = "fn f( {\n"


def sage(*args: str, cwd: Path, stdin: str | bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1")
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run([sys.executable, "-m", "sagepy", "fmt", *args], cwd=cwd, input=data,
                          capture_output=True, env=env, timeout=60)
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    return done


def test_files_are_rewritten_in_place_keeping_their_mode(tmp_path: Path) -> None:
    messy, tidy = tmp_path / "messy.sg", tmp_path / "tidy.sg"
    messy.write_text(MESSY)
    tidy.write_text(TIDY)
    messy.chmod(0o640)
    done = sage("messy.sg", "tidy.sg", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "formatted 2 files (1 unchanged)\n", "")
    assert messy.read_text() == TIDY
    assert stat.S_IMODE(messy.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["messy.sg", "tidy.sg"]   # no temporary file left
    again = sage("tidy.sg", cwd=tmp_path)
    assert again.stdout == "formatted 1 file (1 unchanged)\n"


def test_a_symlink_stays_a_symlink_to_the_formatted_file(tmp_path: Path) -> None:
    (tmp_path / "real.sg").write_text(MESSY)
    (tmp_path / "link.sg").symlink_to("real.sg")
    assert sage("link.sg", cwd=tmp_path).returncode == 0
    assert (tmp_path / "link.sg").is_symlink() and (tmp_path / "real.sg").read_text() == TIDY


def test_check_lists_the_files_that_would_change_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.sg").write_text(MESSY)
    (tmp_path / "b.sg").write_text(TIDY)
    done = sage("--check", "a.sg", "b.sg", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "would reformat a.sg\n")
    assert (tmp_path / "a.sg").read_text() == MESSY
    assert sage("--check", "b.sg", cwd=tmp_path).returncode == 0


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.sg").write_text(MESSY)
    done = sage("--diff", "a.sg", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[:3] == ["--- a.sg (original)", "+++ a.sg (formatted)", "@@ -1 +1,3 @@"]
    assert "-fn f(a:Int)->Int{return a+1;}" in done.stdout and "+    return a + 1;" in done.stdout
    assert (tmp_path / "a.sg").read_text() == MESSY
    (tmp_path / "a.sg").write_text(TIDY)
    assert (sage("--diff", "a.sg", cwd=tmp_path).returncode, sage("--diff", "a.sg", cwd=tmp_path).stdout) == (0, "")


def test_stdin_is_formatted_to_stdout(tmp_path: Path) -> None:
    done = sage("--stdin", cwd=tmp_path, stdin=MESSY)
    assert (done.returncode, done.stdout, done.stderr) == (0, TIDY, "")


def test_stdin_with_a_syntax_error_prints_its_diagnostics_naming_stdin_and_nothing_on_stdout(tmp_path: Path) -> None:
    done = sage("--stdin", cwd=tmp_path, stdin=BROKEN)
    assert (done.returncode, done.stdout) == (1, "")
    assert "error[E005]" in done.stderr and "--> <stdin>:1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_with_syntax_errors_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "bad.sg").write_text(BROKEN)
    (tmp_path / "ok.sg").write_text(MESSY)
    done = sage("bad.sg", "ok.sg", cwd=tmp_path)
    assert done.returncode == 1
    assert "error[E005]" in done.stderr and "bad.sg:1:" in done.stderr
    assert done.stdout == "formatted 2 files (0 unchanged)\n"
    assert (tmp_path / "bad.sg").read_text() == BROKEN
    assert (tmp_path / "ok.sg").read_text() == TIDY


def test_invalid_utf8_is_e001_at_its_byte(tmp_path: Path) -> None:
    (tmp_path / "bin.sg").write_bytes(b"fn f() -> Int { 1 }\n// \xff\n")
    done = sage("bin.sg", cwd=tmp_path)
    assert done.returncode == 1 and "error[E001]" in done.stderr and "bin.sg:2:4" in done.stderr


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    done = sage("nope.sg", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "error: no such file or directory: nope.sg\n")


def test_without_path_the_project_files_are_formatted(tmp_path: Path) -> None:
    """Under src/ of the project (recursively), not elsewhere; never node_modules or dot-directories."""
    (tmp_path / "grove.toml").write_text('[project]\nname = "p"\n')
    for rel in ("src/main.sg", "src/lib/util.sg", "src/main_test.sg", "src/node_modules/x.sg",
                "src/.hidden/y.sg", "scripts/other.sg"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MESSY)
    done = sage(cwd=tmp_path / "src" / "lib")
    assert (done.returncode, done.stdout) == (0, "formatted 3 files (0 unchanged)\n")
    for rel in ("src/main.sg", "src/lib/util.sg", "src/main_test.sg"):
        assert (tmp_path / rel).read_text() == TIDY
    for rel in ("src/node_modules/x.sg", "src/.hidden/y.sg", "scripts/other.sg"):
        assert (tmp_path / rel).read_text() == MESSY


def test_a_directory_path_is_searched_recursively(tmp_path: Path) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "x.sg").write_text(MESSY)
    done = sage("--check", "d", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, f"would reformat {os.path.join('d', 'e', 'x.sg')}\n")


def test_help_lists_the_options(tmp_path: Path) -> None:
    done = sage("-h", cwd=tmp_path)
    assert done.returncode == 0
    for option in ("--check", "--diff", "--stdin", "PATH"):
        assert option in done.stdout
