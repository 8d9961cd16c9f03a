"""The write-behind writer over JSONL files: batches in flight, the flush barrier, file faults
(write/fsync/truncate, short writes) and background retries. The window, the memory bound and
a failing sink, which both backends share, are in test_contract.py.

Time is trio's MockClock (virtual, moved by hand); file operations are real, with faults
injected through the FileOps seam. Nothing asserts on wall-clock durations.
"""

from __future__ import annotations

import errno
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from support.polling import HANG_GUARD, until
from support.store.helpers import EIO, ENOSPC, FaultyOps, assert_valid_balanced, read_log
from support.store.setup import writer_of

from trio_agent.log import encode_event
from trio_agent.store import (
    JsonlStore,
    Session,
    SessionClosed,
    WriteFailed,
)


def turn(session: Session, n: int) -> None:
    """A small complete turn."""
    session.append("turn/start", {"turn": n})
    session.append("step/start", {"turn": n, "step": 1})
    for i in range(3):
        chunk = {"type": "text-delta", "text": f"t{n}.{i}"}
        session.append("assistant/chunk", {"turn": n, "step": 1, "chunk": chunk})
    session.append("step/end", {"turn": n, "step": 1})
    session.append("turn/end", {"turn": n, "reason": {"kind": "completed"}})


def on_disk(path: Path) -> list[Any]:
    _, events, torn, _ = read_log(path)
    assert torn == b""
    return events


class BlockingOps(FaultyOps):
    """Holds ``fsync`` until the test releases it, to act while a batch is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.held = threading.Event()
        self.hold.set()

    def fsync(self, fd: int) -> None:
        if not self.hold.is_set():
            self.held.set()
            self.hold.wait(HANG_GUARD)  # a hang guard: the test releases it
        super().fsync(fd)


# -- the window ---------------------------------------------------------------------------------


async def test_events_during_a_write_form_the_next_batch(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ops = BlockingOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=0.020, reap_orphans=None) as store:
        s = await store.create("s")
        w = writer_of(s)
        ops.hold.clear()
        s.append("turn/start", {"turn": 1})
        mock_clock.jump(0.020)
        assert await trio.to_thread.run_sync(ops.held.wait, HANG_GUARD)  # batch 1 is being synced
        s.append("step/start", {"turn": 1, "step": 1})
        s.append("step/end", {"turn": 1, "step": 1})
        ops.hold.set()
        await until(lambda: w.batches == 1)
        assert w.pending_events == 2
        mock_clock.jump(0.020)
        await until(lambda: w.batches == 2)
        assert [e.seq for e in on_disk(store.path_of("s"))] == [0, 1, 2]


# -- flush --------------------------------------------------------------------------------------


async def test_flush_writes_now_and_includes_events_appended_while_it_waits(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ops = BlockingOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=10.0, reap_orphans=None) as store:
        s = await store.create("s")
        w = writer_of(s)
        ops.hold.clear()
        s.append("turn/start", {"turn": 1})
        done = trio.Event()

        async def flusher() -> None:
            await s.flush()
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(flusher)
            nursery.start_soon(flusher)  # concurrent flushes share the work
            assert await trio.to_thread.run_sync(ops.held.wait, HANG_GUARD)
            s.append("step/start", {"turn": 1, "step": 1})  # arrives during the flush
            ops.hold.set()
        assert done.is_set() and w.pending_events == 0 and w.batches == 2
        assert len(on_disk(store.path_of("s"))) == 2
        await s.flush()  # nothing pending: returns at once
        assert w.batches == 2


async def test_flush_durable_bytes_are_the_session_events(tmp_path: Path) -> None:
    async with JsonlStore(tmp_path, reap_orphans=None) as store:
        s = await store.create("s")
        for n in range(1, 6):
            turn(s, n)
        await s.flush()
        raw = store.path_of("s").read_bytes()
        assert raw.split(b"\n", 1)[1] == b"".join(encode_event(e) for e in s.events)


# -- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["write", "fsync"])
@pytest.mark.parametrize("code", [ENOSPC, EIO])
async def test_write_fault_then_retry(tmp_path: Path, op: str, code: int) -> None:
    ops = FaultyOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=10.0, reap_orphans=None) as store:
        s = await store.create("s")
        w = writer_of(s)
        path = store.path_of("s")
        turn(s, 1)
        await s.flush()
        good = path.stat().st_size
        turn(s, 2)
        ops.fail[op] = [code]
        with pytest.raises(WriteFailed) as info:
            await s.flush()
        assert isinstance(info.value, OSError) and info.value.errno == code
        assert "'s'" in str(info.value) and "queued" in str(info.value)
        assert w.pending_events == 7 and w.durable_length == good
        if op == "fsync":  # the bytes reached the file but are not known durable
            assert path.stat().st_size > good
        turn(s, 3)
        await s.flush()  # cuts back to the durable length, then writes everything once
        assert w.pending_events == 0
        assert on_disk(path) == list(s.events)
        assert [e.seq for e in on_disk(path)] == list(range(21))
    assert_valid_balanced(path)


async def test_short_writes_then_failure_leave_no_partial_line(tmp_path: Path) -> None:
    ops = FaultyOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=10.0, reap_orphans=None) as store:
        s = await store.create("s")
        path = store.path_of("s")
        await s.flush()
        good = path.stat().st_size
        ops.short = 7
        turn(s, 1)
        ops.fail["write"] = [None, None, None, ENOSPC]  # three short writes land, then ENOSPC
        with pytest.raises(WriteFailed):
            await s.flush()
        assert path.stat().st_size == good + 21  # a partial line sits on disk...
        ops.fail["truncate"] = [EIO]  # ...and even cutting it back fails once
        with pytest.raises(WriteFailed):
            await s.flush()
        ops.short = None
        await s.flush()
        assert on_disk(path) == list(s.events)


async def test_background_failure_is_retried_without_a_flush(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ops = FaultyOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=0.020, reap_orphans=None) as store:
        s = await store.create("s")
        w = writer_of(s)
        ops.fail["fsync"] = [EIO, EIO]
        turn(s, 1)
        mock_clock.jump(0.020)
        await until(lambda: ops.calls["fsync"] >= 2)  # header + failed batch
        await trio.testing.wait_all_tasks_blocked()
        assert w.batches == 0 and w.pending_events == 7

        def retried() -> bool:  # let virtual time pass until the retries (20 ms, 40 ms) are done
            if not w.batches:
                mock_clock.jump(0.050)
            return w.batches > 0

        await until(retried)
        assert w.batches == 1 and ops.calls["fsync"] == 4  # header, two failures, success
        assert on_disk(store.path_of("s")) == list(s.events)
        await s.flush()


async def test_background_failure_overlapping_a_flush_is_retried_inside_it(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ops = BlockingOps()
    async with JsonlStore(tmp_path, file_ops=ops, window=0.020, reap_orphans=None) as store:
        s = await store.create("s")
        ops.hold.clear()
        ops.fail["fsync"] = [EIO]
        turn(s, 1)
        mock_clock.jump(0.020)
        # The background batch is in flight.
        assert await trio.to_thread.run_sync(ops.held.wait, HANG_GUARD)

        async def release() -> None:
            await trio.testing.wait_all_tasks_blocked()
            ops.hold.set()  # the background batch now fails with EIO

        async with trio.open_nursery() as nursery:
            nursery.start_soon(release)
            await s.flush()  # began before the failure: retries it and succeeds
        assert on_disk(store.path_of("s")) == list(s.events)


async def test_error_codes_are_preserved() -> None:
    exc = WriteFailed("s", OSError(errno.ENOSPC, "No space left on device"), 3)
    assert exc.errno == errno.ENOSPC and str(exc).startswith("session 's': write failed")
    await trio.lowlevel.checkpoint()


class BuggyOps(FaultyOps):
    """``fsync`` raises something that is not an ``OSError`` once ``broken`` is set: a bug
    below the writer, not a write failure it knows how to retry."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def fsync(self, fd: int) -> None:
        if self.broken:
            raise RuntimeError("a bug below the writer")
        super().fsync(fd)


async def test_a_writer_ended_by_an_unexpected_error_acknowledges_no_flush(
    tmp_path: Path,
) -> None:
    # The writer task dies with the store (the error is not a write failure); a flush that
    # was waiting, even shielded as the turn-end checkpoint is, must not report the lost
    # batch durable.
    ops = BuggyOps()
    flushed: list[object] = []
    with pytest.raises(BaseExceptionGroup) as info:
        async with JsonlStore(tmp_path, file_ops=ops, window=10.0, reap_orphans=None) as store:
            s = await store.create("s")
            path = store.path_of("s")
            await s.flush()
            good = path.read_bytes()
            ops.broken = True
            turn(s, 1)
            with trio.CancelScope(shield=True):
                try:
                    await s.flush()
                    flushed.append("acknowledged")
                except Exception as exc:
                    flushed.append(exc)
    assert info.value.subgroup(RuntimeError) is not None
    assert len(flushed) == 1 and isinstance(flushed[0], SessionClosed), flushed
    assert writer_of(s).pending_events == 7  # the batch is still not durable, still queued
    assert path.read_bytes().startswith(good)  # what was durable stays
