"""The streamed reading of a log: the checker's fast path, ``scan_lines`` and the streamed folds.

The fast path (``LogChecker.feed_fast``) may only accept what the explanatory path
(``event_from_json`` + ``LogChecker.feed``) accepts, leaving the same state; whatever it
declines must leave the state untouched. The vectors run through it already (``scan_log`` is
``scan_lines``); the properties below hold it to that on generated logs with mutated lines.
"""

from __future__ import annotations

import copy
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_agent.log import (
    Event,
    LogChecker,
    LogError,
    TruncateFold,
    check_events,
    encode_event,
    encode_header,
    event_from_json,
    event_to_json,
    lines_of,
    repair_closers,
    scan_lines,
    scan_log,
    truncate_open_turn,
)
from trio_agent.log.events import Header
from trio_agent.testing.loggen import generate_log

logs = st.builds(generate_log, st.integers(0, 2**32), st.integers(1, 6))
#: The types LogChecker.feed_fast takes (the rest always goes through feed).
FAST_TYPES = ("assistant/chunk", "tool/output", "turn/start", "step/start", "step/end")


def state(checker: LogChecker) -> Any:
    """Everything a checker knows, as comparable values."""
    calls = {
        cid: (c.name, c.arguments, c.dispatched, c.resolved, c.spawned, c.approval, c.approval_id)
        for cid, c in checker._calls.items()
    }
    return (
        checker.next_seq,
        checker.last_time,
        checker.open_turn,
        checker.open_step,
        checker.last_turn,
        checker._last_step,
        checker._phase,
        checker._repairing,
        calls,
        set(checker._call_ids),
        set(checker._approval_ids),
        dict(checker._open_approvals),
        {t: list(q) for t, q in checker.inbox.queues.items()},
    )


def mutations(draw: st.DrawFn, obj: dict[str, Any], events: list[Event]) -> dict[str, Any]:
    """One change to a line's JSON object: envelope, data fields, or a borrowed type."""
    obj = copy.deepcopy(obj)
    data = obj["data"]
    choice = draw(
        st.sampled_from(
            (
                "none",
                "seq",
                "seq-bool",
                "time",
                "turn",
                "step",
                "call",
                "type",
                "drop-key",
                "extra-key",
                "data-field",
                "chunk",
                "moved",
                "moved",
            )
        )
    )
    if choice == "seq":
        obj["seq"] += draw(st.sampled_from((-1, 1, 2)))
    elif choice == "seq-bool":
        obj["seq"] = bool(obj["seq"])
    elif choice == "time":
        obj["time"] = draw(st.sampled_from((-1, 1.5, "1", None)))
    elif choice in ("turn", "step") and choice in data:
        values = (data[choice] + 1, data[choice] - 1, True, 1.0, 0, -1, "1", None)
        data[choice] = draw(st.sampled_from(values))
    elif choice == "call" and "callId" in data:
        other = [e.data["callId"] for e in events if "callId" in e.data]
        data["callId"] = draw(st.sampled_from([*other, "nope", ""]))
    elif choice == "type":
        obj["type"] = draw(st.sampled_from((*FAST_TYPES, "turn/end", "user/message")))
    elif choice == "drop-key":
        del obj[draw(st.sampled_from(sorted(obj)))]
    elif choice == "extra-key":
        obj[draw(st.sampled_from(("extra", "Seq")))] = 1
    elif choice == "data-field" and data:
        data[draw(st.sampled_from(sorted(data)))] = draw(st.sampled_from((None, 0, "", [], {})))
    elif choice == "moved":  # another line of the log, written here: out of order
        seq = obj["seq"]
        fast = [e for e in events if e.type in FAST_TYPES] or events
        obj = copy.deepcopy(event_to_json(draw(st.sampled_from(fast))))
        obj["seq"] = seq
    elif choice == "chunk" and "chunk" in data:
        data["chunk"] = draw(
            st.sampled_from(({"type": "text-delta"}, {"type": "finish", "reason": 1}, {}))
        )
    return obj


@settings(max_examples=600, deadline=None)
@given(logs, st.data())
def test_fast_path_accepts_only_what_feed_accepts(events: list[Event], data: st.DataObject) -> None:
    # Bias towards the two fast types: they are what the fast path is about.
    fast_at = [i for i, e in enumerate(events) if e.type in FAST_TYPES]
    index = data.draw(
        st.sampled_from(fast_at)
        if fast_at and data.draw(st.booleans())
        else st.integers(0, len(events) - 1)
    )
    fast = check_events(events[:index])
    slow = check_events(events[:index])
    before = state(fast)
    obj = mutations(data.draw, event_to_json(events[index]), events)
    # Through orjson, as the reader does: ints stay ints, floats floats.
    obj = orjson.loads(orjson.dumps(obj))
    accepted = fast.feed_fast(obj)
    try:
        slow.feed(event_from_json(obj))
        ok = True
    except (LogError, KeyError):
        ok = False
    if accepted:
        assert ok, f"the fast path accepted what feed refuses: {obj}"
        assert state(fast) == state(slow)
    else:
        assert state(fast) == before


@settings(max_examples=25, deadline=None)
@given(logs, st.data())
def test_fast_path_agrees_on_every_line_at_every_position(
    events: list[Event], data: st.DataObject
) -> None:
    # A crashed prefix plus its repair closers, so placeholders (I17) occur too; then every
    # chunk and output line of the log, written at every position (out of order, after its
    # call's result, after the message, after a placeholder, in another step or turn).
    cut = events[: data.draw(st.integers(0, len(events)))]
    log = cut + repair_closers(cut)
    lines = [event_to_json(e) for e in events if e.type in FAST_TYPES]
    walker = LogChecker()
    for event in log:
        for obj in lines:
            fast, slow = copy.deepcopy(walker), copy.deepcopy(walker)
            moved = orjson.loads(orjson.dumps({**obj, "seq": walker.next_seq}))
            accepted = fast.feed_fast(moved)
            try:
                slow.feed(event_from_json(moved))
                ok = True
            except LogError:
                ok = False
            assert accepted == ok, (moved, ok)  # valid lines of the fast types always go fast
            assert state(fast) == state(slow if ok else walker)
        walker.feed(event)


@settings(max_examples=200, deadline=None)
@given(logs)
def test_fast_path_takes_every_valid_chunk_and_output(events: list[Event]) -> None:
    checker = LogChecker()
    for event in events:
        obj = orjson.loads(encode_event(event))
        if event.type in FAST_TYPES:
            assert checker.feed_fast(obj), event
        else:
            assert not checker.feed_fast(obj)
            checker.feed(event)
    assert state(checker) == state(check_events(events))


VECTOR_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"
VECTOR_LOGS = {
    str(path.relative_to(VECTOR_DIR).with_suffix("")): vector["log"]
    for path in sorted(VECTOR_DIR.rglob("*.json"))
    if "log" in (vector := orjson.loads(path.read_bytes())) and not vector.get("suffix")
}


@pytest.mark.parametrize("cid", sorted(VECTOR_LOGS))
def test_fast_path_agrees_on_every_vector_line(cid: str) -> None:
    """Each line of each vector, both ways, up to the first line the checker refuses."""
    checker = LogChecker()
    for line in VECTOR_LOGS[cid][1:]:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        fast, slow = copy.deepcopy(checker), copy.deepcopy(checker)
        accepted = fast.feed_fast(obj)
        try:
            slow.feed(event_from_json(obj))
            ok = True
        except LogError:
            ok = False
        assert not accepted or ok, line
        assert state(fast) == state(slow if accepted else checker)
        if not ok:
            return
        checker = slow


def _file(events: list[Event], tail: bytes = b"") -> bytes:
    return encode_header(Header("s", 1)) + b"".join(map(encode_event, events)) + tail


@settings(max_examples=100, deadline=None)
@given(logs, st.data())
def test_streamed_truncate_agrees_with_truncate_open_turn(
    events: list[Event], data: st.DataObject
) -> None:
    cut = events[: data.draw(st.integers(0, len(events)))]
    fold = TruncateFold()
    scan = scan_lines(lines_of(_file(cut)), sink=fold.feed)
    assert scan.count == len(cut)
    streamed = fold.report()
    whole = truncate_open_turn(cut)
    assert streamed.to_json() == whole.to_json()
    assert list(streamed.dropped) == list(whole.dropped)
    assert streamed.kept == ()  # a stream keeps only the open turn


def test_lines_of_cuts_like_a_binary_file(tmp_path: Path) -> None:
    events = generate_log(7, 5)
    for tail in (b"", b'{"seq":', b"\n", b"x\ny"):
        data = _file(events, tail)
        path = tmp_path / "log.jsonl"
        path.write_bytes(data)
        with path.open("rb") as f:
            assert list(lines_of(data)) == list(f)
        with path.open("rb") as f:
            from_file = scan_lines(f, strict=False)
        in_memory = scan_log(data, strict=False)
        assert from_file.count == len(in_memory.events)
        assert from_file.tail == in_memory.tail
        assert state(from_file.checker) == state(in_memory.checker)


def _one_long_step(chunks: int) -> Iterator[bytes]:
    """A log whose single step streams ``chunks`` chunks and ``chunks`` output lines, made
    line by line (never held)."""
    yield encode_header(Header("s", 1))
    seq = 0

    def line(type_: str, data: dict[str, Any]) -> bytes:
        nonlocal seq
        seq += 1
        return encode_event(Event(seq - 1, seq, type_, data))

    ts = {"turn": 1, "step": 1}
    msg = {"id": "m", "text": "go", "source": "user"}
    yield line("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
    yield line("turn/start", {"turn": 1})
    yield line(
        "agent/inbox/spliced",
        {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
    )
    yield line("step/start", ts)
    for _ in range(chunks):
        yield line("assistant/chunk", {**ts, "chunk": {"type": "text-delta", "text": "x" * 40}})
    call = {"type": "tool-call", "id": "c", "name": "bash", "arguments": {}}
    yield line("assistant/message", {**ts, "message": {"id": "a", "content": [call]}})
    yield line("tool/call", {**ts, "callId": "c", "name": "bash", "arguments": {}})
    for _ in range(chunks):
        yield line("tool/output", {**ts, "callId": "c", "stream": "stdout", "text": "y" * 40})


def _peak(chunks: int) -> int:
    tracemalloc.start()
    try:
        scan = scan_lines(_one_long_step(chunks))
        assert scan.count == 2 * chunks + 6
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_chunks_and_output() -> None:
    small, large = _peak(200), _peak(20_000)
    # 100x the events, the same peak give or take allocator noise: nothing is kept per line.
    assert large - small < 64 * 1024, (small, large)
