"""Child processes for the store contract tests over both backends (run as a script).

    python pg_child.py hold  BACKEND SID LEASE N   create SID, append the first N events of a
                                                   turn script, flush, say "ready <pid> <n>";
                                                   then for each "go K" line on stdin append the
                                                   next K events and flush, saying "flushed <n>"
                                                   or "fenced <message>"
    python pg_child.py race  BACKEND SID LEASE     say "ready <pid>", wait for "go", open SID,
                                                   say "won <events>" or "locked <message>",
                                                   then wait for stdin to close

    python pg_child.py zombie BACKEND LEASE        one store for many sessions: for each
                                                   "new SID N" line create SID, append the
                                                   first N events, flush, say "ready <pid> <n>";
                                                   for each "go K" line as for hold, except that
                                                   a fenced session is closed and the next
                                                   "new" line is awaited

BACKEND is ``jsonl:<root>`` or ``pg:<dsn>``. Every message is one atomic ``write`` on stdout.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from typing import Any

import trio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/

from support.store.workload import turn_script

from trio_agent.store import (
    JsonlStore,
    PostgresStore,
    Session,
    SessionFenced,
    SessionLocked,
    WriteFailed,
)


def say(*parts: object) -> None:
    os.write(1, (" ".join(str(p) for p in parts) + "\n").encode())


def make_store(backend: str, lease: float) -> Any:
    kind, _, where = backend.partition(":")
    if kind == "jsonl":
        return JsonlStore(where, reap_orphans=None)
    return PostgresStore(where, lease=lease, owner=f"child-{os.getpid()}", reap_orphans=None)


def script(tag: str) -> list[tuple[str, dict[str, Any]]]:
    """A long single turn (seeded): the events a holder appends, in order."""
    rng = random.Random(7)
    steps = list(turn_script(rng, 1, tag, max_steps=6))
    return [(t, d) for t, d, _ in steps]


async def readline() -> str:
    line: str = await trio.to_thread.run_sync(sys.stdin.readline)
    return line.strip()


async def hold(backend: str, sid: str, lease: float, n: int) -> None:
    events = script("z")
    async with make_store(backend, lease) as store:
        session = await store.create(sid)
        for type_, data in events[:n]:
            session.append(type_, data)
        await session.flush()
        say("ready", os.getpid(), len(session.events))
        pos = n
        while True:
            line = await readline()
            if not line:
                break
            k = int(line.split()[1])
            for type_, data in events[pos : pos + k]:
                session.append(type_, data)
            pos += k
            try:
                await session.flush()
            except SessionFenced as exc:
                say("fenced", exc)
                os._exit(0)  # nothing more to do; the lease is someone else's
            say("flushed", len(session.events))


async def flush_through(session: Session) -> SessionFenced | WriteFailed | None:
    """Flush until it succeeds or is fenced. A failed attempt (e.g. the server closed this
    connection while the process was stopped) is retried; one that keeps failing is
    returned, so that a broken fence shows as a verdict, not as a hang."""
    for _ in range(20):
        try:
            await session.flush()
        except SessionFenced as exc:
            return exc
        except WriteFailed as exc:
            failed = exc
            await trio.sleep(0.01)  # pacing only: the next attempt decides
            continue
        return None
    return failed


async def zombie(backend: str, lease: float) -> None:
    events = script("z")
    async with make_store(backend, lease) as store:
        session: Session | None = None
        pos = 0
        while True:
            line = await readline()
            if not line:
                break
            op, *args = line.split()
            if op == "new":
                session = await store.create(args[0])
                pos = int(args[1])
                for type_, data in events[:pos]:
                    session.append(type_, data)
                await session.flush()
                say("ready", os.getpid(), len(session.events))
                continue
            assert session is not None
            k = int(args[0])
            for type_, data in events[pos : pos + k]:
                session.append(type_, data)
            pos += k
            fenced = await flush_through(session)
            if fenced is None:
                say("flushed", len(session.events))
                continue
            if isinstance(fenced, WriteFailed):
                say("failed", fenced)
                continue
            with contextlib.suppress(SessionFenced):
                await session.aclose()
            session = None
            say("fenced", fenced)


async def race(backend: str, sid: str, lease: float) -> None:
    async with make_store(backend, lease) as store:
        say("ready", os.getpid())
        await readline()
        try:
            session = await store.open(sid)
        except SessionLocked as exc:
            say("locked", exc)
            return
        say("won", len(session.events))
        await readline()


def main() -> None:
    op, backend = sys.argv[1:3]
    args = sys.argv[3:]
    if op == "hold":
        trio.run(hold, backend, args[0], float(args[1]), int(args[2]))
    elif op == "zombie":
        trio.run(zombie, backend, float(args[0]))
    elif op == "race":
        trio.run(race, backend, args[0], float(args[1]))
    else:
        raise SystemExit(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
