"""The throwaway PostgreSQL cluster of the database tests (tests/support/pgcluster.py) does
not outlive the process that made it, however that process ends: ``pg_ctl`` daemonizes the
server, and a test run killed by a signal (a CI timeout) runs no ``finally``."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from support import proc
from support.polling import HANG_GUARD, until_sync
from support.procenv import child_env

TESTS = Path(__file__).resolve().parents[1]

#: Makes a cluster, prints its server's pid and its directory, then waits to be killed.
HOLDER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from support.pgcluster import throwaway_cluster
with throwaway_cluster() as cluster:
    server = int((cluster.data / "postmaster.pid").read_text().split()[0])
    print(server, cluster.root, flush=True)
    time.sleep(3600)
"""


def test_a_killed_owner_takes_its_cluster_along() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(TESTS)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert holder.stdout is not None
        server, root = holder.stdout.readline().split()
        assert proc.alive(int(server)) and Path(root).is_dir()
        holder.send_signal(signal.SIGKILL)  # no finally runs
        holder.wait(timeout=HANG_GUARD)
        # The watchdog's work, seen by the tests' own probe: the server gone, its files too.
        until_sync(lambda: not proc.alive(int(server)) and not Path(root).exists())
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
