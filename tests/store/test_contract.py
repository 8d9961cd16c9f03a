"""The store contract, run unchanged over both backends (``any_store``: JSONL and PostgreSQL).

create/open/inspect/load/list, the errors, write-behind batching and the flush barrier, a
sink that fails then recovers, repair on open and its idempotence, a writer killed mid-turn
then reopened. Real parts only: real files, a throwaway PostgreSQL cluster, real child
processes and SIGKILL. What only one backend has (torn tails and flock for JSONL, leases and
fencing for PostgreSQL) is tested in test_jsonl.py and test_postgres.py.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable

import pytest
import trio
import trio.testing
from support.polling import until
from support.store.kit import StoreKit
from support.store.pg import TURN, Child, close_turn
from support.store.setup import Clock, open_turn, play, writer_of

from trio_agent.log import Event, check_events, encode_event
from trio_agent.store import (
    LiveTurnOpen,
    PendingLimitExceeded,
    SessionClosed,
    SessionCorrupt,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StoreError,
    WriteFailed,
)


def lines(events: list[Event]) -> list[bytes]:
    return [encode_event(e)[:-1] for e in events]


# -- create / open / inspect / load / session_ids ---------------------------------------------


async def test_create_append_reopen(any_store: StoreKit) -> None:
    async with any_store.make(clock=Clock()) as store:
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        close_turn(s)
        await s.flush()
        first = list(s.events)
        assert [e.time for e in first] == list(range(1002, 1007))
        await s.aclose()
    async with any_store.make() as store:
        s = await store.open("s1")
        assert list(s.events) == first
        s.append("turn/start", {"turn": 2})
        s.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
        await s.aclose()
        assert await store.load("s1") == list(s.events)
        assert len(await store.load("s1")) == 7
    assert any_store.durable("s1") == lines(list(s.events))


async def test_errors(any_store: StoreKit) -> None:
    async with any_store.make() as store:
        with pytest.raises(SessionNotFound, match="'nope' not found"):
            await store.open("nope")
        with pytest.raises(SessionNotFound):
            await store.inspect("nope")
        with pytest.raises(SessionNotFound):
            await store.load("nope")
        with pytest.raises(ValueError, match="empty"):
            await store.create("")
        s = await store.create("s1")
        with pytest.raises(SessionExists, match="'s1' already exists"):
            await store.create("s1")  # live here
        for t, d in TURN:
            s.append(t, d)
        with pytest.raises(LiveTurnOpen):
            await store.load("s1")
        assert len(await store.inspect("s1")) == 3  # live: as is, no closers
        await s.aclose()
        with pytest.raises(SessionExists):
            await store.create("s1")  # stored


#: Ids no store takes, and the rule each breaks (spec/persistence.md §1): both backends refuse
#: them alike, with ValueError naming the rule, before anything is created or read.
HOSTILE_IDS = [
    ("", "non-empty"),
    ("a\0b", "NUL"),
    ("bad\udc80id", "lone surrogate"),
    ("x" * 4097, "at most 4096 bytes"),
    ("é" * 2049, "at most 4096 bytes"),  # 4098 bytes in 2049 characters
]


@pytest.mark.parametrize(
    ("sid", "rule"), HOSTILE_IDS, ids=["empty", "nul", "surrogate", "long", "long-utf8"]
)
async def test_a_hostile_id_is_refused_alike_by_every_operation(
    any_store: StoreKit, sid: str, rule: str
) -> None:
    async with any_store.make() as store:
        for operation in (store.create, store.open, store.inspect, store.load):
            with pytest.raises(ValueError, match=rule):
                await operation(sid)
        with pytest.raises(ValueError, match=rule):
            store.live(sid)
        assert await store.session_ids() == []  # nothing was created


async def test_an_id_at_the_limit_and_ids_that_look_like_paths_are_kept(
    any_store: StoreKit,
) -> None:
    ids = ["x" * 4096, "/", "..", ".", "a/../../b", "%2F", "tab\there"]
    async with any_store.make() as store:
        for sid in ids:
            await (await store.create(sid)).aclose()
        assert await store.session_ids() == sorted(ids)
        for sid in ids:
            assert (await store.load(sid)) == []


async def test_errors_come_out_unwrapped(any_store: StoreKit) -> None:
    with pytest.raises(SessionNotFound):
        async with any_store.make() as store:
            await store.open("nope")
    with pytest.raises(SessionNotFound):
        async with any_store.make() as store:
            await store.inspect("nope")


async def test_open_of_a_session_live_here_is_refused(any_store: StoreKit) -> None:
    async with any_store.make() as store, any_store.make() as other:
        s = await store.create("s")
        play(s, 1)
        await s.flush()
        before = any_store.durable("s")
        for st in (store, other):  # any store of this process
            with pytest.raises(SessionLocked, match=r"'s' is live .*this process") as info:
                await st.open("s")
            assert info.value.here and info.value.pid == os.getpid()
        assert any_store.durable("s") == before
        await s.aclose()
        again = await other.open("s")  # cold now
        assert list(again.events) == list(s.events)


async def test_store_must_be_entered(any_store: StoreKit) -> None:
    store = any_store.make()
    with pytest.raises(StoreError, match="async with"):
        await store.create("s")
    async with store:
        pass
    with pytest.raises(StoreError):
        await store.open("s")
    with pytest.raises(StoreError, match="only once"):
        async with store:
            pass


async def test_session_ids(any_store: StoreKit) -> None:
    ids = ["b", "a", "../x", "Upper", "x" * 500, "with space", "é", "Z/é"]
    async with any_store.make() as store:
        assert await store.session_ids() == []
        for i in ids:
            await (await store.create(i)).aclose()
        live = await store.create("live")
        assert await store.session_ids() == sorted([*ids, "live"])
        await live.aclose()


async def test_open_repairs_then_continues(any_store: StoreKit) -> None:
    async with any_store.make() as store:
        s = await store.create("s")
        play(s, 2)
        open_turn(s)
        await s.flush()
        kept = list(s.events)
    # The store closed the session with a turn open, as a crash would have left it.
    async with any_store.make() as store:
        s = await store.open("s")
        assert list(s.events[: len(kept)]) == kept
        assert [e.type for e in s.events[len(kept) :]] == ["step/end", "turn/end"]
        play(s, 1, seed=1)
        await s.flush()
        events = list(s.events)
    assert any_store.durable("s") == lines(events)
    assert check_events(events).open_turn is None


async def test_inspect_cold_shows_closers_and_changes_nothing(any_store: StoreKit) -> None:
    async with any_store.make() as store:
        s = await store.create("s")
        play(s, 1)
        open_turn(s)
    before = any_store.durable("s")
    async with any_store.make() as store:
        inspected = await store.inspect("s")
        loaded = await store.load("s")
        assert any_store.durable("s") == before
        assert inspected == loaded and inspected[-1].data["reason"] == {"kind": "interrupted"}
        s = await store.open("s")
        assert list(s.events) == inspected
        await s.aclose()
        again = await store.open("s")  # repair is idempotent: the second open adds nothing
        assert list(again.events) == inspected
    assert any_store.durable("s") == lines(inspected)


async def test_inspect_and_load_of_a_live_session(any_store: StoreKit) -> None:
    async with any_store.make(window=3600) as store:
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
        assert any_store.durable("s") == lines(snapshot)
        assert s.open_turn is None and not s.closed


async def test_damage_before_the_last_turn_end_is_corruption_and_changes_nothing(
    any_store: StoreKit,
) -> None:
    async with any_store.make() as store:
        s = await store.create("s")
        play(s, 2)
    any_store.overwrite("s", 1, b'{"seq":1,"garbage"')
    before = any_store.durable("s")
    async with any_store.make() as store:
        for attempt in (store.open, store.inspect, store.load):
            with pytest.raises(SessionCorrupt) as info:
                await attempt("s")
            assert "\n" not in str(info.value) and "not modified" in str(info.value)
    assert any_store.durable("s") == before


# -- write-behind batching and the flush barrier ----------------------------------------------


async def test_batch_is_all_or_nothing_and_in_order(any_store: StoreKit) -> None:
    async with any_store.make(window=3600.0) as store:  # nothing written before the flush
        s = await store.create("s1")
        for t, d in TURN:
            s.append(t, d)
        for i in range(200):
            chunk = {"type": "text-delta", "text": str(i)}
            s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
        assert any_store.durable("s1") == []
        close_turn(s)
        await s.flush()
        events = list(s.events)
        assert any_store.durable("s1") == lines(events)
    async with any_store.make() as store:
        assert await store.load("s1") == events


async def test_exit_drains_unflushed_events(any_store: StoreKit) -> None:
    async with any_store.make(window=3600) as store:
        s = await store.create("s")
        play(s, 3)
        events = list(s.events)
    assert s.closed
    with pytest.raises(SessionClosed):
        s.append("turn/start", {"turn": 4})
    assert any_store.durable("s") == lines(events)


async def test_closed_session_cannot_flush_or_append(any_store: StoreKit) -> None:
    async with any_store.make() as store:
        s = await store.create("s")
        await s.aclose()
        await s.aclose()
        with pytest.raises(SessionClosed):
            await s.flush()
        with pytest.raises(SessionClosed):
            s.append("turn/start", {"turn": 1})
        assert store.live("s") is None


async def test_cancelled_caller_does_not_lose_durability(any_store: StoreKit) -> None:
    async with any_store.make(window=3600) as store:
        s = await store.create("s")
        with trio.CancelScope() as scope:
            play(s, 1)
            scope.cancel()
            await s.flush()  # cancelled before it could wait
        # The writer lives outside the cancelled scope and still drains on the next flush.
        await s.flush()
        assert any_store.durable("s") == lines(list(s.events))


async def test_append_from_another_thread_is_refused_and_records_nothing(
    any_store: StoreKit,
) -> None:
    async with any_store.make() as store:
        s = await store.create("s")

        def from_thread() -> None:
            with pytest.raises(RuntimeError):
                s.append("turn/start", {"turn": 1})

        await trio.to_thread.run_sync(from_thread)
        assert len(s.events) == 0
        s.append("turn/start", {"turn": 1})
        await s.flush()


async def test_fixed_window_from_the_first_event(
    any_store: StoreKit, mock_clock: trio.testing.MockClock
) -> None:
    async with any_store.make(window=0.020) as store:
        s = await store.create("s")
        w = writer_of(s)
        s.append("turn/start", {"turn": 1})
        mock_clock.jump(0.010)
        s.append("step/start", {"turn": 1, "step": 1})  # joins; does not extend the window
        mock_clock.jump(0.009)
        await trio.testing.wait_all_tasks_blocked()
        assert w.batches == 0 and any_store.durable("s") == []
        mock_clock.jump(0.001)  # 20 ms after the first event
        await until(lambda: w.batches == 1)
        assert w.pending_events == 0
        assert any_store.durable("s") == lines(list(s.events))
        # Quiet again: new work gets a window of its own.
        mock_clock.jump(1)
        s.append("step/end", {"turn": 1, "step": 1})
        await trio.testing.wait_all_tasks_blocked()
        assert w.batches == 1 and len(any_store.durable("s")) == 2
        mock_clock.jump(0.020)
        await until(lambda: w.batches == 2)
        assert any_store.durable("s") == lines(list(s.events))


async def test_soft_limit_writes_without_waiting_for_the_window(
    any_store: StoreKit, mock_clock: trio.testing.MockClock
) -> None:
    async with any_store.make(window=60.0, soft_limit=300, hard_limit=100_000) as store:
        s = await store.create("s")
        w = writer_of(s)
        play(s, 1)  # past the soft limit
        await until(lambda: w.batches >= 1)
        await s.wait_writable()
        assert w.pending_bytes < 300


async def test_hard_limit_refuses_streaming_but_admits_closing_events(
    any_store: StoreKit, mock_clock: trio.testing.MockClock
) -> None:
    async with any_store.make(window=60.0, soft_limit=200, hard_limit=1000) as store:
        s = await store.create("s")
        w = writer_of(s)
        with any_store.failing():  # the sink is gone
            s.append("turn/start", {"turn": 1})
            s.append("step/start", {"turn": 1, "step": 1})
            chunk = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "x" * 40}}
            for _ in range(3):
                s.append("assistant/chunk", chunk)
            assert w.pending_bytes > 200
            with pytest.raises(WriteFailed):  # past the soft limit: wait_writable tries, fails
                await s.wait_writable()
            with pytest.raises(PendingLimitExceeded, match="refused") as info:
                for _ in range(100):
                    s.append("assistant/chunk", chunk)
            assert info.value.limit == 1000
            refused_at = len(s.events)
            assert w.pending_bytes <= 1000 and refused_at < 100
            # Nothing was recorded for the refused event, and the turn can still be closed.
            msg = {"id": "a", "content": []}
            s.append(
                "assistant/message", {"turn": 1, "step": 1, "message": msg, "interrupted": True}
            )
            s.append("step/end", {"turn": 1, "step": 1})
            error = {"code": "STORE", "message": "sink gone"}
            s.append("turn/end", {"turn": 1, "reason": {"kind": "error", "error": error}})
            with pytest.raises(PendingLimitExceeded):
                s.append("turn/start", {"turn": 2})
        await s.flush()  # the sink is back
        assert any_store.durable("s") == lines(list(s.events))


def test_writer_parameters_are_checked(any_store: StoreKit) -> None:
    with pytest.raises(ValueError, match="window"):
        any_store.make(window=-1)
    with pytest.raises(ValueError, match="soft_limit"):
        any_store.make(soft_limit=10, hard_limit=5)


# -- a failing sink ---------------------------------------------------------------------------


async def test_flush_fails_keeps_the_batch_queued_then_retries_once(any_store: StoreKit) -> None:
    async with any_store.make(window=3600.0) as store:
        s = await store.create("s")
        play(s, 1)
        await s.flush()
        good = any_store.durable("s")
        play(s, 1, seed=1)
        with any_store.failing():
            with pytest.raises(WriteFailed) as info:
                await s.flush()
            assert "'s'" in str(info.value) and "queued" in str(info.value)
            assert "\n" not in str(info.value)
            with pytest.raises(WriteFailed):
                await s.flush()  # still failing: still queued, nothing lost
            assert any_store.durable("s") == good
        play(s, 1, seed=2)
        await s.flush()  # writes everything once
        assert any_store.durable("s") == lines(list(s.events))
    async with any_store.make() as store:
        assert await store.load("s") == list(s.events)


async def test_close_with_a_failing_sink_raises_releases_and_leaves_a_valid_prefix(
    any_store: StoreKit,
) -> None:
    async with any_store.make(window=3600.0) as store:
        s = await store.create("s")
        play(s, 1)
        await s.flush()
        kept = list(s.events)
        s.append("turn/start", {"turn": 2})
        with any_store.failing(), pytest.raises(WriteFailed):
            await s.aclose()
        assert s.closed
        with pytest.raises(SessionClosed):
            await s.flush()
        again = await store.open("s")  # released: a cold open of the durable prefix
        assert list(again.events) == kept


# -- a writer killed mid-turn ------------------------------------------------------------------


async def test_crashed_writer_is_repaired_once(any_store: StoreKit) -> None:
    """kill -9 of a live writer mid-turn: inspect adds closers in memory only; open writes
    them once; a second open changes nothing (repair idempotence)."""
    child = Child("hold", any_store.spec, "s1", "0.5", "8")
    try:
        ready = await child.aread()
        assert ready[0] == "ready"
        n = int(ready[2])
        child.kill()
        await any_store.wait_cold("s1")
        before = any_store.durable("s1")
        assert len(before) == n
        async with any_store.make() as store:
            seen = await store.inspect("s1")
            assert len(seen) > n and seen[-1].type == "turn/end"
            assert seen[-1].data["reason"]["kind"] == "interrupted"
            check_events(seen)
            assert any_store.durable("s1") == before  # inspect wrote nothing
            s = await store.open("s1")
            assert list(s.events) == seen
            await s.aclose()
            again = await store.open("s1")
            assert list(again.events) == seen
            await again.aclose()
        assert any_store.durable("s1") == lines(seen)
    finally:
        child.kill()


# -- cold-open checkpoints (spec/persistence.md §5.1, §10.1) ----------------------------------


async def _long_session(kit: StoreKit, sid: str, turns: int) -> list[Event]:
    """A closed session of ``turns`` whole turns, recorded with small checkpoints, and then
    a turn cut short (the open repairs it)."""
    async with kit.make(checkpoint_every=1500, clock=Clock()) as store:
        s = await store.create(sid)
        for turn in range(1, turns + 1):
            s.append("turn/start", {"turn": turn})
            s.append("step/start", {"turn": turn, "step": 1})
            for i in range(4):
                chunk = {"type": "text-delta", "text": f"turn {turn} chunk {i} " * 3}
                s.append("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk})
            s.append("step/end", {"turn": turn, "step": 1})
            s.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        s.append("turn/start", {"turn": turns + 1})
        await s.flush()
        events = list(s.events)
        await s.aclose()
    return events


async def _reopen(
    kit: StoreKit, sid: str, caplog: pytest.LogCaptureFixture, every: int | None = 1500
) -> tuple[list[Event], str]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trio_agent.store"):
        async with kit.make(checkpoint_every=every) as store:
            s = await store.open(sid)
            events = list(s.events)
            await s.aclose()
    return events, caplog.text


async def test_a_long_session_reopens_from_its_checkpoint_as_from_every_event(
    any_store: StoreKit, caplog: pytest.LogCaptureFixture
) -> None:
    await _long_session(any_store, "a", 30)
    await _long_session(any_store, "b", 30)
    resumed, said = await _reopen(any_store, "a", caplog)
    assert "resumed from the checkpoint" in said
    scanned, said = await _reopen(any_store, "b", caplog, every=None)
    assert "checkpoint" not in said
    assert lines(resumed) == lines(scanned)  # the same events, closers included
    assert any_store.durable("a") == any_store.durable("b")
    again, said = await _reopen(any_store, "a", caplog)
    assert "resumed from the checkpoint" in said and again == resumed


async def test_a_checkpoint_whose_last_line_was_rewritten_means_reading_every_event(
    any_store: StoreKit, caplog: pytest.LogCaptureFixture
) -> None:
    await _long_session(any_store, "a", 30)
    turn_ends = [i for i, line in enumerate(any_store.durable("a")) if b'"turn/end"' in line]
    for index in turn_ends:  # the same events, other bytes: every checkpoint's line changes
        line = any_store.durable("a")[index]
        any_store.overwrite("a", index, line.replace(b'{"seq":', b'{ "seq":', 1))
    events, said = await _reopen(any_store, "a", caplog)
    assert "resumed" not in said and "checkpoint not used (mismatched:" in said
    assert events[-1].data["reason"]["kind"] == "interrupted"
    assert check_events(events).balanced


def _odd_value(value: bytes) -> Callable[[bytes], bytes]:
    """A checkpoint with ``value`` (raw JSON text) as its session id, the digest over the
    bytes as written: whole to a reader that hashed what it was given."""

    def change(body: bytes) -> bytes:
        head, _, rest = body.partition(b'"digest":"')
        rest = rest[rest.index(b'"') + 2 :]  # the digest's value and the comma after it
        odd = re.sub(rb'"session":"[^"]*"', lambda _: b'"session":' + value, head + rest)
        digest = hashlib.sha256(odd.rstrip(b"\n")).hexdigest().encode()
        return odd.replace(b'"fileId"', b'"digest":"' + digest + b'","fileId"', 1)

    return change


@pytest.mark.parametrize(
    "value",
    [b"NaN", b'"\\ud800"', b"[" * 100_000 + b"]" * 100_000],
    ids=["nan", "lone-surrogate", "nested-100000-levels"],
)
async def test_a_checkpoint_no_log_line_could_be_means_reading_every_event(
    any_store: StoreKit, caplog: pytest.LogCaptureFixture, value: bytes
) -> None:
    """A checkpoint is read as a log line is (spec/persistence.md §5.1): what Python's json
    would take (NaN, a lone surrogate) or run out of stack on (deep nesting) is torn, and
    the open reads every event instead of failing."""
    await _long_session(any_store, "a", 30)
    await _long_session(any_store, "b", 30)
    any_store.replace_checkpoint("a", _odd_value(value))
    events, said = await _reopen(any_store, "a", caplog)
    assert "resumed" not in said and "checkpoint not used (torn:" in said
    scanned, _ = await _reopen(any_store, "b", caplog, every=None)
    assert lines(events) == lines(scanned)
