"""A throwaway PostgreSQL cluster for the database store's tests (no shared server, no mocks).

``initdb`` in a temporary directory, the server listening only on a Unix socket in that
directory, started and stopped with ``pg_ctl`` (which waits for the server itself: no sleep).
The server refuses to run as root, so when the tests run as root every server command runs as
the ``postgres`` system user (``runuser``), and the directory is handed to that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

REPO = Path(__file__).resolve().parent.parent.parent
ENSURE = REPO / "scripts" / "ensure-postgres.sh"


def _bindir() -> Path:
    done = subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"PostgreSQL is not available: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


class Cluster:
    """One running server; :meth:`dsn` names a database in it."""

    def __init__(self, bindir: Path, root: Path) -> None:
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.socket_dir = root
        self.log = root / "server.log"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            pw = pwd.getpwnam("postgres")
            os.chown(root, pw.pw_uid, pw.pw_gid)
        self._dbs = 0

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [*self.as_user, *argv], capture_output=True, text=True, check=False, cwd="/"
        )
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {done.stderr.strip()}\n{log[-2000:]}")

    def init(self) -> None:
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync", "-E", "UTF8", "--locale=C",
        )

    def start(self) -> None:
        # fsync stays on: a committed batch means what it says. No TCP listener at all.
        opts = f"-k {self.socket_dir} -c listen_addresses='' -c max_connections=200"
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", opts, "-w", "-t", "600", "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "600",
            "stop",
        )

    def restart(self) -> None:
        self.stop("fast")
        self.start()

    def base_dsn(self, db: str = "postgres") -> str:
        return f"host={self.socket_dir} user=postgres dbname={db}"

    def socket_dsn(self, db: str) -> str:
        """The same database as a ``postgresql://`` URI (the socket directory as ``host``)."""
        from urllib.parse import quote

        return f"postgresql:///{db}?host={quote(str(self.socket_dir), safe='')}&user=postgres"

    def new_database(self) -> str:
        """A fresh, empty database; its DSN."""
        import psycopg

        self._dbs += 1
        name = f"t{os.getpid()}_{self._dbs}"
        with psycopg.connect(self.base_dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.base_dsn(name)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    bindir = _bindir()
    root = Path(tempfile.mkdtemp(prefix="trio-agent-pg-"))
    cluster = Cluster(bindir, root)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        try:
            if (cluster.data / "postmaster.pid").exists():
                cluster.stop("immediate")
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_cluster: Cluster) -> str:
    """A fresh database in the throwaway cluster (each test sees empty tables)."""
    return pg_cluster.new_database()


def rows(dsn: str, sid: str) -> list[bytes]:
    """The event rows of session ``sid``, in seq order (and the seqs have no gap)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT seq, line FROM trio_agent_event WHERE session_id = %s ORDER BY seq", (sid,)
        )
        got = cur.fetchall()
    assert [s for s, _ in got] == list(range(len(got)))
    return [bytes(line) for _, line in got]


def force_expiry(dsn: str, sid: str) -> None:
    """Make the session's lease lapse now, behind its writer's back (as if it had paused)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE trio_agent_session SET expires = clock_timestamp() WHERE session_id = %s",
            (sid,),
        )


async def wait_lease_lapsed(dsn: str, sid: str) -> None:
    """Wait, on the database clock, until the session's lease has expired (no time limit)."""
    import psycopg

    while True:
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT extract(epoch FROM expires - clock_timestamp()) FROM trio_agent_session "
                "WHERE session_id = %s",
                (sid,),
            ).fetchone()
        assert row is not None
        if row[0] is None or row[0] <= 0:
            return
        await trio.sleep(float(row[0]) + 0.01)
