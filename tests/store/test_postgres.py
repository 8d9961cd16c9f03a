"""The store contract over both backends, and the database store's leases and fencing.

Every test runs against real parts: a throwaway PostgreSQL cluster started by the fixture
(tests/store/pg_cluster.py), real files, real child processes, real SIGKILL/SIGSTOP/SIGCONT.
Lease expiry is driven by the database clock: a test that needs a lease to lapse asks the
database how long is left and waits that long, then asks again; no verdict depends on speed.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from pg_cluster import Cluster, rows, wait_lease_lapsed
from store_helpers import child_env

from trio_agent.log import check_events, encode_event
from trio_agent.store import (
    JsonlStore,
    LeaseHeld,
    LiveTurnOpen,
    PostgresStore,
    SessionExists,
    SessionFenced,
    SessionLocked,
    SessionNotFound,
    WriteFailed,
)

HERE = Path(__file__).resolve().parent
CHILD = HERE / "pg_child.py"
HANG_GUARD = 120.0  # only a hung child ever reaches it

TURN = [
    ("turn/start", {"turn": 1}),
    ("step/start", {"turn": 1, "step": 1}),
    ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "hi"}}),
]


def close_turn(session: Any, turn: int = 1) -> None:
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


class Child:
    """A pg_child.py process; lines are read with a hang guard, never a verdict timeout."""

    def __init__(self, *argv: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=child_env(),
        )
        assert self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        self._buf = b""

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def read(self) -> list[str]:
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._fd], [], [], HANG_GUARD)
            if not ready:
                raise TimeoutError("child hung")
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise EOFError(f"child exited ({self.proc.wait()})")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode().split(" ")

    async def aread(self) -> list[str]:
        return await trio.to_thread.run_sync(self.read)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- the contract, over both backends -------------------------------------------------------


@pytest.fixture(params=["jsonl", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[..., Any]]:
    """``(child backend spec, make_store(**kw))`` for one backend."""
    if request.param == "jsonl":
        root = tmp_path / "store"
        return f"jsonl:{root}", lambda **kw: JsonlStore(root, reap_orphans=None, **kw)
    dsn = request.getfixturevalue("pg_dsn")
    return f"pg:{dsn}", lambda **kw: PostgresStore(dsn, reap_orphans=None, **kw)


@pytest.fixture
def make_store(backend: tuple[str, Callable[..., Any]]) -> Callable[..., Any]:
    return backend[1]


async def test_create_append_reopen(make_store: Callable[..., Any]) -> None:
    async with make_store() as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        close_turn(s)
        await s.flush()
        first = list(s.events)
        await s.aclose()
    async with make_store() as store:
        s = await store.open("s1")
        assert list(s.events) == first
        s.append("turn/start", {"turn": 2})
        s.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
        await s.aclose()
        assert await store.load("s1") == list(s.events)
        assert len(await store.load("s1")) == 7


async def test_errors(make_store: Callable[..., Any]) -> None:
    async with make_store() as store:
        with pytest.raises(SessionNotFound):
            await store.open("nope")
        with pytest.raises(SessionNotFound):
            await store.inspect("nope")
        s = await store.create("s1")
        with pytest.raises(SessionExists):
            await store.create("s1")
        with pytest.raises(SessionLocked):
            await store.open("s1")
        for t, d in TURN:
            s.append(t, d)
        with pytest.raises(LiveTurnOpen):
            await store.load("s1")
        assert len(await store.inspect("s1")) == 3  # live: as is, no closers
        await s.aclose()
        with pytest.raises(SessionExists):
            await store.create("s1")


async def test_list(make_store: Callable[..., Any]) -> None:
    async with make_store() as store:
        assert await store.list() == []
        for sid in ["b", "a", "Z/é", "c c"]:
            await store.create(sid)
        assert await store.list() == sorted(["b", "a", "Z/é", "c c"])


async def test_batch_is_all_or_nothing_and_in_order(make_store: Callable[..., Any]) -> None:
    async with make_store(window=3600.0) as store:  # nothing written before the flush
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        for i in range(200):
            s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta",
                                                                         "text": str(i)}})
        close_turn(s)
        await s.flush()
        events = list(s.events)
    async with make_store() as store:
        assert await store.load("s1") == events


async def test_crashed_writer_is_repaired_once(
    backend: tuple[str, Callable[..., Any]],
) -> None:
    """kill -9 of a live writer mid-turn: inspect adds closers in memory only; open writes
    them once; a second open changes nothing (repair idempotence)."""
    spec, make = backend
    child = Child("hold", spec, "s1", "0.5", "8")
    try:
        ready = await child.aread()
        assert ready[0] == "ready"
        n = int(ready[2])
        child.kill()
        if spec.startswith("pg:"):
            await wait_lease_lapsed(spec[3:], "s1")
        async with make(lease=30.0) if spec.startswith("pg:") else make() as store:
            seen = await store.inspect("s1")
            assert len(seen) > n and seen[-1].type == "turn/end"
            assert seen[-1].data["reason"]["kind"] == "interrupted"
            check_events(seen)
            assert len(await store.inspect("s1")) == len(seen)  # nothing was written
            s = await store.open("s1")
            assert list(s.events) == seen
            await s.aclose()
            again = await store.open("s1")
            assert list(again.events) == seen
            await again.aclose()
        if spec.startswith("pg:"):
            assert rows(spec[3:], "s1") == [encode_event(e)[:-1] for e in seen]
    finally:
        child.kill()


# -- leases and fencing (database only) ---------------------------------------------------------


async def test_live_elsewhere_is_locked_naming_owner(pg_dsn: str) -> None:
    child = Child("hold", f"pg:{pg_dsn}", "s1", "30", "5")
    try:
        ready = await child.aread()
        async with PostgresStore(pg_dsn, lease=30.0, reap_orphans=None) as store:
            with pytest.raises(LeaseHeld) as info:
                await store.open("s1")
            assert isinstance(info.value, SessionLocked)
            assert f"child-{ready[1]}" in str(info.value)
            assert info.value.owner == f"child-{ready[1]}"
            assert info.value.expires is not None and info.value.expires in str(info.value)
            # Live elsewhere: inspect shows the durable events as they are, no closers.
            assert len(await store.inspect("s1")) == int(ready[2])
            with pytest.raises(LiveTurnOpen):
                await store.load("s1")
    finally:
        child.kill()


async def test_close_releases_the_lease(pg_dsn: str) -> None:
    async with PostgresStore(pg_dsn, lease=3600.0, owner="me") as store:
        s = await store.create("s1")
        assert await store.lease_of("s1") == ("me", 1, True)
        await s.aclose()
        assert await store.lease_of("s1") == (None, 1, False)
        s = await store.open("s1")
        assert await store.lease_of("s1") == ("me", 2, True)


async def test_racing_openers_one_winner(pg_dsn: str) -> None:
    """N processes open the same expired session at once: exactly one wins and repairs."""
    holder = Child("hold", f"pg:{pg_dsn}", "s1", "0.5", "8")
    racers: list[Child] = []
    try:
        n = int((await holder.aread())[2])
        holder.kill()
        await wait_lease_lapsed(pg_dsn, "s1")
        racers = [Child("race", f"pg:{pg_dsn}", "s1", "60") for _ in range(6)]
        for r in racers:
            assert (await r.aread())[0] == "ready"
        for r in racers:
            r.send("go")
        verdicts = [await r.aread() for r in racers]
        winners = [v for v in verdicts if v[0] == "won"]
        assert len(winners) == 1, verdicts
        assert all(v[0] == "locked" for v in verdicts if v[0] != "won")
        assert all("leased by child-" in " ".join(v) for v in verdicts if v[0] == "locked")
        written = rows(pg_dsn, "s1")
        assert len(written) == int(winners[0][1]) > n
        assert sum(b'"reason":{"kind":"interrupted"}' in line for line in written) == 1
    finally:
        holder.kill()
        for r in racers:
            r.kill()


async def test_paused_writer_is_fenced(pg_dsn: str) -> None:
    """SIGSTOP a live writer, let its lease lapse, take over, repair and append; SIGCONT it:
    its next flush is fenced and the table holds only the new owner's events after the
    takeover."""
    zombie = Child("hold", f"pg:{pg_dsn}", "s1", "1.0", "8")
    try:
        ready = await zombie.aread()
        assert ready[0] == "ready"
        zombie.send("go 3")  # one more flush while it still holds the lease
        assert (await zombie.aread())[0] == "flushed"
        os.kill(zombie.proc.pid, signal.SIGSTOP)
        await wait_lease_lapsed(pg_dsn, "s1")
        async with PostgresStore(pg_dsn, lease=60.0, owner="new", reap_orphans=None) as store:
            before = len(rows(pg_dsn, "s1"))
            s = await store.open("s1")
            assert s.events[-1].type == "turn/end"  # repaired: turn 1 interrupted
            s.append("turn/start", {"turn": 2})
            s.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
            await s.flush()
            mine = list(s.events)
            os.kill(zombie.proc.pid, signal.SIGCONT)
            zombie.send("go 4")
            verdict = await zombie.aread()
            assert verdict[0] == "fenced", verdict
            assert "taken over by new" in " ".join(verdict)
            written = rows(pg_dsn, "s1")
            assert written == [encode_event(e)[:-1] for e in mine]
            assert len(written) > before
            check_events(mine)
            assert await store.lease_of("s1") == ("new", 2, True)
    finally:
        zombie.kill()


async def test_fenced_in_process(pg_dsn: str) -> None:
    """Two stores in one process: the first loses its lease to the second and is fenced
    at its next flush; nothing it appended after the takeover reaches the table."""
    async with (
        PostgresStore(pg_dsn, lease=0.5, owner="old", reap_orphans=None) as old_store,
        PostgresStore(pg_dsn, lease=60.0, owner="new", reap_orphans=None) as new_store,
    ):
        old = await old_store.create("s1")
        for t, d in TURN:
            old.append(t, d)
        await old.flush()
        # Take the lease over behind the old writer's back (as if it had been paused).
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("UPDATE trio_agent_session SET expires = clock_timestamp()")
        from trio_agent.store import postgres

        postgres._LIVE.clear()  # the second store plays another process
        new = await new_store.open("s1")
        old.append("assistant/chunk", {"turn": 1, "step": 1,
                                       "chunk": {"type": "text-delta", "text": "zombie"}})
        with pytest.raises(SessionFenced) as info:
            await old.flush()
        assert info.value.owner == "new" and info.value.token == 2
        with pytest.raises(SessionFenced):
            await old.flush()
        assert b"zombie" not in b"".join(rows(pg_dsn, "s1"))
        assert rows(pg_dsn, "s1") == [encode_event(e)[:-1] for e in new.events]
        with pytest.raises(SessionFenced):
            await old.aclose()
        assert await new_store.lease_of("s1") == ("new", 2, True)


async def test_database_down_then_back(pg_cluster: Cluster, pg_dsn: str) -> None:
    """The server stops under a live session: flush raises WriteFailed, the events stay
    queued; once it is back a flush writes them, nothing lost or duplicated."""
    async with PostgresStore(pg_dsn, lease=3600.0, reap_orphans=None) as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        await s.flush()
        pg_cluster.stop()
        try:
            close_turn(s)
            with pytest.raises(WriteFailed):
                await s.flush()
        finally:
            pg_cluster.start()
        await s.flush()
        assert rows(pg_dsn, "s1") == [encode_event(e)[:-1] for e in s.events]


async def test_killed_connection_mid_session(pg_dsn: str) -> None:
    """The session's backend is killed (pg_terminate_backend): the next batch fails, is
    retried on a new connection, and lands exactly once."""
    async with PostgresStore(pg_dsn, lease=3600.0, reap_orphans=None) as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        await s.flush()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        close_turn(s)
        try:
            await s.flush()
        except WriteFailed:
            await s.flush()  # the retry, on a new connection
        assert rows(pg_dsn, "s1") == [encode_event(e)[:-1] for e in s.events]
