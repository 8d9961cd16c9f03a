"""The fast timeline (``log/render_fast.py``) against the readable one (``log/render.py``).

``trio-agent show`` renders the lines its scan accepts with ``TimelineLines``, given the
lines or what the scan accepted them as (its ``item_sink``: typed envelopes and lines); the
readable ``render_timeline`` is the reference. These tests build the timelines of the same
file the way ``show`` does (the accepted lines, up to a line that breaks a rule; the closers
of a cold log; the torn tail) and hold them equal line for line, in every mode (plain,
colour, full), on every vector file, on generated logs and on lines written in the less
usual ways JSON allows. The readable side decodes each line with the reference decoder
(``decode_event``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from support.log_prefixes import CALL_DISPATCHED, OPEN_STEP
from support.terminal import sent_to_terminal
from support.vector_files import VECTOR_FILES

from trio_agent.log import (
    Event,
    HeaderError,
    LogError,
    decode_event,
    decode_header,
    encode_event,
    encode_header,
    lines_of,
    repair_closers,
    scan_lines,
)
from trio_agent.log.events import Header
from trio_agent.log.render import render_timeline
from trio_agent.log.render_fast import TimelineLines, render_lines
from trio_agent.testing.loggen import generate_log

MODES = [{"color": color, "full": full} for color in (False, True) for full in (False, True)]
MODE_IDS = ["plain", "full", "color", "color-full"]


def both(data: bytes, *, color: bool, full: bool) -> tuple[list[str], list[str]]:
    """The timeline of a log file's bytes, fast and readable, as ``show`` builds it."""
    accepted: list[bytes] = []
    items: list[object] = []  # what the scan accepted each line as (envelope or line)
    try:
        scan = scan_lines(
            lines_of(data), strict=False, line_sink=accepted.append, item_sink=items.append
        )
    except HeaderError:
        return [], []
    except LogError:  # corruption: the events before the offending line, nothing after
        header, closers, tail = decode_header(data.split(b"\n", 1)[0]), [], None
    else:
        header, closers, tail = scan.header, repair_closers(scan.checker), scan.tail
    fast = render_lines(header, accepted, len(accepted), closers, tail, color=color, full=full)
    scanned = render_lines(header, items, len(items), closers, tail, color=color, full=full)
    assert scanned == fast
    events = [decode_event(line[:-1]) for line in accepted]
    slow = list(render_timeline(header, events, closers, tail, color=color, full=full))
    return fast, slow


def file_of(events: list[Event], tail: bytes = b"") -> bytes:
    header = encode_header(Header("s", 1_700_000_000_000))  # each line ends in its newline
    return b"".join([header, *map(encode_event, events)]) + tail


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("cid", sorted(VECTOR_FILES))
def test_equal_on_every_vector(cid: str, mode: dict[str, bool]) -> None:
    fast, slow = both(VECTOR_FILES[cid], **mode)
    assert fast == slow


def test_the_vectors_show_every_kind_of_line() -> None:
    # The control of the test above: the vectors reach the closers, the torn tail, a run of
    # chunks and both typed shapes, so the equality covers each.
    shown = "\n".join(line for data in VECTOR_FILES.values() for line in both(data, **MODES[0])[0])
    for part in ("repair would append", "torn tail ignored", "streamed ", " tool/output "):
        assert part in shown


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.sampled_from(MODES), st.data())
def test_equal_on_generated_logs(
    seed: int, turns: int, mode: dict[str, bool], data: st.DataObject
) -> None:
    events = generate_log(seed, turns)
    cut = data.draw(st.integers(1, len(events)), label="cut")  # an open turn gets closers
    tail = data.draw(st.sampled_from([b"", b'{"seq":', b"garbage\n"]), label="tail")
    fast, slow = both(file_of(events[:cut], tail), **mode)
    assert fast == slow
    assert len(fast) > 1


#: A text delta and an output line written in the less usual ways JSON allows: the fast
#: timeline reads them as the reference decoder does (or leaves them to it).
_CHUNK = b'{"seq":5,"time":2,"type":"assistant/chunk","data":{"turn":1,"step":1,CHUNK}}'
_OUTPUT = b'{"seq":7,"time":2,"type":"tool/output","data":{"turn":1,"step":1,OUTPUT}}'
WRITTEN = [
    _CHUNK.replace(b"CHUNK", c)
    for c in (
        b'"chunk":{"type":"text-delta","text":"x\\ny\\u00e9"}',
        b'"chunk":{"text":"x","type":"text-delta"}',
        b'"chunk":{"type":"text-delta","text":"x","extra":[1]}',
        b'"chunk":{"type":"text\\u002ddelta","text":"x"}',
        b'"chunk":{"type":"text-delta","text":"a","text":"b"}',
        b'"chunk":{"type":"finish","reason":"stop"}',
        b'"chunk":{"type":"text-delta","text":"' + b"long " * 30 + b'"}',
    )
] + [
    _OUTPUT.replace(b"OUTPUT", o)
    for o in (
        b'"callId":"c1","stream":"stdout","text":"x\\n"',
        b'"stream":"stderr","text":"","callId":"c1"',
        b'"callId":"c1","stream":"std\\u006fut","text":"x","more":{}',
        b'"callId":"c1","stream":"stdout","text":"' + b"\\u2028 " * 30 + b'"',
        b'"callId":"c1","stream":"stdout","text":"a","text":"b"',
    )
]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("line", WRITTEN, ids=lambda line: line.decode()[40:90])
def test_equal_on_lines_written_another_way(line: bytes, mode: dict[str, bool]) -> None:
    prior = OPEN_STEP + (CALL_DISPATCHED if b"tool/output" in line else [])
    data = encode_header(Header("s", 0)) + b"\n".join([*prior, line]) + b"\n"
    fast, slow = both(data, **mode)
    assert fast == slow
    assert fast[0].endswith(f" {len(prior) + 1} events")  # the line itself was accepted


def test_lines_reach_emit_in_bounded_batches() -> None:
    batches: list[int] = []
    timeline = TimelineLines(lambda lines: batches.append(len(lines)))
    line = _OUTPUT.replace(b"OUTPUT", b'"callId":"c1","stream":"stdout","text":"x"') + b"\n"
    for _ in range(100):
        timeline.lines([line] * 100)
    timeline.finish()
    assert sum(batches) == 10_000
    assert max(batches) < 512 + 100 < 10_000


#: A step whose call id, tool name and texts hold control characters (``@`` below; written as
#: JSON escapes, as every writer must): a terminal would act on each of them.
_CONTROLS = b"\\u001b[2J\\r\\t\\u0007\\u007f\\u009b"
CONTROL_STEP = [
    *OPEN_STEP,
    *(
        line.replace(b"@", _CONTROLS)
        for line in (
            b'{"seq":5,"time":1,"type":"assistant/chunk","data":{"turn":1,"step":1,'
            b'"chunk":{"type":"text-delta","text":"@"}}}',
            b'{"seq":6,"time":1,"type":"assistant/message","data":{"turn":1,"step":1,'
            b'"message":{"id":"a","content":[{"type":"tool-call","id":"c@","name":"b@",'
            b'"arguments":{}}]}}}',
            b'{"seq":7,"time":1,"type":"tool/call","data":{"turn":1,"step":1,"callId":"c@",'
            b'"name":"b@","arguments":{}}}',
            b'{"seq":8,"time":1,"type":"tool/output","data":{"turn":1,"step":1,"callId":"c@",'
            b'"stream":"stdout","text":"@\\n"}}',
            b'{"seq":9,"time":1,"type":"tool/result","data":{"turn":1,"step":1,"callId":"c@",'
            b'"content":"@","isError":false}}',
        )
    ),
]


@pytest.mark.parametrize("full", [False, True], ids=["plain", "full"])
def test_control_characters_of_the_log_are_shown_not_sent(full: bool) -> None:
    data = encode_header(Header("s\x1b]0;x\x07", 0)) + b"\n".join(CONTROL_STEP) + b"\n"
    fast, slow = both(data, color=False, full=full)
    assert fast == slow
    assert fast[0].startswith("session s␛]0;x␇ ") and fast[0].endswith(" 10 events")
    shown = "\n".join(fast)
    assert not sent_to_terminal(shown)
    pictures = "␛[2J␍␉␇␡�"
    assert f'streamed 1 chunk(s) "{pictures}"' in shown
    assert f"assistant/message → b{pictures}#c{pictures}" in shown
    assert f"tool/call b{pictures}#c{pictures} (dispatched)" in shown
    assert f'tool/output c{pictures} stdout "{pictures}⏎"' in shown
    assert f"tool/result c{pictures} ok: {pictures}" in shown
