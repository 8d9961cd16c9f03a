"""DerivedDurability: what the journal proves durable, and when (K13, K17, persistence.md §2),
on hand-written journals: each rule accepts the order the spec gives and refuses the order a
skipped or failed flush, or a batching window that did not expire, gives."""

from __future__ import annotations

from typing import Any

import pytest

from trio_agent.testing.checks import HarnessViolation
from trio_agent.testing.durability import DerivedDurability

Entry = dict[str, Any]


def event(seq: int, type_: str, **data: Any) -> Entry:
    return {"k": "event", "event": {"seq": seq, "time": 0, "type": type_, "data": data}}


def write(events: int, ok: bool = True) -> Entry:
    return {"k": "write", "events": events, "ok": ok}


def rt(type_: str, **fields: Any) -> Entry:
    return {"k": "rt", "type": type_, **fields}


CALL = "call-1-1-1"
#: A turn up to its tool/call (seqs 0-3).
UP_TO_CALL = [
    event(0, "turn/start", turn=1),
    event(1, "step/start", turn=1, step=1),
    event(2, "assistant/message", turn=1, step=1, message={}),
    event(3, "tool/call", turn=1, step=1, callId=CALL, name="job", arguments={}),
]
OUTPUT = event(4, "tool/output", turn=1, step=1, callId=CALL, stream="stdout", text="x\n")


def fed(entries: list[Entry], durable: int = 0) -> DerivedDurability:
    derived = DerivedDurability(durable)
    for entry in entries:
        derived.feed(entry)
    return derived


def test_a_body_after_its_dispatch_flush_passes() -> None:
    assert fed([*UP_TO_CALL, write(4), OUTPUT]).written == 4


@pytest.mark.parametrize(
    "between",
    [
        pytest.param([], id="no flush"),
        pytest.param([write(4, ok=False)], id="the flush failed"),
        pytest.param([write(3)], id="the batch stopped short of the call"),
    ],
)
def test_a_body_before_its_tool_call_is_written_is_k17(between: list[Entry]) -> None:
    with pytest.raises(HarnessViolation, match=r"K17: the body of call-1-1-1 ran .*seq 3"):
        fed([*UP_TO_CALL, *between, OUTPUT])


def test_a_result_only_a_body_gives_counts_as_the_body_running() -> None:
    result = event(4, "tool/result", turn=1, step=1, callId=CALL, isError=False)
    result["event"]["data"]["content"] = f"job {CALL} done"
    with pytest.raises(HarnessViolation, match="K17"):
        fed([*UP_TO_CALL, result])
    # A placeholder or an ABORTED text proves nothing about the flush.
    result["event"]["data"]["content"] = "The job call was cancelled before it started."
    assert fed([*UP_TO_CALL, result]).written == 0


TURN_END = event(4, "turn/end", turn=1, reason={"kind": "completed"})


@pytest.mark.parametrize(
    "went_on",
    [
        pytest.param(rt("status", status="idle"), id="idle"),
        pytest.param(rt("prevented", cause="user", parked=1), id="prevented"),
        pytest.param(event(5, "turn/start", turn=2), id="next turn"),
    ],
)
def test_going_on_after_turn_end_needs_it_written(went_on: Entry) -> None:
    before = [*UP_TO_CALL, write(4), TURN_END]
    assert fed([*before, write(1), went_on]).written == 5
    with pytest.raises(HarnessViolation, match=r"K13: .* turn 1's turn/end \(seq 4\)"):
        fed([*before, went_on])
    with pytest.raises(HarnessViolation, match="K13"):
        fed([*before, write(1, ok=False), went_on])


def test_an_agent_error_releases_the_checkpoint() -> None:
    """A failed checkpoint stops the run with AgentError (K13): going idle then owes nothing."""
    entries = [*UP_TO_CALL, write(4), TURN_END, write(1, ok=False)]
    entries += [
        rt("agent-error", message="flush after turn/end failed"),
        rt("status", status="idle"),
    ]
    assert fed(entries).written == 4


def test_the_file_is_held_to_the_journals_account() -> None:
    derived = fed([write(3), write(2, ok=False), write(2)], durable=1)
    assert derived.written == 6
    derived.check_live(6)
    derived.check_crash(6)
    derived.check_crash(9)  # a batch written but not yet synced when the process died
    with pytest.raises(HarnessViolation, match="the file holds 7 events, the journal's"):
        derived.check_live(7)
    with pytest.raises(HarnessViolation, match="only 5 survived"):
        derived.check_crash(5)


def at(seq: int, time: int) -> Entry:
    return {"k": "event", "event": {"seq": seq, "time": time, "type": "x", "data": {}}}


def test_a_line_is_written_once_its_window_expired() -> None:
    """persistence.md §2: at the end of a settle, every event stamped before the clock's
    reading is on disk; the events of the current reading may wait for their window."""
    derived = fed([at(0, 0), at(1, 0)])
    derived.check_window(0)  # their window (20 ms) has not expired at 0 ms
    derived.feed(at(2, 1000))
    with pytest.raises(
        HarnessViolation, match=r"persistence.md §2: 2 events stamped before 1000 ms .*seq 0"
    ):
        derived.check_window(1000)
    derived = fed([at(0, 0), at(1, 0), at(2, 1000), write(2)])  # the tick wrote the first two
    derived.check_window(1000)
    assert (
        derived.exercised["persistence.md §2 a line is written once its batching window expired"]
        == 1
    )
    # A window re-armed per line: the chunk of the next tick came first and moved the
    # deadline, so the first batch waits another tick.
    with pytest.raises(HarnessViolation, match=r"persistence.md §2: "):
        fed([at(0, 0), at(1, 1000)]).check_window(1000)


def test_a_refused_batch_may_wait_for_its_retry() -> None:
    """A refused batch is retried within one back-off (at most 1 s): until a tick later the
    check waits; then it holds again."""
    derived = fed([at(0, 0), at(1, 1000), write(2, ok=False)])
    derived.check_window(1000)
    derived.feed(at(2, 2000))
    with pytest.raises(HarnessViolation, match=r"persistence.md §2: "):
        derived.check_window(2000)
    derived = fed([at(0, 0), write(1)], durable=3)  # the opening's 3 events are on disk
    derived.check_window(1000)
    assert derived.written == 4
