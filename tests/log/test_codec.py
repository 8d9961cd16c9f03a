"""The one event line encoder (spec/log.md §Envelope): the bytes of ``orjson.dumps`` of the
envelope (``Session.append`` fills the same line in place: tests/store/test_session.py)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from trio_agent.log import Event, decode_event, encode_event

VECTOR_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"


def envelope_bytes(event: Event) -> bytes:
    obj = {"seq": event.seq, "time": event.time, "type": event.type, "data": event.data}
    return orjson.dumps(obj) + b"\n"


def test_encode_event_is_the_envelope_over_every_valid_vector() -> None:
    count = 0
    for path in sorted((VECTOR_DIR / "valid").glob("*.json")):
        for line in json.loads(path.read_text("utf-8"))["log"][1:]:
            event = decode_event(line)
            assert encode_event(event) == envelope_bytes(event)
            count += 1
    assert count > 100


def test_an_unknown_type_still_encodes() -> None:
    event = Event(3, 4, 'x/"quoted"', {"a": [1, "é"]})
    assert encode_event(event) == envelope_bytes(event)
