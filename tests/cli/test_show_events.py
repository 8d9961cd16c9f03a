"""``show``'s second pass (``events_of``) against the readable decoder, on every valid vector.

The second pass builds each event from a line the scan already accepted without running the
shape predicates again; these tests hold it equal to :func:`decode_event` line by line, and
check that a line no longer shaped like an event is still refused with the worded error.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from trio_agent.cli.inputs import events_of
from trio_agent.log import LogViolation, decode_event

_VALID = sorted((Path(__file__).parents[2] / "spec" / "vectors" / "valid").glob("*.json"))


@pytest.mark.parametrize("path", _VALID, ids=[p.stem for p in _VALID])
def test_events_of_equals_decode_event(path: Path) -> None:
    lines: list[str] = json.loads(path.read_text())["log"]
    body = [line.encode() + b"\n" for line in lines[1:]]
    expected = [decode_event(line[:-1]) for line in body]
    got = list(events_of(io.BytesIO(b"".join(body)), len(body)))
    assert got == expected
    assert [type(e.data) for e in got] == [type(e.data) for e in expected]


def test_events_of_stops_at_count() -> None:
    lines: list[str] = json.loads(_VALID[0].read_text())["log"]
    body = b"".join(line.encode() + b"\n" for line in lines[1:])
    assert len(list(events_of(io.BytesIO(body), 1))) == 1


@pytest.mark.parametrize(
    "line",
    [b"[1, 2]\n", b'{"seq": 0, "time": 0, "type": "turn/start"}\n', b"7\n"],
    ids=["array", "missing-data", "number"],
)
def test_events_of_words_a_line_that_is_not_an_event(line: bytes) -> None:
    with pytest.raises(LogViolation) as info:
        list(events_of(io.BytesIO(line), 1))
    assert info.value.rule == "I0"
