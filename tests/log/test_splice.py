"""The splice classifier (spec/log.md §``agent/inbox/spliced``): insert, claim, drop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from trio_agent.log import LogChecker, LogViolation, event_from_json
from trio_agent.log.splice import SpliceKind, classify_splice, splice_kind

VECTOR_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"

M1 = {"id": "m1", "text": "one", "source": "user"}
M2 = {"id": "m2", "text": "two", "source": "user"}
M3 = {"id": "m3", "text": "three", "source": "user"}


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
