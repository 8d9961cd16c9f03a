"""Database store benchmarks: durable throughput and takeover after a lease expiry.

``python -m bench postgres``. Runs on a throwaway PostgreSQL cluster started for the run
(tests/support/pgcluster.py: Unix socket only, fsync on), removed at the end.

1. durable throughput on PostgreSQL, write-behind batching (one transaction per batch) vs one
   transaction per event, side by side with the JSONL store on the same disk in the same run;
2. takeover after a lease expiry: a writer holding a short lease is SIGKILLed mid-turn; an
   opener waits for the expiry (read off the database) and opens; reported are the cost of the
   ``open`` itself (take the lease, read, repair, go live) and the time from the lease's
   expiry to the session being live again.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import trio

from bench.bench_store import Item, best, turns
from trio_agent.store import JsonlStore, LeaseHeld, PostgresStore

REPO = Path(__file__).resolve().parent.parent
# The throwaway cluster is test support, not shipped in the package.
sys.path.insert(0, str(REPO / "tests"))
from support.pgcluster import throwaway_cluster  # noqa: E402

TAKEOVER_LEASE = 1.0
TAKEOVER_ROUNDS = int(os.environ.get("TRIO_AGENT_BENCH_TAKEOVER_ROUNDS", "10"))


async def _durable(make: Any, items: list[Item], mode: str) -> float:
    async with make() as store:
        session = await store.create(f"{mode}-{time.monotonic_ns()}")
        start = time.perf_counter()
        for type_, data, flush_point in items:
            session.append(type_, data)
            if mode == "each" or (mode == "points" and flush_point):
                await session.flush()
            elif mode == "stream":
                await trio.sleep(0)  # a producer that yields, as a streaming runtime does
        await session.flush()
        elapsed = time.perf_counter() - start
        await session.aclose()
        return elapsed


def bench_throughput(dsn: str, tmp: Path) -> None:
    items = list(turns(random.Random(1), 1, 60))
    n = len(items)

    def pg() -> PostgresStore:
        return PostgresStore(dsn, reap_orphans=None)

    def jsonl() -> JsonlStore:
        return JsonlStore(tmp / "jsonl", reap_orphans=None)

    def run(make: Any, mode: str) -> float:
        return best(2, lambda: trio.run(_durable, make, items, mode))

    got: dict[tuple[str, str], float] = {}
    for name, make in (("pg", pg), ("jsonl", jsonl)):
        for mode in ("each", "points", "stream"):
            got[name, mode] = run(make, mode)
    each = got["pg", "each"]
    print(f"durable throughput ({n} events; PostgreSQL fsync on, JSONL real fsync, same disk):")
    rows = [
        ("PostgreSQL, one transaction per event", "pg", "each"),
        ("PostgreSQL, write-behind + runtime flushes", "pg", "points"),
        ("PostgreSQL, write-behind, window only", "pg", "stream"),
        ("JSONL, one fsync per event", "jsonl", "each"),
        ("JSONL, write-behind + runtime flushes", "jsonl", "points"),
        ("JSONL, write-behind, window only", "jsonl", "stream"),
    ]
    print(f"  {'':<43} {'':>18}   vs PostgreSQL per event   vs JSONL, same mode")
    for label, name, mode in rows:
        t = got[name, mode]
        versus = f"{got['jsonl', mode] / t:8.2f}x" if name == "pg" else ""
        line = f"  {label:<43} {n / t:>9,.0f} events/s   {each / t:10.1f}x {'':>13} {versus}"
        print(line.rstrip())


class _Holder:
    def __init__(self, dsn: str, sid: str, lease: float, count: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.pg_holder", dsn, sid, str(lease), str(count)],
            stdout=subprocess.PIPE,
            cwd=REPO,
            env=env,
        )

    def ready(self) -> int:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while not buf.endswith(b"\n"):
            if not select.select([fd], [], [], 120)[0]:
                raise TimeoutError("the holder hung")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise EOFError(f"the holder exited ({self.proc.wait()})")
            buf += chunk
        return int(buf.split()[1])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _expires(dsn: str, sid: str) -> float:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM expires) FROM trio_agent_session WHERE session_id = %s",
            (sid,),
        ).fetchone()
    assert row is not None and row[0] is not None
    return float(row[0])


async def _take_over(dsn: str, sid: str, expires: float) -> tuple[float, float, int]:
    """Open ``sid`` as soon as its lease has expired: ``(open s, expiry -> live s, events)``."""
    async with PostgresStore(dsn, lease=60.0, owner="taker", reap_orphans=None) as store:
        while True:
            await trio.sleep(max(0.0, expires - time.time()))
            start = time.perf_counter()
            try:
                session = await store.open(sid)
            except LeaseHeld:  # the database clock had not got there yet
                continue
            cost = time.perf_counter() - start
            live = time.time() - expires
            assert session.events[-1].data["reason"]["kind"] == "interrupted"
            count = len(session.events)
            await session.aclose()
            return cost, live, count
    raise AssertionError("unreachable: the loop returns")


def bench_takeover(dsn: str) -> None:
    print(
        f"takeover after a lease expiry (lease {TAKEOVER_LEASE:g} s, writer SIGKILLed mid-turn,"
        f" {TAKEOVER_ROUNDS} rounds per size):"
    )
    for count in (5, 400):
        opens: list[float] = []
        lives: list[float] = []
        events = 0
        for n in range(TAKEOVER_ROUNDS):
            sid = f"take-{count}-{n}"
            holder = _Holder(dsn, sid, TAKEOVER_LEASE, count)
            try:
                holder.ready()
                holder.kill()
                expires = _expires(dsn, sid)
            finally:
                holder.kill()
            cost, live, events = trio.run(_take_over, dsn, sid, expires)
            opens.append(cost)
            lives.append(live)
        print(
            f"  {events:>6,} events: open (take lease, read, repair, go live) median "
            f"{statistics.median(opens) * 1e3:6.1f} ms, max {max(opens) * 1e3:6.1f} ms;  "
            f"expiry -> live median {statistics.median(lives) * 1e3:6.1f} ms, "
            f"max {max(lives) * 1e3:6.1f} ms"
        )


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench_postgres."))
    try:
        with throwaway_cluster() as cluster:
            bench_throughput(cluster.new_database(), tmp)
            bench_takeover(cluster.new_database())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
