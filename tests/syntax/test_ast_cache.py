"""The AST cache's key and places (SPEC §0.1): an entry is invalidated by every sagepy file that shapes a parse,
and the prelude's ASTs are kept beside the package, so that a first run with an empty user cache parses the
program's own files only."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sagepy import resources
from sagepy.syntax import cache

REPO = Path(__file__).resolve().parents[2]


def _environment(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    env.update(SAGE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    return env


def test_every_sagepy_module_the_parser_runs_is_in_the_cache_key(tmp_path: Path) -> None:
    probe = ("import sys, sagepy.syntax.parser\n"
             "print('\\n'.join(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'sagepy'))\n")
    result = subprocess.run([sys.executable, "-c", probe], env=_environment(tmp_path), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = {os.path.realpath(p) for p in result.stdout.split()}
    parser = os.path.realpath(REPO / "sagepy" / "syntax" / "parser.py")
    assert parser in loaded and len(loaded) > 10   # the probe saw the parser and what it imports
    keyed = {os.path.realpath(p) for p in cache.shaping_files()}
    assert loaded - keyed == set()
    assert resources.grammar_file().is_file()


def test_a_first_run_caches_the_program_files_only_in_the_user_cache(tmp_path: Path) -> None:
    program = tmp_path / "hello.sg"
    program.write_text('agent Main { on start { print("hi"); } }\nrun Main;\n', encoding="utf-8")
    user_cache = tmp_path / "cache"
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", str(program)], cwd=tmp_path,
                            env=_environment(user_cache), capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "hi\n"), result.stderr
    beside = Path(cache.__file__).parent / "__pycache__"
    prelude_files = len([n for n in os.listdir(resources.stdlib_dir()) if n.endswith(".sg")])
    expected = 1 if os.access(beside, os.W_OK) else 1 + prelude_files   # a read-only package: all in the user's
    assert len(list((user_cache / "ast").glob("*.pickle"))) == expected


def test_no_cache_writes_no_entry(tmp_path: Path) -> None:
    program = tmp_path / "hello.sg"
    program.write_text('agent Main { on start { print("hi"); } }\nrun Main;\n', encoding="utf-8")
    env = dict(_environment(tmp_path / "cache"), SAGE_NO_CACHE="1")
    result = subprocess.run([sys.executable, "-m", "sagepy", "run", str(program)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "hi\n"), result.stderr
    assert not (tmp_path / "cache").exists()
    assert cache.parse_file_cached(str(program), program.read_text(encoding="utf-8"), None)[1] == []
