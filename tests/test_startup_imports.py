"""Start-up cost is kept by what a command imports (issue 22; the timing itself is bench/startup.py): `sage run`
of a program without tools, model calls or persistence imports none of the modules those need, `sage run PATH`
builds no argparse parser (and reads its line exactly as the parser would), and the argument parser imports no
other subcommand's module."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sagepy.cli.arguments import build_parser, command_of, take_color_options
from sagepy.cli.main import _take_program_arguments, plain_run

REPO = Path(__file__).resolve().parent.parent
HELLO = REPO / "examples" / "hello.sg"

# A plain run needs none of these: the durable store and journal, mocks and the MCP wire conversion, the LLM
# and MCP clients, the built-in tools, the test runner, the parser (the AST cache is warm), the argument parser
# and the other subcommands, and the standard modules only they import (argparse brings gettext, locale and
# shutil; hashlib brings OpenSSL, where the AST cache's key needs only the builtin blake2; the cache reads
# with the C pickler, without pickle.py). A module the bare interpreter already has (site may import some,
# an editable install pathlib and urllib.parse) is not counted.
FORBIDDEN = (
    "sagepy.store", "sagepy.runtime.durable", "sagepy.effects.journal", "sagepy.effects.outcomes",
    "sagepy.effects.mocks", "sagepy.effects.wire", "sagepy.effects.model_tools", "sagepy.llm", "sagepy.mcp",
    "sagepy.tools", "sagepy.testing", "sagepy.syntax.parser", "sagepy.syntax.grammar", "sagepy.errorcodes",
    "sagepy.cli.check", "sagepy.cli.explain", "sagepy.cli.groups", "sagepy.cli.new", "sagepy.cli.runs",
    "sagepy.cli.test", "sagepy.cli.tools", "sagepy.cli.tools_call", "sagepy.cli.tools_import",
    "sagepy.cli.tools_target", "sagepy.cli.arguments", "lark", "secrets", "socket", "hmac", "dataclasses",
    "inspect", "json", "sqlite3", "asyncio", "ssl", "httpx", "mcp", "rich", "argparse", "gettext", "locale",
    "shutil", "hashlib", "_hashlib", "pickle", "tempfile", "logging", "subprocess",
)

_REPORT = """\
import sys
from sagepy.cli.main import main
code = main(sys.argv[1:])
modules = sorted(sys.modules)
import json
with open({out!r}, "w") as f:
    json.dump({{"code": code, "modules": modules}}, f)
"""


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(SAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    return env


def _modules_of(tmp_path: Path, *argv: str) -> list[str]:
    """The modules imported by the time `sage ARGV` returns (json is imported for the report only after)."""
    out = tmp_path / "modules.json"
    result = subprocess.run([sys.executable, "-c", _REPORT.format(out=str(out)), *argv], cwd=tmp_path,
                            env=_environment(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["code"] == 0, result.stderr
    return report["modules"]


def _bare_interpreter(tmp_path: Path) -> set[str]:
    result = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"], cwd=tmp_path,
                            env=_environment(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def _forbidden(modules: list[str], bare: set[str]) -> list[str]:
    return [m for m in modules if m not in bare and any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_a_plain_run_imports_only_what_it_needs(tmp_path: Path) -> None:
    warm_up = subprocess.run([sys.executable, "-m", "sagepy", "run", str(HELLO)], cwd=tmp_path,
                             env=_environment(tmp_path), capture_output=True, text=True, timeout=60)
    assert warm_up.returncode == 0 and warm_up.stdout == "Hello from Sage!\n", warm_up.stderr
    modules = _modules_of(tmp_path, "run", str(HELLO))
    assert "sagepy.cli.run" in modules and "sagepy.runtime.agents" in modules   # the report sees the run
    assert _forbidden(modules, _bare_interpreter(tmp_path)) == []


def test_the_parser_imports_only_the_subcommand_that_runs(tmp_path: Path) -> None:
    modules = _modules_of(tmp_path, "version")
    assert [m for m in modules if m.startswith("sagepy.cli.") and m not in ("sagepy.cli.main",
                                                                                 "sagepy.cli.arguments")] == []
    assert "argparse" in modules   # the report sees a line that needs the parser


def _parsed(argv: list[str]) -> dict[str, object]:
    """What the argparse path of `main` makes of a `sage` line."""
    parser = build_parser(command_of(argv))
    rest, color = take_color_options(parser, argv)
    rest, program_args = _take_program_arguments(rest)
    args = vars(parser.parse_args(rest))
    args.update(color=color or args["color"], program_args=program_args)
    return args


def test_a_plain_run_line_is_read_as_the_parser_reads_it() -> None:
    for argv in (["run"], ["run", "x.sg"], ["run", "dir"], ["run", "x.sg", "--", "a", "--b", "--"],
                 ["run", "--", "-c"], ["run", "x.sg", "--"]):
        fast = plain_run(argv)
        assert fast is not None, argv
        assert vars(fast) == _parsed(argv), argv


def test_any_other_line_goes_to_the_parser() -> None:
    for argv in (["run", "--trace", "x.sg"], ["run", "x.sg", "--no-journal"], ["run", "a.sg", "b.sg"],
                 ["--color", "never", "run", "x.sg"], ["run", "-"], ["run", "-h"], ["check", "x.sg"], [],
                 ["--version"], ["runs", "submit", "--", "x"], ["run", "--resume", "last", "--", "x"]):
        assert plain_run(argv) is None, argv
