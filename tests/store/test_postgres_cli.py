"""`sage run` and `sage runs` with a PostgreSQL store, as a user meets them (SPEC §14.1): SAGE_STATE_URL,
`$` references in `url`, the messages of a database that cannot be reached or a driver that is missing, the
E090s of grove.toml — and a password that never shows, in any of them, nor in a trace."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgcluster import PASSWORD

REPO = Path(__file__).resolve().parent.parent.parent

PROGRAM = """\
agent Main {
    @persistent count: Int
    on start {
        let n = self.count.update(|c: Int| c + 1);
        print("count {n}");
        yield(0);
    }
}
run Main;
"""


def project(root: Path, persistence: str, name: str | None = "demo") -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.sg").write_text(PROGRAM, encoding="utf-8")
    head = f'[project]\nname = "{name}"\n\n' if name else ""
    (root / "grove.toml").write_text(f"{head}[persistence]\n{persistence}\n", encoding="utf-8")
    return root


def sage(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    environ.update(PYTHONPATH=str(REPO), NO_COLOR="1", **env)
    result = subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=root, env=environ, capture_output=True,
                            text=True, timeout=120)
    assert PASSWORD not in result.stdout + result.stderr
    return result


def test_a_url_with_a_variable_runs_on_postgres_and_sage_runs_lists_it(tmp_path: Path, pg_url: str) -> None:
    url = pg_url.replace(PASSWORD, "${PGPW}")
    root = project(tmp_path / "p", f'backend = "postgres"\nurl = "{url}"')
    first = sage(root, "run", "--trace-file", "trace.jsonl", PGPW=PASSWORD)
    assert (first.returncode, first.stdout) == (0, "count 1\n"), first.stderr
    assert PASSWORD not in (root / "trace.jsonl").read_text(encoding="utf-8")
    assert sage(root, "run", PGPW=PASSWORD).stdout == "count 2\n"
    listed = sage(root, "runs", "list", PGPW=PASSWORD)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2, listed.stderr
    assert not (root / ".sage" / "state.db").exists()
    unset = sage(root, "runs", "list")
    assert (unset.returncode, unset.stderr) == (1, "error: [persistence] url refers to unset environment variable "
                                                   "'PGPW'\n")


def test_sage_state_url_replaces_the_backend_of_grove_toml(tmp_path: Path, pg_url: str) -> None:
    root = project(tmp_path / "p", 'backend = "sqlite"')
    assert sage(root, "run", SAGE_STATE_URL=pg_url).stdout == "count 1\n"
    assert not (root / ".sage" / "state.db").exists()
    assert sage(root, "run").stdout == "count 1\n"   # the file of grove.toml: a store of its own
    assert sage(root, "run", SAGE_STATE_URL=pg_url).stdout == "count 2\n"
    assert sage(root, "run", SAGE_STATE_URL="sqlite:elsewhere.db").stdout == "count 1\n"
    assert (root / "elsewhere.db").exists()
    without_table = project(tmp_path / "q", "", name="demo")
    (without_table / "grove.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    plain = sage(without_table, "runs", "list", SAGE_STATE_URL=pg_url)
    assert (plain.returncode, plain.stderr) == (1, "error: durable runs need a [persistence] table in grove.toml\n")


@pytest.mark.parametrize("form", ["uri", "conninfo"])
def test_a_database_that_cannot_be_reached_is_named_without_its_password(tmp_path: Path, pg_cluster,
                                                                         form: str) -> None:
    port = pg_cluster.port
    if form == "uri":
        url, shown = (f"postgresql://sage:{PASSWORD}@127.0.0.1:{port}/nosuchdb",
                      f"postgresql://sage:***@127.0.0.1:{port}/nosuchdb")
    else:
        url, shown = (f"host=127.0.0.1 port={port} dbname=nosuchdb user=sage password={PASSWORD}",
                      f"host=127.0.0.1 port={port} dbname=nosuchdb user=sage password=***")
    root = project(tmp_path / "p", f'backend = "postgres"\nurl = "{url}"')
    for args in (["run"], ["runs", "list"]):
        failed = sage(root, *args)
        assert failed.returncode == 1
        assert failed.stderr.startswith(f"error: cannot reach the state database {shown}: "), failed.stderr
        assert "nosuchdb" in failed.stderr.splitlines()[0] and len(failed.stderr.splitlines()) == 1


def test_without_psycopg_the_backend_says_what_to_install(tmp_path: Path, pg_url: str) -> None:
    root = project(tmp_path / "p", f'backend = "postgres"\nurl = "{pg_url}"')
    blocked = ("import sys; sys.modules['psycopg'] = None; from sagepy.cli.main import main; "
               "sys.exit(main(sys.argv[1:]))")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_")}
    for args in (["run"], ["runs", "list"]):
        result = subprocess.run([sys.executable, "-c", blocked, *args], cwd=root, capture_output=True, text=True,
                                env=dict(environ, PYTHONPATH=str(REPO)), timeout=120)
        assert (result.returncode, result.stderr) == (
            1, "error: the postgres backend needs psycopg 3: pip install 'sagepy[postgres]'\n")


def test_grove_toml_problems_of_a_postgres_backend_are_e090_and_quote_no_password(tmp_path: Path) -> None:
    root = project(tmp_path / "p", f'backend = "postgres"\nschema = ["postgresql://sage:{PASSWORD}@db/x"]',
                   name=None)
    checked = sage(root, "check")
    assert checked.returncode == 1
    assert "a postgres backend needs [project] name: runs and fields are keyed by it" in checked.stderr
    assert '[persistence] backend = "postgres" needs url' in checked.stderr
    assert 'schema = ["postgresql://sage:***@db/x"]' in checked.stderr   # the quoted line, masked
    ran = sage(root, "run")
    assert ran.returncode == 1 and ran.stderr.count("error[E090]") == 3, ran.stderr


def test_an_unterminated_url_string_is_e090_quoting_no_password(tmp_path: Path) -> None:
    root = project(tmp_path / "p", f'backend = "postgres"\nurl = "postgresql://sage:{PASSWORD}@db/x')
    for args in (["check"], ["run"], ["runs", "list"], ["runs", "show", "last"], ["worker", "--drain"]):
        result = sage(root, *args)   # sage() asserts that the password shows nowhere
        assert result.returncode == 1, (args, result.stderr)
        assert "error[E090]: invalid grove.toml" in result.stderr, (args, result.stderr)
        assert 'url = "postgresql://sage:***@db/x' in result.stderr, (args, result.stderr)


def test_sage_runs_with_an_invalid_persistence_table_prints_the_e090_of_sage_run(tmp_path: Path) -> None:
    root = project(tmp_path / "p", 'backend = "postgres"')
    ran = sage(root, "run")
    assert ran.returncode == 1 and '[persistence] backend = "postgres" needs url' in ran.stderr, ran.stderr
    for args in (["runs", "list"], ["runs", "show", "last"], ["runs", "prune"], ["runs", "wait", "last"],
                 ["runs", "submit"], ["worker", "--drain"]):
        result = sage(root, *args)
        assert (result.returncode, result.stderr) == (1, ran.stderr), args


def test_a_url_that_is_an_array_of_strings_is_called_an_array(tmp_path: Path) -> None:
    root = project(tmp_path / "p", f'backend = "postgres"\nurl = ["postgresql://sage:{PASSWORD}@db/x"]')
    checked = sage(root, "check")
    assert checked.returncode == 1
    assert "[persistence] url must be a string, found an array\n" in checked.stderr, checked.stderr
