"""The `sage` command as a user meets it: errors without tracebacks, help, exit codes, caching, concurrency."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def sage(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_unknown_file_is_one_line_error(tmp_path: Path) -> None:
    r = sage("run", "does_not_exist.sg", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr == "error: no such file or directory: does_not_exist.sg\n"


def test_folder_without_entry_file(tmp_path: Path) -> None:
    r = sage("run", ".", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("error: no entry file found (looked for src/main.sg)")


def test_version() -> None:
    r = sage("version")
    assert r.returncode == 0
    assert r.stdout.startswith("sagepy 0.1.0 (Python 3.")
    assert sage("--version").stdout == r.stdout


@pytest.mark.parametrize("command", [[], ["run"], ["check"], ["new"], ["version"]])
def test_help_on_every_command(command: list[str]) -> None:
    r = sage(*command, "--help")
    assert r.returncode == 0
    assert "usage: sage" in r.stdout


def test_usage_error_exits_2() -> None:
    r = sage("frobnicate")
    assert r.returncode == 2
    assert "usage: sage" in r.stderr
    r = sage("run", "--no-such-option")
    assert r.returncode == 2


def test_syntax_error_reports_code_location_and_caret(tmp_path: Path) -> None:
    write(tmp_path, "bad.sg", """\
        agent Main {
            on start {
                let x = 1 +;
            }
        }
        run Main;
        """)
    r = sage("run", "bad.sg", cwd=tmp_path)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("error[E005]: unexpected `;`")
    assert " --> bad.sg:3:20\n" in r.stderr
    assert "3 |         let x = 1 +;\n  |                    ^" in r.stderr


def test_several_lexical_errors_in_one_file(tmp_path: Path) -> None:
    write(tmp_path, "lex.sg", """\
        agent Main {
            on start {
                let a = "bad \\q escape";
                let b = "{}";
                let c = 99999999999999999999;
                print(a ++ b);
            }
        }
        run Main;
        """)
    r = sage("run", "lex.sg", cwd=tmp_path)
    assert r.returncode == 1
    codes = [line.split("]")[0] for line in r.stderr.splitlines() if line.startswith("error[")]
    assert codes == ["error[E003", "error[E007", "error[E004"]


def test_unknown_name_reported_before_running(tmp_path: Path) -> None:
    write(tmp_path, "names.sg", """\
        agent Main {
            on start {
                print("side effect");
                print(lenght([1]));
            }
        }
        run Main;
        """)
    r = sage("run", "names.sg", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == ""          # nothing ran
    assert "error[E010]: undefined name `lenght`" in r.stderr
    assert "did you mean `length`?" not in r.stderr


def test_summoned_agents_run_concurrently(tmp_path: Path) -> None:
    write(tmp_path, "par.sg", """\
        agent Sleeper {
            n: Int
            on start { sleep_ms(300); yield(self.n); }
        }
        agent Main {
            on start {
                let started = now_ms();
                let a = summon Sleeper { n: 1 };
                let b = summon Sleeper { n: 2 };
                let total = try await a + try await b;
                print(total);
                print(now_ms() - started);
            }
        }
        run Main;
        """)
    r = sage("run", "par.sg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    total, elapsed = r.stdout.split()
    assert total == "3"
    assert int(elapsed) < 1.8 * 300   # sequential sleeps would take at least 600 ms


def test_warm_run_does_not_import_the_parser(tmp_path: Path) -> None:
    program = write(tmp_path, "hello.sg", 'agent Main { on start { print("hi"); } }\nrun Main;\n')
    cache = tmp_path / "cache"
    probe = ("import sys, runpy; sys.argv = ['sage', 'run', %r]\n"
             "from sagepy.cli.main import main\ncode = main()\n"
             "print('lark' in sys.modules, 'mcp' in sys.modules, 'rich' in sys.modules)\n") % str(program)
    env = dict(os.environ, SAGE_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    env.pop("SAGE_NO_CACHE", None)
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert first.stdout.splitlines() == ["hi", "True False False"], first.stderr
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert second.stdout.splitlines() == ["hi", "False False False"], second.stderr


def test_corrupt_cache_entry_is_ignored(tmp_path: Path) -> None:
    program = write(tmp_path, "hello.sg", 'agent Main { on start { print("hi"); } }\nrun Main;\n')
    cache = tmp_path / "cache"
    assert sage("run", str(program), env={"SAGE_CACHE_DIR": str(cache)}).stdout == "hi\n"
    entries = list((cache / "ast").glob("*.pickle"))
    assert entries
    for entry in entries:
        entry.write_bytes(b"not a pickle")
    r = sage("run", str(program), env={"SAGE_CACHE_DIR": str(cache)})
    assert (r.returncode, r.stdout) == (0, "hi\n")


def test_changed_source_is_reparsed(tmp_path: Path) -> None:
    cache = {"SAGE_CACHE_DIR": str(tmp_path / "cache")}
    program = write(tmp_path, "p.sg", 'agent Main { on start { print("one"); } }\nrun Main;\n')
    assert sage("run", str(program), env=cache).stdout == "one\n"
    time.sleep(0.01)
    program.write_text('agent Main { on start { print("two"); } }\nrun Main;\n', encoding="utf-8")
    assert sage("run", str(program), env=cache).stdout == "two\n"


def test_grammar_builds_in_strict_mode(tmp_path: Path) -> None:
    """SPEC §0.1: no conflict left to Lark's defaults. interegular (which strict mode needs) is installed
    into a private directory for this test only, never into the environment sagepy runs in."""
    target = tmp_path / "interegular"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
                              "interegular"], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    code = ("from lark import Lark\n"
            f"text = open({str(REPO / 'grammar' / 'sage.lark')!r}).read()\n"
            "Lark(text, parser='lalr', lexer='contextual', start=['program', 'expr'], strict=True)\n"
            "print('strict ok')\n")
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout == "strict ok\n", r.stderr


def test_several_syntax_errors_in_one_file(tmp_path: Path) -> None:
    write(tmp_path, "multi.sg", """\
        fn a() -> Int {
            let x = 1 +;
            return x;
        }

        fn b() -> Int {
            return (2;
        }

        record R { x: Int y: Int }

        agent Main { on start { print(a()); } }
        run Main;
        """)
    r = sage("run", "multi.sg", cwd=tmp_path)
    assert r.returncode == 1
    locations = [line.strip() for line in r.stderr.splitlines() if line.strip().startswith("-->")]
    assert locations == ["--> multi.sg:2:16", "--> multi.sg:7:14", "--> multi.sg:10:19"]


def test_sage_runs_needs_persistence() -> None:
    for args in (["runs", "list"], ["runs", "show", "x"], ["runs", "prune"]):
        r = sage(*args)
        assert (r.returncode, r.stderr) == (1, "error: durable runs need a [persistence] table in grove.toml\n")


def test_check_json_is_one_document(tmp_path: Path) -> None:
    import json
    write(tmp_path, "bad.sg", """\
        agent Main { on start { yield(missing); } }
        run Main;
        """)
    r = sage("check", "bad.sg", "--format", "json", cwd=tmp_path)
    document = json.loads(r.stdout)
    assert (r.returncode, document["ok"], document["errors"], document["files"]) == (1, False, 1, 1)
    [d] = document["diagnostics"]
    assert (d["file"], d["line"], d["col"], d["code"], d["severity"]) == ("bad.sg", 1, 31, "E010", "error")
    write(tmp_path, "good.sg", "agent Main { on start { yield(0); } }\nrun Main;\n")
    ok = sage("check", "good.sg", "--format", "json", cwd=tmp_path)
    assert json.loads(ok.stdout) == {"ok": True, "files": 1, "errors": 0, "warnings": 0, "diagnostics": []}


def test_check_github_annotations(tmp_path: Path) -> None:
    write(tmp_path, "bad.sg", """\
        agent Main { on start { yield(missing); } }
        run Main;
        """)
    r = sage("check", "bad.sg", "--format", "github", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "::error file=bad.sg,line=1,col=31,endLine=1,endColumn=38,title=E010::undefined name `missing`"]


def test_check_outside_a_project_does_not_recurse(tmp_path: Path) -> None:
    write(tmp_path, "top_test.sg", 'test "t" { assert_eq(1, 1); }\n')
    (tmp_path / "other_project" / "src").mkdir(parents=True)
    write(tmp_path, "other_project/src/broken_test.sg", 'test "t" { assert_eq(nope, 1); }\n')
    r = sage("check", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "check passed: 1 file, 0 warnings\n"), r.stderr


def test_color_option_anywhere_on_the_line(tmp_path: Path) -> None:
    write(tmp_path, "bad.sg", "agent Main { on start { yield(missing); } }\nrun Main;\n")
    for line in (["--color", "always", "check", "bad.sg"], ["check", "bad.sg", "--color=always"],
                 ["check", "--color", "always", "bad.sg"]):
        assert "\x1b[" in sage(*line, cwd=tmp_path).stderr, line
    assert "\x1b[" not in sage("check", "bad.sg", "--no-color", cwd=tmp_path, env={"FORCE_COLOR": "1"}).stderr
    assert "\x1b[" in sage("check", "bad.sg", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": "1"}).stderr
    assert "\x1b[" not in sage("check", "bad.sg", cwd=tmp_path, env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stderr
    assert sage("check", "bad.sg", "--color", "sometimes", cwd=tmp_path).returncode == 2


def test_program_arguments_after_double_dash(tmp_path: Path) -> None:
    write(tmp_path, "main.sg", """\
        agent Main { on start { for a in args() { print(a); } yield(len(args())); } }
        run Main;
        """)
    r = sage("run", "main.sg", "--", "one", "two words", "--trace", cwd=tmp_path)
    assert (r.stdout, r.returncode) == ("one\ntwo words\n--trace\n", 3), r.stderr
    assert sage("run", "main.sg", cwd=tmp_path).returncode == 0
    write(tmp_path, "main_test.sg", 'test "no arguments under test" { assert_eq(args(), []); }\n')
    assert sage("test", "main_test.sg", cwd=tmp_path).returncode == 0
