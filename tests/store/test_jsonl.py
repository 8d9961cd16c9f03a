"""JsonlStore's own rules: the file layout, flock liveness, torn tails, stray directory
entries. The contract both backends share is in test_contract.py."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from support.store.helpers import read_log, sha256
from support.store.setup import Clock, open_turn, play

from trio_agent.store import (
    JsonlStore,
    SessionLocked,
    escape_id,
    repair_file,
)


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


async def test_inspect_cold_past_a_torn_tail_shows_closers_and_changes_nothing(
    tmp_path: Path,
) -> None:
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


async def test_list_escapes_ids_and_skips_stray_entries(tmp_path: Path) -> None:
    ids = ["b", "a", "../x", "Upper", "x" * 500, "with space", "é"]
    async with JsonlStore(tmp_path / "root") as store:
        assert await store.session_ids() == []
        for i in ids:
            await (await store.create(i)).aclose()
        (tmp_path / "root" / "junk").mkdir()
        (tmp_path / "root" / "stray.txt").write_text("x")
        assert await store.session_ids() == sorted(ids)
    assert {p.name for p in (tmp_path / "root").iterdir()} >= {escape_id(i) for i in ids}
    assert not (tmp_path / "x").exists()


async def test_a_pid_file_another_program_filled_neither_fails_the_close_nor_is_removed(
    tmp_path: Path,
) -> None:
    """The close removes the pid file only when it names this process; one that another
    program filled with 5,000 digits (once a ValueError in the close) is left as it is."""
    async with JsonlStore(tmp_path / "root") as store:
        s = await store.create("s1")
        pid_file = tmp_path / "root" / "s1" / "session.pid"
        pid_file.write_bytes(b"9" * 5000)
        s.append("turn/start", {"turn": 1})
        await s.aclose()
    assert pid_file.read_bytes() == b"9" * 5000
