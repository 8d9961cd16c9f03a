"""A writer that dies holding its lease, for ``bench_postgres`` (run as a child process).

    python -m bench.pg_holder DSN SID LEASE TURNS

Creates SID in a PostgresStore with a LEASE-second lease, appends TURNS complete turns and
then half of one more (a turn left open), flushes, says ``ready <events>`` and waits to be
killed (SIGKILL: nothing releases the lease; only its expiry frees the session).
"""

from __future__ import annotations

import os
import random
import sys

import trio

from bench.bench_store import turns
from trio_agent.store import PostgresStore


async def hold(dsn: str, sid: str, lease: float, count: int) -> None:
    async with PostgresStore(dsn, lease=lease, owner=f"holder-{os.getpid()}") as store:
        session = await store.create(sid)
        rng = random.Random(5)
        for type_, data, _ in turns(rng, 1, count):
            session.append(type_, data)
        for type_, data, _ in turns(rng, count + 1, 1):
            session.append(type_, data)
            if type_ == "tool/output":
                break
        await session.flush()
        os.write(1, f"ready {len(session.events)}\n".encode())
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(hold, sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
