"""Session: synchronous append through the LogChecker, observers, in-memory sessions."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
import trio
from support.store.workload import workload

from trio_agent.log import LogViolation, decode_event, encode_event, repair_closers
from trio_agent.store import ReentrantAppend, Session, SessionClosed


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_data_nested_to_the_limit_is_recorded_and_reads_back() -> None:
    # The line's object, data, then 98 arrays: 100 levels (spec/log.md §Values).
    s = Session.in_memory()
    event = s.append("turn/start", {"turn": 1, "x": _nested(98)})
    assert decode_event(encode_event(event).rstrip(b"\n")) == event


class Clock:
    def __init__(self, now: int = 1000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_append_assigns_seq_and_time_from_the_injected_clock() -> None:
    clock = Clock(5)
    s = Session.in_memory("a", clock=clock)
    e0 = s.append("turn/start", {"turn": 1})
    clock.now = 9
    e1 = s.append("step/start", {"turn": 1, "step": 1})
    assert (e0.seq, e0.time, e1.seq, e1.time) == (0, 5, 1, 9)
    assert list(s.events) == [e0, e1]
    assert s.open_turn == 1 and s.open_step == 1 and s.next_seq == 2
    assert s.id == "a" and not s.durable and not s.closed


def test_time_never_goes_backwards() -> None:
    clock = Clock(100)
    s = Session.in_memory(clock=clock)
    s.append("turn/start", {"turn": 1})
    clock.now = 50
    assert s.append("step/start", {"turn": 1, "step": 1}).time == 100


@pytest.mark.parametrize(
    ("type_", "data", "rule"),
    [
        ("turn/start", {"turn": 2}, "I3"),  # turns are numbered from 1
        ("step/start", {"turn": 1, "step": 1}, "I6"),  # no turn open
        ("turn/start", {"turn": "1"}, "I0"),  # wrong type
        ("nope/nope", {}, "I0"),  # unknown type
        ("turn/start", {"turn": 1, "x": {1, 2}}, "I0"),  # not JSON
        ("turn/start", {"turn": 1, "x": _nested(99)}, "I0"),  # its line would nest 101 deep
        ("turn/start", {"turn": 1, "x": _nested(300)}, "I0"),  # deeper than orjson writes
    ],
)
def test_invalid_append_raises_and_records_nothing(
    type_: str, data: dict[str, Any], rule: str
) -> None:
    s = Session.in_memory()
    seen: list[object] = []
    s.subscribe(seen.append)
    with pytest.raises(LogViolation) as info:
        s.append(type_, data)
    assert info.value.rule == rule and info.value.seq == 0
    assert len(s.events) == 0 and s.next_seq == 0 and seen == []
    assert s.append("turn/start", {"turn": 1}).seq == 0  # and the session carries on


def test_recorded_data_is_a_copy_as_it_reads_back() -> None:
    s = Session.in_memory()
    message = {"id": "m", "text": "t", "source": "u"}
    inserted = [message]
    data = {"target": "next-turn", "start": 0, "inserted": inserted}
    event = s.append("agent/inbox/spliced", data)
    inserted.clear()
    assert event.data["inserted"][0]["id"] == "m"
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    block = {"type": "tool-call", "id": "c", "name": "n", "arguments": {"v": (1, 2)}}
    msg = {"id": "a", "content": [block]}
    s.append("assistant/message", {"turn": 1, "step": 1, "message": msg})
    # A tuple becomes the JSON array it reads back as, so tool/call can repeat it exactly.
    call = {"turn": 1, "step": 1, "callId": "c", "name": "n", "arguments": {"v": [1, 2]}}
    s.append("tool/call", call)


def test_the_encoded_line_is_the_codec_line() -> None:
    s = Session.in_memory()
    lines: list[bytes] = []

    class Sink:
        def admit(self, type_: str, nbytes: int) -> None:
            pass

        def submit(self, line: bytes) -> None:
            lines.append(line)

        async def flush(self) -> None: ...
        async def wait_writable(self) -> None: ...
        async def aclose(self) -> None: ...

    s = Session("x", sink=Sink())
    for type_, data, _ in workload(random.Random(1), 1, "t", 5):
        s.append(type_, data)
    assert lines == [encode_event(e) for e in s.events]
    assert s.durable


def test_observers_run_in_order_and_can_unsubscribe() -> None:
    s = Session.in_memory()
    calls: list[tuple[str, int]] = []
    s.subscribe(lambda e: calls.append(("a", e.seq)))
    unsubscribe = s.subscribe(lambda e: calls.append(("b", e.seq)))
    s.append("turn/start", {"turn": 1})
    unsubscribe()
    unsubscribe()  # idempotent
    s.append("step/start", {"turn": 1, "step": 1})
    assert calls == [("a", 0), ("b", 0), ("a", 1)]


def test_a_failing_observer_does_not_break_the_append(caplog: pytest.LogCaptureFixture) -> None:
    s = Session.in_memory()
    after: list[int] = []

    def bad(event: object) -> None:
        raise RuntimeError("boom")

    s.subscribe(bad)
    s.subscribe(lambda e: after.append(e.seq))
    with caplog.at_level(logging.ERROR, logger="trio_agent.store"):
        event = s.append("turn/start", {"turn": 1})
    assert event.seq == 0 and len(s.events) == 1 and after == [0]
    assert "observer" in caplog.text and "boom" in caplog.text


def test_an_observer_cannot_append(caplog: pytest.LogCaptureFixture) -> None:
    s = Session.in_memory()
    errors: list[BaseException] = []

    def nested(event: object) -> None:
        try:
            s.append("step/start", {"turn": 1, "step": 1})
        except ReentrantAppend as exc:
            errors.append(exc)

    s.subscribe(nested)
    s.append("turn/start", {"turn": 1})
    assert len(errors) == 1 and "observer" in str(errors[0]) and "seq 0" in str(errors[0])
    assert len(s.events) == 1
    s.append("step/start", {"turn": 1, "step": 1})  # outside notification it works again


def test_seeded_session_continues_and_validates_its_seed() -> None:
    source = Session.in_memory()
    for type_, data, _ in workload(random.Random(2), 1, "t", 3):
        source.append(type_, data)
    s = Session.in_memory(events=source.events)
    assert s.next_seq == len(source.events) and s.checker.last_turn == 3
    with pytest.raises(LogViolation):
        Session.in_memory(events=list(source.events)[1:])


def test_reads() -> None:
    s = Session.in_memory()
    message = {"id": "m1", "text": "hi", "source": "user"}
    s.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]})
    assert [m["id"] for m in s.inbox.next_turn] == ["m1"]
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert s.fold_consumed_work().end_seq == 4
    assert s.events[-1].type == "turn/end" and len(s.events[:2]) == 2
    assert not hasattr(s.events, "append")
    assert repair_closers(s.events) == []


async def test_in_memory_flush_and_close() -> None:
    s = Session.in_memory()
    s.append("turn/start", {"turn": 1})
    await s.flush()
    await s.wait_writable()
    await s.aclose()
    await s.aclose()
    assert s.closed
    with pytest.raises(SessionClosed):
        s.append("step/start", {"turn": 1, "step": 1})
    assert len(s.events) == 1  # reads still work
    await trio.lowlevel.checkpoint()
