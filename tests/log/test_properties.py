"""Hypothesis properties of the pure core.

Logs come from the loop simulation in trio_agent.testing.loggen, which makes the choices a
real loop makes; every property is checked against cuts at arbitrary points.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given, settings, strategies as st

from trio_agent.log import (
    Event,
    LogViolation,
    check_events,
    decode_event,
    encode_event,
    fold_consumed_work,
    repair_closers,
    truncate_open_turn,
)
from trio_agent.log.data_predicates import DATA_PREDICATES
from trio_agent.log.schema import SchemaError, validate_data
from trio_agent.log.splice import SpliceKind, splice_kind
from trio_agent.testing.loggen import generate_log

logs = st.builds(generate_log, st.integers(0, 2**32), st.integers(1, 6))


@st.composite
def cut_logs(draw: st.DrawFn) -> list[Event]:
    events = draw(logs)
    return events[: draw(st.integers(0, len(events)))]


@given(cut_logs())
def test_cut_plus_closers_is_valid_and_balanced(cut: list[Event]) -> None:
    closers = repair_closers(cut)
    checker = check_events(cut + closers)
    assert checker.balanced
    # Closers only append: seqs continue the log and reuse the last event's time.
    assert [e.seq for e in closers] == list(range(len(cut), len(cut) + len(closers)))
    assert all(e.time == (cut[-1].time if cut else 0) for e in closers)
    if closers:
        assert closers[-1].type == "turn/end"
        assert closers[-1].data["reason"] == {"kind": "interrupted"}


@given(cut_logs())
def test_repair_is_idempotent(cut: list[Event]) -> None:
    repaired = cut + repair_closers(cut)
    assert repair_closers(repaired) == []


@given(cut_logs())
def test_placeholder_codes_follow_the_dispatch_marker(cut: list[Event]) -> None:
    dispatched = {e.data["callId"] for e in cut if e.type == "tool/call"}
    for event in repair_closers(cut):
        if event.type == "tool/result":
            expected = (
                "TOOL_OUTCOME_UNKNOWN" if event.data["callId"] in dispatched else "TOOL_NOT_STARTED"
            )
            assert event.data["error"]["code"] == expected


@given(cut_logs())
def test_truncate_keeps_a_balanced_prefix(cut: list[Event]) -> None:
    report = truncate_open_turn(cut)
    assert list(report.kept) + list(report.dropped) == cut
    assert check_events(report.kept).balanced
    assert (report.turn is None) == (not report.dropped)
    assert sum(report.dropped_by_type.values()) == len(report.dropped)


def reference_fold(events: list[Event]) -> tuple[int | None, bool]:
    """fold_consumed_work restated as two passes over whole turns (spec/consumed-work.md)."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for e in events:
        if e.type == "turn/start":
            current = {"stepped": False, "claimed": False}
        elif e.type == "step/start" and current is not None:
            current["stepped"] = True
        elif e.type == "agent/inbox/spliced" and splice_kind(e.data) is SpliceKind.CLAIM:
            if current is not None:
                current["claimed"] = True
        elif e.type == "turn/end" and current is not None:
            kind = e.data["reason"]["kind"]
            if current["stepped"] or (current["claimed"] and kind != "completed"):
                turns.append({"seq": e.seq})
            current = None
    end = turns[-1]["seq"] if turns else None
    dropped = any(
        e.type == "agent/inbox/spliced"
        and splice_kind(e.data) is SpliceKind.DROP
        and not e.data["inserted"]
        and (end is None or e.seq > end)
        for e in events
    )
    return end, dropped


@given(cut_logs())
def test_fold_agrees_with_reference(cut: list[Event]) -> None:
    work = fold_consumed_work(cut)
    assert (work.end_seq, work.dropped_unrun) == reference_fold(cut)


@given(logs)
def test_codec_round_trip(events: list[Event]) -> None:
    for event in events:
        line = encode_event(event)
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        assert decode_event(line[:-1]) == event


_MUTATIONS = ("seq", "turn", "step", "type", "callId")


@settings(max_examples=300)
@given(logs, st.data())
def test_rejected_event_leaves_checker_unchanged(events: list[Event], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(events) - 1))
    checker = check_events(events[:index])
    original = events[index]
    field = data.draw(st.sampled_from(_MUTATIONS))
    payload = dict(original.data)
    seq, type_ = original.seq, original.type
    if field == "seq":
        seq += data.draw(st.sampled_from((-1, 1, 2)))
    elif field == "type":
        type_ = data.draw(
            st.sampled_from(("turn/start", "turn/end", "step/start", "step/end", "tool/result"))
        )
    elif field in payload and isinstance(payload[field], int):
        payload[field] += data.draw(st.sampled_from((-1, 1)))
    elif field in payload:
        payload[field] = payload[field] + "x"
    mutated = Event(seq, original.time, type_, payload)
    try:
        checker.feed(mutated)
    except (LogViolation, KeyError):
        # KeyError: a type change leaves data without that type's fields; the codec (I0)
        # stops such events before the checker. Either way the state must be untouched,
        # so the original rest of the log still checks:
        checker.feed_all(events[index:])
        assert checker.balanced
    else:
        assume(False)  # the mutation happened to be valid: nothing to learn here


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["", "x", "text", "tool-call"])
)


@st.composite
def perturbed_data(draw: st.DrawFn) -> tuple[str, Any]:
    """Valid event data with one field replaced, removed or added, at any depth."""
    events = draw(logs)
    event = draw(st.sampled_from(events))
    data: Any = json.loads(json.dumps(event.data))
    node = data
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, dict | list) and child and draw(st.booleans()):
            node = child
            continue
        action = draw(st.sampled_from(["replace", "delete", "keep"]))
        if action == "replace":
            node[key] = draw(json_scalars)
        elif action == "delete" and isinstance(node, dict):
            del node[key]
        break
    return event.type, data


@settings(max_examples=500)
@given(perturbed_data())
def test_fast_predicates_agree_with_validators(case: tuple[str, Any]) -> None:
    type_, data = case
    try:
        validate_data(type_, data)
        explained_valid = True
    except SchemaError:
        explained_valid = False
    assert DATA_PREDICATES[type_](data) == explained_valid


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "null"),
        (True, "a boolean"),
        (1.5, "a number"),
        ("1", "a string"),
        ([1], "an array"),
        ({"n": 1}, "an object"),
    ],
)
def test_a_value_of_the_wrong_kind_is_named_in_json_words(value: Any, kind: str) -> None:
    """The validator names what the line held by its JSON kind, as ``check`` prints it
    (``data.turn: expected an integer, got an object``), for every kind a line can hold."""
    with pytest.raises(SchemaError) as info:
        validate_data("turn/start", {"turn": value})
    assert (info.value.path, info.value.message) == (
        "data.turn",
        f"expected an integer, got {kind}",
    )


def test_no_property_has_a_deadline() -> None:
    """tests/conftest.py's profile: no example fails for taking long (a verdict is never a
    wall-clock figure), in this file's ``@settings(max_examples=...)`` properties too."""
    assert settings().deadline is None
    assert settings(max_examples=300).deadline is None
