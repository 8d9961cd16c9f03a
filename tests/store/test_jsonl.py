"""JsonlStore: layout, create/open/inspect/load/list, liveness in one process, errors."""

from __future__ import annotations

import fcntl
import os
import random
from pathlib import Path

import pytest
import trio
from store_helpers import assert_valid_balanced, read_log, sha256
from store_workload import workload

from trio_agent.log import Event
from trio_agent.store import (
    JsonlStore,
    LiveTurnOpen,
    Session,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StoreError,
    escape_id,
    repair_file,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def play(session: Session, turns: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for type_, data, _ in workload(rng, session.checker.last_turn + 1, f"x{seed}", turns):
        session.append(type_, data)


def open_turn(session: Session) -> None:
    n = session.checker.last_turn + 1
    session.append("turn/start", {"turn": n})
    session.append("step/start", {"turn": n, "step": 1})


async def test_create_layout_header_and_pid_sidecar(tmp_path: Path) -> None:
    clock = Clock()
    async with JsonlStore(tmp_path / "root", clock=clock) as store:
        s = await store.create("s1")
        path = tmp_path / "root" / "s1" / "session.jsonl"
        assert store.path_of("s1") == path
        header = path.read_bytes()
        assert header == b'{"type":"session","version":1,"id":"s1","createdAt":1001}\n'
        assert (path.parent / "session.pid").read_text().strip() == str(os.getpid())
        assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
        event = s.append("turn/start", {"turn": 1})
        assert event.time == 1002
        await s.aclose()
        assert not (path.parent / "session.pid").exists()
    assert read_log(path)[1] == [event]


async def test_create_refuses_an_existing_id(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")
        with pytest.raises(SessionExists, match="'s' already exists"):
            await store.create("s")  # live here
        await s.aclose()
        with pytest.raises(SessionExists):
            await store.create("s")  # on disk
        with pytest.raises(ValueError, match="non-empty"):
            await store.create("")


async def test_open_missing_and_errors_come_out_unwrapped(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFound, match="'nope' not found"):
        async with JsonlStore(tmp_path) as store:
            await store.open("nope")
    with pytest.raises(SessionNotFound):
        async with JsonlStore(tmp_path) as store:
            await store.inspect("nope")


async def test_store_must_be_entered(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    with pytest.raises(StoreError, match="async with"):
        await store.create("s")
    async with store:
        pass
    with pytest.raises(StoreError):
        await store.open("s")
    with pytest.raises(StoreError, match="only once"):
        async with store:
            pass


async def test_open_of_a_session_live_here_is_refused_before_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with JsonlStore(tmp_path) as store, JsonlStore(tmp_path) as other:
        s = await store.create("s")
        before = sha256(store.path_of("s"))

        def no_lock(*args: object) -> None:
            raise AssertionError("the registry must answer before the lock is touched")

        with monkeypatch.context() as m:
            m.setattr(fcntl, "flock", no_lock)
            for st in (store, other):  # any store of this process
                with pytest.raises(SessionLocked, match=r"'s' is live .*this process") as info:
                    await st.open("s")
                assert info.value.here and info.value.pid == os.getpid()
            with pytest.raises(SessionLocked):
                await repair_file(store.path_of("s"))
        assert sha256(store.path_of("s")) == before
        await s.aclose()
        again = await other.open("s")  # cold now
        assert again.next_seq == 0


async def test_a_lock_held_by_another_descriptor_is_refused_at_once(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")
        await s.aclose()
        fd = os.open(store.path_of("s"), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            (store.path_of("s").parent / "session.pid").write_text("12345\n")
            with pytest.raises(SessionLocked, match="locked by process 12345"):
                await store.open("s")
        finally:
            os.close(fd)
        await (await store.open("s")).aclose()


async def test_open_repairs_then_continues(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")
        play(s, 2)
        open_turn(s)
        await s.flush()
        kept = list(s.events)
    # The store closed the session with a turn open, as a crash would have left it.
    async with JsonlStore(tmp_path) as store:
        s = await store.open("s")
        assert list(s.events[: len(kept)]) == kept
        assert [e.type for e in s.events[len(kept) :]] == ["step/end", "turn/end"]
        play(s, 1, seed=1)
        await s.flush()
        events = list(s.events)
    assert assert_valid_balanced(tmp_path / "s" / "session.jsonl") == events


async def test_exit_drains_unflushed_events(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path, window=3600) as store:
        s = await store.create("s")
        play(s, 3)
        events = list(s.events)
    assert s.closed
    with pytest.raises(SessionClosed):
        s.append("turn/start", {"turn": 4})
    assert read_log(store.path_of("s"))[1] == events


async def test_inspect_cold_shows_closers_and_changes_nothing(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")
        play(s, 1)
        open_turn(s)
    path = tmp_path / "s" / "session.jsonl"
    with path.open("ab") as f:
        f.write(b'{"seq":12')  # a torn tail too
    before = sha256(path)
    async with JsonlStore(tmp_path) as store:
        inspected = await store.inspect("s")
        loaded = await store.load("s")
        assert sha256(path) == before
        assert inspected == loaded and inspected[-1].data["reason"] == {"kind": "interrupted"}
        s = await store.open("s")
        assert list(s.events) == inspected


async def test_inspect_and_load_of_a_live_session(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path, window=3600) as store:
        s = await store.create("s")
        play(s, 1)
        open_turn(s)
        events = await store.inspect("s")  # as is: the open turn, no synthetic boundaries
        assert events == list(s.events) and events[-1].type == "step/start"
        with pytest.raises(LiveTurnOpen, match="turn 2 is open"):
            await store.load("s")
        s.append("step/end", {"turn": 2, "step": 1})
        s.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
        snapshot = await store.load("s")  # waits for a flush
        assert snapshot == list(s.events)
        assert read_log(store.path_of("s"))[1] == snapshot
        assert s.open_turn is None and not s.closed


async def test_list(tmp_path: Path) -> None:
    ids = ["b", "a", "../x", "Upper", "x" * 500, "with space", "é"]
    async with JsonlStore(tmp_path / "root") as store:
        assert await store.list() == []
        for i in ids:
            await (await store.create(i)).aclose()
        (tmp_path / "root" / "junk").mkdir()
        (tmp_path / "root" / "stray.txt").write_text("x")
        assert await store.list() == sorted(ids)
    assert {p.name for p in (tmp_path / "root").iterdir()} >= {escape_id(i) for i in ids}
    assert not (tmp_path / "x").exists()


async def test_closed_session_cannot_flush_or_append(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")
        await s.aclose()
        await s.aclose()
        with pytest.raises(SessionClosed):
            await s.flush()
        with pytest.raises(SessionClosed):
            s.append("turn/start", {"turn": 1})
        assert store.live("s") is None


async def test_cancelled_caller_does_not_lose_durability(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path, window=3600) as store:
        s = await store.create("s")
        with trio.CancelScope() as scope:
            play(s, 1)
            scope.cancel()
            await s.flush()  # cancelled before it could wait
        # The writer lives outside the cancelled scope and still drains on the next flush.
        await s.flush()
        assert read_log(store.path_of("s"))[1] == list(s.events)


def test_events_are_typed() -> None:
    assert Event(0, 0, "turn/start", {"turn": 1}).type == "turn/start"


async def test_append_from_another_thread_is_refused_and_records_nothing(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path) as store:
        s = await store.create("s")

        def from_thread() -> None:
            with pytest.raises(RuntimeError):
                s.append("turn/start", {"turn": 1})

        await trio.to_thread.run_sync(from_thread)
        assert len(s.events) == 0
        s.append("turn/start", {"turn": 1})
        await s.flush()
