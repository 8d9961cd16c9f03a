"""A throwaway PostgreSQL cluster, for the database store's tests and benchmarks.

``initdb`` in a temporary directory, the server listening only on a Unix socket in that
directory (no TCP listener at all), started and stopped with ``pg_ctl`` (which waits for the
server itself: no sleep). The server refuses to run as root, so when this runs as root every
server command runs as the ``postgres`` system user (``runuser``) and the directory is handed
to that user. No shared server, no mocks. A watchdog process stops the server if the process
that made it ends without stopping it (killed by a signal).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Cluster", "PostgresUnavailable", "find_bindir", "throwaway_cluster"]

REPO = Path(__file__).resolve().parents[2]
ENSURE = REPO / "scripts" / "ensure-postgres.sh"


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing and could not be installed."""


def find_bindir(ensure: Path = ENSURE) -> Path:
    """The directory of ``initdb``/``pg_ctl`` (``scripts/ensure-postgres.sh`` installs them)."""
    done = subprocess.run(["bash", str(ensure)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PostgresUnavailable(f"PostgreSQL is not available: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


class Cluster:
    """One server in ``root``; :meth:`new_database` makes an empty database and names its DSN."""

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
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )

    def start(self) -> None:
        # fsync stays on: a committed batch means what it says. No TCP listener at all.
        opts = f"-k {self.socket_dir} -c listen_addresses='' -c max_connections=200"
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            opts,
            "-w",
            "-t",
            "600",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-m",
            mode,
            "-w",
            "-t",
            "600",
            "stop",
        )

    def restart(self) -> None:
        self.stop("fast")
        self.start()

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

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


#: Waits for the process that made a cluster to exit, then stops the server if it still runs
#: and removes its directory. ``pg_ctl`` daemonizes the server, so a test run ended by a
#: signal (a CI timeout's SIGTERM, a SIGKILL), which runs no ``finally``, would leave it
#: running for ever with its files. Argv: owner pid, root, then the stop command.
_WATCHDOG = """
import os, shutil, subprocess, sys
from trio_agent.procs.group_kill import wait_exited
owner, root, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
wait_exited(owner)
if os.path.exists(os.path.join(root, "data", "postmaster.pid")):
    subprocess.run(stop, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
shutil.rmtree(root, ignore_errors=True)
"""


def _watch(cluster: Cluster) -> subprocess.Popen[bytes]:
    """Start the :data:`_WATCHDOG` of ``cluster``, in a session of its own, so that the
    terminal's Ctrl-C, which also reaches this process's group, cannot end it first."""
    stop = [*cluster.as_user, str(cluster.bindir / "pg_ctl"), "-D", str(cluster.data)]
    stop += ["-m", "immediate", "-w", "-t", "600", "stop"]
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(cluster.root), *stop],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@contextlib.contextmanager
def throwaway_cluster(bindir: Path | None = None) -> Iterator[Cluster]:
    """A started cluster in a fresh temporary directory; stopped and removed at the end, or
    by its watchdog (:data:`_WATCHDOG`) when this process ends without reaching the end."""
    found = bindir if bindir is not None else find_bindir()
    root = Path(tempfile.mkdtemp(prefix="trio-agent-pg-"))
    cluster = Cluster(found, root)
    watchdog = _watch(cluster)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        try:
            if cluster.running():
                cluster.stop("immediate")
        finally:
            shutil.rmtree(root, ignore_errors=True)
            watchdog.kill()  # nothing left for it to do
            watchdog.wait()
