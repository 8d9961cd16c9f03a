"""The splice classifier (spec/log.md §``agent/inbox/spliced``): insert, claim, drop."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from trio_agent.log import LogChecker, LogViolation, event_from_json
from trio_agent.log.checker_fast import feed_fast
from trio_agent.log.splice import SpliceKind, classify_splice, splice_kind

VECTOR_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"

M1 = {"id": "m1", "text": "one", "source": "user"}
M2 = {"id": "m2", "text": "two", "source": "user"}
M3 = {"id": "m3", "text": "three", "source": "user"}
M4 = {"id": "m4", "text": "four", "source": "user"}
M9 = {"id": "m9", "text": "new", "source": "user"}


def test_the_three_kinds() -> None:
    insert = {"target": "next-turn", "start": 0, "inserted": [M1]}
    claim = {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
    drop = {**claim, "outcome": "canceled"}
    replace = {**drop, "inserted": [M3]}
    assert splice_kind(insert) is SpliceKind.INSERT
    assert splice_kind(claim) is SpliceKind.CLAIM
    assert splice_kind(drop) is SpliceKind.DROP
    assert splice_kind(replace) is SpliceKind.DROP


def test_classify_against_the_queues() -> None:
    queues: dict[str, list[Any]] = {"next-turn": ["m1", "m2"], "next-step": ["m4"]}
    claim = classify_splice(
        {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}, queues
    )
    assert (claim.kind, claim.removed, claim.claimed, claim.dropped) == (
        SpliceKind.CLAIM,
        ["m1"],
        ["m1"],
        (),
    )
    assert not claim.drops_unrun
    drop = classify_splice(
        {
            "target": "next-turn",
            "start": 0,
            "removedCount": 2,
            "inserted": [],
            "outcome": "canceled",
        },
        queues,
    )
    assert (drop.claimed, drop.dropped, drop.drops_unrun) == ((), ["m1", "m2"], True)
    replace = classify_splice(
        {
            "target": "next-step",
            "start": 0,
            "removedCount": 1,
            "inserted": [M3],
            "outcome": "canceled",
        },
        queues,
    )
    assert (replace.dropped, replace.inserted, replace.drops_unrun) == (["m4"], [M3], False)
    insert = classify_splice({"target": "next-step", "start": 1, "inserted": [M2]}, queues)
    assert (insert.kind, insert.removed, insert.inserted) == (SpliceKind.INSERT, [], [M2])
    assert queues == {"next-turn": ["m1", "m2"], "next-step": ["m4"]}  # changes nothing


SPLICE_VECTORS = [
    str(path.relative_to(VECTOR_DIR))
    for path in sorted(VECTOR_DIR.rglob("*.json"))
    if any('"agent/inbox/spliced"' in line for line in json.loads(path.read_text()).get("log", []))
]


@pytest.mark.parametrize("name", SPLICE_VECTORS)
def test_every_vector_splice_removes_what_the_projection_removes(name: str) -> None:
    """Over the checked prefix of every vector: the classifier's removed entries are the ones
    the inbox projection removes, and a claim is exactly what the checker holds to I19."""
    vector = json.loads((VECTOR_DIR / name).read_text("utf-8"))
    checker = LogChecker()
    for line in vector["log"][1:]:
        try:
            event = event_from_json(orjson.loads(line))
        except (LogViolation, orjson.JSONDecodeError):
            return
        splice = None
        if event.type == "agent/inbox/spliced":
            splice = classify_splice(event.data, checker.inbox.queues)
        before = checker.inbox.copy()
        try:
            checker.feed(event)
        except LogViolation:
            return
        if splice is not None:
            assert list(splice.removed) == before.apply(event.data)
            assert splice.inserted == event.data["inserted"]
            assert (splice.kind is SpliceKind.INSERT) == ("removedCount" not in event.data)


#: Where the checker stands when the splice comes: between turns, inside a turn between
#: steps, inside a step. A claim is legal only in the middle one (rule I19).
PLACES = ("between turns", "between steps", "in a step")


def _checker_at(place: str) -> LogChecker:
    """A checker with two messages queued on each target, standing at ``place``."""
    checker = LogChecker()
    lines: list[tuple[str, dict[str, Any]]] = [
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [M1, M2]}),
        ("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [M3, M4]}),
    ]
    if place != "between turns":
        lines.append(("turn/start", {"turn": 1}))
    if place == "in a step":
        lines.append(("step/start", {"turn": 1, "step": 1}))
    for seq, (kind, data) in enumerate(lines):
        checker.feed(event_from_json({"seq": seq, "time": seq, "type": kind, "data": data}))
    return checker


@st.composite
def splice_data(draw: st.DrawFn) -> dict[str, Any]:
    """Well-formed splice data (I0) of every shape: with and without ``removedCount`` and
    ``outcome``, inserting or not, at the head or not, on either target."""
    data: dict[str, Any] = {
        "target": draw(st.sampled_from(("next-turn", "next-step"))),
        "start": draw(st.integers(0, 2)),
        "inserted": draw(st.sampled_from(([], [M9]))),
    }
    removed = draw(st.sampled_from((None, 1, 2)))
    if removed is not None:
        data["removedCount"] = removed
    if draw(st.booleans()):
        data["outcome"] = "canceled"
    return data


@settings(max_examples=300, deadline=None)
@given(splice_data(), st.sampled_from(PLACES))
def test_the_checker_holds_to_i19_exactly_the_splices_the_classifier_calls_claims(
    data: dict[str, Any], place: str
) -> None:
    """The checker's claim rules (I19, and I17's ban on claims) apply to what
    :func:`splice_kind` calls a claim and to nothing else, on both of its paths: ``feed``
    (which calls :func:`splice_kind`) reports I19 only for a claim, and always for a claim
    outside the one place it may happen; ``feed_fast`` (which spells the claim test out
    inline) accepts exactly what ``feed`` accepts."""
    checker = _checker_at(place)
    obj = {"seq": checker.next_seq, "time": checker.next_seq, "type": "agent/inbox/spliced"}
    obj["data"] = data
    rule = None
    try:
        checker.feed(event_from_json(copy.deepcopy(obj)))
    except LogViolation as exc:
        rule = exc.rule
    claim = splice_kind(data) is SpliceKind.CLAIM
    if rule == "I19":
        assert claim
    if claim and place != "between steps":
        assert rule == "I19"
    assert feed_fast(_checker_at(place), copy.deepcopy(obj)) is (rule is None)
