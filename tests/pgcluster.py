"""A throwaway PostgreSQL server for the tests: a temporary cluster on 127.0.0.1, on a free port.

The binaries come from the `pgserver` package of the `test` extra (a PostgreSQL build shipped as a wheel, so
that `pip install -e '.[test]'` brings a server on a fresh machine), else from the machine's own `initdb` and
`pg_ctl` (PATH, or Debian's /usr/lib/postgresql/<version>/bin). Only the binaries of `pgserver` are used:
its own start-up listens on a Unix socket only, and the tests want TCP on 127.0.0.1, as a real deployment.

PostgreSQL refuses to run as root, and CI runs as root: the cluster then belongs to an unprivileged user
(`postgres` when the machine has it, else `nobody`), and initdb, pg_ctl and the server run under that user
(subprocess's `user=`/`group=`). That user may not reach the binaries: pgserver's live in site-packages, and
when Python itself lives under root's home (mode 700, as with a pyenv install) they are copied once to a
directory of their own under the temporary directory, which the user can read. Authentication is `trust` on 127.0.0.1 for the superuser `postgres`, plus
a user `sage` with the password `PgSecret-42`, so that the tests of masking have a password to hide.

`Cluster.restart()` stops the server (fast shutdown: every connection is cut) and starts it again on the
same port, for the tests of a run that loses its database for a while.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

PASSWORD = "PgSecret-42"
USER = "sage"


class ClusterError(Exception):
    """No server could be started: str() says why."""


def binaries() -> Path:
    """The directory of initdb, pg_ctl and postgres."""
    spec = find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        bundled = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
        if (bundled / "pg_ctl").exists():
            return bundled
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if debian:
        return Path(debian[-1]).parent
    raise ClusterError("no PostgreSQL binaries: install the test extra (`pip install -e '.[test]'` brings the "
                       "pgserver package) or PostgreSQL's server package (initdb and pg_ctl)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unprivileged() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when this process is root; None when it is not."""
    if os.geteuid() != 0:
        return None
    import pwd
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise ClusterError("running as root, and neither a `postgres` nor a `nobody` user exists to run "
                       "PostgreSQL as (it refuses to run as root)")


def _runs_as(program: Path, owner: tuple[int, int]) -> bool:
    """Whether `owner` can execute `program` (every directory above it must be searchable by that user)."""
    try:
        subprocess.run([str(program), "--version"], capture_output=True, timeout=60,
                       user=owner[0], group=owner[1], extra_groups=[])
    except PermissionError:
        return False
    except (OSError, subprocess.SubprocessError) as exc:
        raise ClusterError(f"{program.name} could not run: {exc}") from None
    return True


def reachable_binaries(bin_dir: Path, owner: tuple[int, int] | None) -> Path:
    """`bin_dir`, or a copy of its install tree that `owner` can reach when it cannot reach `bin_dir`."""
    if owner is None or _runs_as(bin_dir / "pg_ctl", owner):
        return bin_dir
    # pgserver's binaries find their libraries through RPATH $ORIGIN/../../../pgserver.libs (auditwheel), so
    # the copy keeps the layout: <copy>/pgserver/pginstall/bin and <copy>/pgserver.libs
    install = bin_dir.parent
    site = install.parent.parent
    stamp = int((bin_dir / "pg_ctl").stat().st_mtime)
    tag = f"{hashlib.sha256(str(install).encode()).hexdigest()[:12]}-{stamp}"
    copy = Path(tempfile.gettempdir()) / f"sagepy-pginstall-{tag}"
    copied_bin = copy / install.parent.name / install.name / "bin"
    if not (copied_bin / "pg_ctl").exists():
        # built beside and renamed into place, so a concurrent test process never sees half a tree
        staging = Path(tempfile.mkdtemp(prefix="sagepy-pginstall-", dir=tempfile.gettempdir()))
        tree = staging / "tree"
        shutil.copytree(install, tree / install.parent.name / install.name, symlinks=True)
        for libs in site.glob("*.libs"):
            shutil.copytree(libs, tree / libs.name, symlinks=True)
        for directory in (tree, *[p for p in tree.rglob("*") if p.is_dir()]):
            os.chmod(directory, 0o755)
        try:
            os.rename(tree, copy)
        except OSError:
            if not (copied_bin / "pg_ctl").exists():
                raise ClusterError(f"could not copy the PostgreSQL binaries to {copy}") from None
        shutil.rmtree(staging, ignore_errors=True)
    if not _runs_as(copied_bin / "pg_ctl", owner):
        raise ClusterError(f"the unprivileged user cannot run the PostgreSQL binaries, even copied to {copy}")
    return copied_bin


class Cluster:
    def __init__(self) -> None:
        self.owner = _unprivileged()
        self.bin = reachable_binaries(binaries(), self.owner)
        self.dir = Path(tempfile.mkdtemp(prefix="sage-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = _free_port()
        self._databases = 0

    # ------------------------------------------------------------ processes

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        kwargs: dict = {}
        if self.owner is not None:
            kwargs.update(user=self.owner[0], group=self.owner[1], extra_groups=[])
        env = dict(os.environ, LC_ALL="C", TZ="UTC")
        try:
            return subprocess.run([str(self.bin / args[0]), *args[1:]], capture_output=True, text=True,
                                  timeout=timeout, env=env, cwd=self.dir, **kwargs)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClusterError(f"{args[0]} could not run: {exc}") from None

    def _check(self, result: subprocess.CompletedProcess, what: str) -> None:
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise ClusterError(f"{what} failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}\n{log}")

    def start(self) -> "Cluster":
        if self.owner is not None:
            # the server user must reach its data directory and, for the bundled binaries, their libraries
            os.chmod(self.dir, 0o755)
            os.chown(self.dir, *self.owner)
        fresh = not self.data.exists()
        if fresh:
            self._check(self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                                  "--encoding=UTF8", "--no-sync"), "initdb")
            with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                # fsync stays on: the durability settings (synchronous_commit) are part of what is tested
                conf.write(f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = ''\n"
                           "max_connections = 300\nshared_buffers = 32MB\nlog_min_messages = warning\n"
                           "timezone = 'UTC'\n")
            with open(self.data / "pg_hba.conf", "w", encoding="utf-8") as hba:
                hba.write(f"host all postgres 127.0.0.1/32 trust\nhost all {USER} 127.0.0.1/32 scram-sha-256\n")
        self._check(self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"),
                    "pg_ctl start")
        if fresh:
            self.sql(f"CREATE ROLE {USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        return self

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server (every connection is cut), stay down for `down_seconds`, start it again."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------ databases

    def url(self, database: str = "postgres", password: bool = True) -> str:
        secret = f":{PASSWORD}" if password else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/{database}", autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self) -> str:
        """A fresh, empty database; its URL (with the password of user `sage`)."""
        self._databases += 1
        name = f"t{os.getpid()}_{self._databases}"
        self.sql(f"CREATE DATABASE {name}")
        return self.url(name)


def start_cluster() -> Cluster:
    """A started cluster, or ClusterError saying why there is none."""
    try:
        import psycopg  # noqa: F401  (the tests and the backend need the driver itself)
    except ImportError:
        raise ClusterError("psycopg 3 is not installed: `pip install -e '.[test]'` brings it") from None
    cluster = Cluster()
    try:
        return cluster.start()
    except ClusterError:
        shutil.rmtree(cluster.dir, ignore_errors=True)
        raise
