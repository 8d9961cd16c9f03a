"""The log pane's tones (trio_agent/demo/log_tail.py): a splice's tone is its kind as
:func:`~trio_agent.log.splice_kind` reads it (spec/log.md §``agent/inbox/spliced``)."""

from __future__ import annotations

from typing import Any

import pytest

from trio_agent.demo.log_tail import tone_of
from trio_agent.log import event_from_json

M1 = {"id": "m1", "text": "one", "source": "user"}
M2 = {"id": "m2", "text": "two", "source": "user"}


@pytest.mark.parametrize(
    ("data", "tone"),
    [
        ({"target": "next-turn", "start": 0, "inserted": [M1]}, "queue"),
        ({"target": "next-step", "start": 1, "inserted": [M1, M2]}, "queue"),
        ({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}, "claim"),
        ({"target": "next-step", "start": 0, "removedCount": 2, "inserted": []}, "claim"),
        (
            {
                "target": "next-turn",
                "start": 0,
                "removedCount": 1,
                "inserted": [],
                "outcome": "canceled",
            },
            "dropped",
        ),
        (
            {
                "target": "next-step",
                "start": 0,
                "removedCount": 1,
                "inserted": [M2],
                "outcome": "canceled",
            },
            "dropped",
        ),
    ],
)
def test_a_splice_is_toned_by_its_kind(data: dict[str, Any], tone: str) -> None:
    event = event_from_json({"seq": 0, "time": 0, "type": "agent/inbox/spliced", "data": data})
    assert tone_of(event) == tone
