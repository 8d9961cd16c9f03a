"""The bounded event-stream decoder (trio_agent.models.sse; spec/models.md §Bounds): WHATWG
line and field rules whatever the pieces, and bounds that hold before anything is buffered."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, strategies as st

from trio_agent.models.sse import SSEDecoder, SSEEvent, TooLarge

BODY = (
    b": a comment\r\n"
    b"event: message_start\r\n"
    b'data: {"a": 1}\r\n'
    b"\r\n"
    b"data: two\rdata: lines\r\r"
    b"id: 7\nretry: 10\ndata:no-space\n\n"
    b"data: last, no blank line\n"
)
EXPECTED = [
    SSEEvent('{"a": 1}', "message_start"),
    SSEEvent("two\nlines"),
    SSEEvent("no-space"),
]


def decode(pieces: list[bytes], **bounds: int) -> list[SSEEvent]:
    decoder = SSEDecoder(
        max_line=bounds.get("max_line", 1000), max_event=bounds.get("max_event", 1000)
    )
    out: list[SSEEvent] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.close()


@given(st.lists(st.integers(0, len(BODY)), max_size=12))
def test_any_split_of_the_body_decodes_the_same(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(BODY)]
    pieces = [BODY[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode(pieces) == [*EXPECTED, SSEEvent("last, no blank line")]


def test_an_unfinished_line_at_the_end_is_dropped() -> None:
    assert decode([b"data: whole\n", b"data: cut in the mid"]) == [SSEEvent("whole")]


def test_counts_for_messages() -> None:
    decoder = SSEDecoder(max_line=100, max_event=100)
    assert decoder.describe() == "nothing arrived"
    decoder.feed(b": ping\n\n")
    assert decoder.describe() == "no event, 8 bytes, 1 comment line"
    decoder.feed(b"data: x\n\ndata: y\n\n")
    assert decoder.describe() == "2 events, 26 bytes, 1 comment line"


def test_a_line_past_its_bound_is_refused_before_it_is_buffered() -> None:
    decoder = SSEDecoder(max_line=10, max_event=1000)
    decoder.feed(b"data: 1234")  # exactly the bound: fine
    with pytest.raises(TooLarge, match="line longer than 10 bytes"):
        decoder.feed(b"5")
    assert len(decoder._line) <= 10


def test_an_event_past_its_bound_is_refused() -> None:
    decoder = SSEDecoder(max_line=100, max_event=20)
    decoder.feed(b"data: 12345\n")  # 12 bytes counted (the line without "data: ", plus \n)
    with pytest.raises(TooLarge, match="event larger than 20 bytes"):
        decoder.feed(b"data: 67890\n")
