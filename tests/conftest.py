"""Fixtures shared by the whole suite: the Node MCP servers, installed on first use, and a PostgreSQL server.

The tests talk to two Node reference servers (@modelcontextprotocol/server-everything and server-filesystem),
locked in tests/mcp/node/package-lock.json. `pip install -e '.[test]'` cannot bring them, so the first test
that needs them runs `npm ci` into tests/mcp/node/node_modules (git-ignored), once per session, under a file
lock so that two pytest processes never install over each other. A module that uses them says so with
`pytestmark = pytest.mark.usefixtures("node_servers")`. The MCP conformance suite, locked in
tests/conformance/node/, is installed the same way by `node_packages`. Without npm, or when the install fails,
those tests fail (never skip) with the reason.

`browser` is a headless Chromium driven by Playwright (tests/browser.py: the system's Chromium, installed with
apt-get when missing; where none can be had, the tests that use it fail with the reason).

`pg_cluster` is a throwaway PostgreSQL server on 127.0.0.1 for the whole session (tests/pgcluster.py: the
binaries of the `pgserver` package of the test extra, else the machine's; run as an unprivileged user when
the tests run as root); `pg_url` is a fresh, empty database on it, as a URL with a password. Where no server
can be started, the tests that use them fail with the reason.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "mcp" / "node"

# A suite started in the background by a non-interactive shell (`python -m pytest … &` in a script) inherits
# SIGINT ignored, and so would every process it starts: `sage` would never see the Ctrl-C that the signal
# tests send it, nor a shell its own `kill -INT $$`. The tests send signals on purpose: they get the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _installed(node_dir: Path = NODE_DIR) -> bool:
    """Whether node_modules holds every package of the lockfile at its locked version."""
    packages = json.loads((node_dir / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    for where, locked in packages.items():
        if not where:  # the project itself
            continue
        try:
            found = json.loads((node_dir / where / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if locked.get("optional"):   # a platform's own binary (its `os`/`cpu`), which npm installs elsewhere
                continue
            return False
        if found.get("version") != locked.get("version"):
            return False
    return True


def _install(node_dir: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: the MCP tests need Node.js 18 or newer with npm, to install the packages "
                    f"locked in {node_dir / 'package-lock.json'}", pytrace=False)
    try:
        result = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=node_dir,
                                capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`npm ci` in {node_dir} did not finish within 15 minutes", pytrace=False)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip().splitlines()[-20:]
        pytest.fail(f"`npm ci` in {node_dir} failed (exit {result.returncode}):\n" + "\n".join(output),
                    pytrace=False)


def node_packages(node_dir: Path) -> Path:
    """`node_dir`/node_modules, installed with `npm ci` from its lockfile unless it is already."""
    import fcntl  # POSIX only: imported here so that the rest of the suite still loads elsewhere

    with open(node_dir / ".install.lock", "w") as lock:
        # Checked under the lock too: another process may be halfway through its install.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(node_dir):
            _install(node_dir)
            if not _installed(node_dir):
                pytest.fail(f"`npm ci` in {node_dir} left node_modules different from package-lock.json",
                            pytrace=False)
    return node_dir / "node_modules"


@pytest.fixture(scope="session")
def node_servers() -> Path:
    """tests/mcp/node/node_modules with the locked Node servers in it (their commands are in `.bin/`)."""
    return node_packages(NODE_DIR)


@pytest.fixture(scope="session")
def conformance_suite() -> Path:
    """The `conformance` command of the pinned MCP conformance suite (tests/conformance/node)."""
    return node_packages(NODE_DIR.parent.parent / "conformance" / "node") / ".bin" / "conformance"


@pytest.fixture(scope="session")
def pg_cluster():
    """A PostgreSQL server for the session (a pgcluster.Cluster); stopped and deleted at the end."""
    from pgcluster import ClusterError, start_cluster
    try:
        cluster = start_cluster()
    except ClusterError as exc:
        pytest.fail(f"no PostgreSQL server for the tests: {exc}", pytrace=False)
    yield cluster
    cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a fresh, empty database (user `sage`, with its password in the URL)."""
    return pg_cluster.new_database()


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (a Playwright Browser) for one test module: while Playwright's sync API lives, its
    event loop counts as running in this thread, which the in-process MCP tests of later modules must not find."""
    from browser import close, launch
    driver, chromium = launch()
    yield chromium
    close(driver, chromium)
