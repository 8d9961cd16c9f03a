"""The streamed reading of a log: the checker's fast paths, ``scan_lines`` and the streamed folds.

The fast path (``checker_fast.feed_fast``) takes every event type. It must accept exactly what
the explanatory path (``event_from_json`` + ``LogChecker.feed``) accepts, leaving the same
state; whatever it declines must leave the state untouched. The typed path before it
(``checker_typed``: msgspec structs, then ``feed_typed``) must accept only what the
explanatory path accepts, leaving the same state, and take the common shapes of a valid log.
The vectors run through both already (``scan_log`` is ``scan_lines``); the properties below
hold them to that on every vector line, on generated logs, and on their lines mutated or
written out of place.
"""

from __future__ import annotations

import copy
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings, strategies as st
from support.log_prefixes import CALL_DISPATCHED, OPEN_STEP

from trio_agent.log import (
    Event,
    LogChecker,
    LogError,
    TruncateFold,
    check_events,
    encode_event,
    encode_header,
    event_from_json,
    event_to_json,
    lines_of,
    repair_closers,
    scan_lines,
    scan_log,
    truncate_open_turn,
)
from trio_agent.log.checker_fast import feed_fast
from trio_agent.log.checker_typed import (
    TYPED_ERRORS,
    decode_typed,
    feed_typed,
    typed_kinds,
)
from trio_agent.log.codec import decode_event
from trio_agent.log.events import DATA_CLASSES, Header
from trio_agent.log.rules import DISPATCHED_CODES, NOT_DISPATCHED_CODES
from trio_agent.testing.loggen import generate_log

logs = st.builds(generate_log, st.integers(0, 2**32), st.integers(1, 6))
#: The types checker_fast.feed_fast takes: all of them (feed only words the refusals).
FAST_TYPES = tuple(DATA_CLASSES)
#: The two it tests inline, which the mutations favour.
HOT_TYPES = ("assistant/chunk", "tool/output")
#: Envelope class -> event type, for every type whose envelope a scan hands a sink.
TYPED_KINDS = typed_kinds(set(DATA_CLASSES))

#: What draws a value: a ``@composite``'s ``draw`` or ``DataObject.draw``.
Draw = Callable[[st.SearchStrategy[Any]], Any]


def state(checker: LogChecker) -> Any:
    """Everything a checker knows, as comparable values."""
    calls = {
        cid: (c.name, c.arguments, c.dispatched, c.resolved, c.spawned, c.approval)
        for cid, c in checker._calls.items()
    }
    return (
        checker.next_seq,
        checker.last_time,
        checker.open_turn,
        checker.open_step,
        checker.last_turn,
        checker._last_step,
        checker._phase,
        checker._repairing,
        calls,
        set(checker._call_ids),
        set(checker._approval_ids),
        dict(checker._open_approvals),
        {t: list(q) for t, q in checker.inbox.queues.items()},
    )


def typed_agrees(checker: LogChecker, line: bytes) -> bool:
    """The typed path on ``line`` from ``checker``'s state (which stays unchanged): what it
    accepts, ``feed(decode_event(line))`` accepts, to the same state and the same event; a
    decline changes nothing. Returns whether it accepted."""
    fast = copy.deepcopy(checker)
    try:
        ev = decode_typed(line)
    except TYPED_ERRORS:
        return False
    before = state(checker)
    if not feed_typed(fast, ev, line):
        assert state(fast) == before, line
        return False
    slow = copy.deepcopy(checker)
    event = decode_event(line.removesuffix(b"\n"))  # raises if the rules refuse it: a failure
    slow.feed(event)
    assert state(fast) == state(slow), line
    # What a scan hands its sink from the envelope is the event as written; the hot types'
    # structs hold no such data, and are never handed over from it.
    if event.type in HOT_TYPES:
        assert type(ev) not in TYPED_KINDS, line
    else:
        fields = (event.seq, event.time, event.type, event.data)
        assert (ev.seq, ev.time, TYPED_KINDS[type(ev)], ev.data) == fields, line
    assert type(ev) not in typed_kinds(set(DATA_CLASSES) - {event.type}), line
    return True


def mutations(draw: Draw, obj: dict[str, Any], events: list[Event]) -> dict[str, Any]:
    """One change to a line's JSON object: envelope, data fields, or a borrowed type."""
    obj = copy.deepcopy(obj)
    data = obj["data"]
    choice = draw(
        st.sampled_from(
            (
                "none",
                "seq",
                "seq-bool",
                "time",
                "turn",
                "step",
                "call",
                "type",
                "drop-key",
                "extra-key",
                "data-field",
                "chunk",
                "id",
                "arguments",
                "code",
                "is-error",
                "inbox",
                "reason",
                "interrupted",
                "blocks",
                "tool-name",
                "outcome",
                "moved",
                "moved",
            )
        )
    )
    if choice == "seq":
        obj["seq"] += draw(st.sampled_from((-1, 1, 2)))
    elif choice == "seq-bool":
        obj["seq"] = bool(obj["seq"])
    elif choice == "time":
        obj["time"] = draw(st.sampled_from((-1, 1.5, "1", None)))
    elif choice in ("turn", "step") and choice in data:
        values = (data[choice] + 1, data[choice] - 1, True, 1.0, 0, -1, "1", None)
        data[choice] = draw(st.sampled_from(values))
    elif choice == "call" and "callId" in data:
        other = [e.data["callId"] for e in events if "callId" in e.data]
        data["callId"] = draw(st.sampled_from([*other, "nope", ""]))
    elif choice == "type":
        obj["type"] = draw(st.sampled_from((*FAST_TYPES, "turn/end", "user/message")))
    elif choice == "drop-key":
        del obj[draw(st.sampled_from(sorted(obj)))]
    elif choice == "extra-key":
        obj[draw(st.sampled_from(("extra", "Seq")))] = 1
    elif choice == "data-field" and data:
        data[draw(st.sampled_from(sorted(data)))] = draw(st.sampled_from((None, 0, "", [], {})))
    elif choice == "moved":  # another line of the log, written here: out of order
        seq = obj["seq"]
        fast = [e for e in events if e.type in FAST_TYPES] or events
        obj = copy.deepcopy(event_to_json(draw(st.sampled_from(fast))))
        obj["seq"] = seq
    elif choice == "id" and "id" in data:  # approvals: reuse another's id, or an unknown one
        other = [e.data["id"] for e in events if "id" in e.data]
        data["id"] = draw(st.sampled_from([*other, "nope", ""]))
    elif choice == "arguments" and "arguments" in data:
        data["arguments"] = draw(
            st.sampled_from(
                (
                    {},
                    {"arg": True},
                    {"arg": 1},
                    {**data["arguments"], "x": [1, True]},
                    {k: [v] for k, v in data["arguments"].items()},
                    [],
                )
            )
        )
    elif choice == "code" and obj["type"] == "tool/result":
        codes = (*NOT_DISPATCHED_CODES, *DISPATCHED_CODES, "NOPE")
        data["error"] = draw(st.sampled_from([{"code": c} for c in codes] + [None, {}]))
        if data["error"] is None:
            del data["error"]
    elif choice == "is-error" and "isError" in data:
        data["isError"] = draw(st.sampled_from((not data["isError"], 0, 1, None)))
    elif choice == "inbox" and obj["type"] == "agent/inbox/spliced":
        mutate = draw(st.sampled_from(("start", "removed", "outcome", "inserted", "target")))
        if mutate == "start":
            data["start"] += draw(st.sampled_from((-1, 1)))
        elif mutate == "removed":
            data["removedCount"] = data.get("removedCount", 0) + draw(st.sampled_from((-1, 1)))
        elif mutate == "outcome":
            if data.pop("outcome", None) is None:
                data["outcome"] = "canceled"
        elif mutate == "inserted":
            queued = [m for e in events if "inserted" in e.data for m in e.data["inserted"]]
            extra = (
                draw(st.sampled_from(queued)) if queued else {"id": "m", "text": "", "source": ""}
            )
            data["inserted"] = draw(
                st.sampled_from(([], [extra], [*data["inserted"], extra], data["inserted"] * 2))
            )
        else:
            data["target"] = {"next-turn": "next-step", "next-step": "next-turn"}[data["target"]]
    elif choice == "reason" and obj["type"] == "turn/end":
        data["reason"] = draw(
            st.sampled_from(
                (
                    {"kind": "interrupted"},
                    {"kind": "completed"},
                    {"kind": "error"},
                    {"kind": "error", "error": {"code": "X", "message": "m"}},
                )
            )
        )
    elif choice == "interrupted" and obj["type"] == "assistant/message":
        if data.pop("interrupted", None) is None:
            data["interrupted"] = draw(st.sampled_from((True, False, 1)))
    elif choice == "blocks" and obj["type"] == "assistant/message":
        content = data["message"]["content"]
        calls = [
            b for e in events if e.type == "assistant/message" for b in e.data["message"]["content"]
        ]
        extra = draw(st.sampled_from(calls)) if calls else {"type": "text", "text": ""}
        data["message"]["content"] = draw(
            st.sampled_from(([], [extra], [*content, extra], content * 2, content[:1]))
        )
    elif choice == "tool-name" and ("toolName" in data or "name" in data):
        data["toolName" if "toolName" in data else "name"] = draw(st.sampled_from(("bash", "x")))
    elif choice == "outcome" and obj["type"] == "approval/decided":
        data["outcome"] = draw(st.sampled_from(("allowed", "rejected", "cancelled", "maybe")))
    elif choice == "chunk" and "chunk" in data:
        data["chunk"] = draw(
            st.sampled_from(({"type": "text-delta"}, {"type": "finish", "reason": 1}, {}))
        )
    return obj


@settings(max_examples=600, deadline=None)
@given(logs, st.data())
def test_fast_path_accepts_only_what_feed_accepts(events: list[Event], data: st.DataObject) -> None:
    # Bias towards the two types tested inline: they are most of a long log.
    fast_at = [i for i, e in enumerate(events) if e.type in HOT_TYPES]
    hot = bool(fast_at) and data.draw(st.booleans())
    where: st.SearchStrategy[int] = (
        st.sampled_from(fast_at) if hot else st.integers(0, len(events) - 1)
    )
    index = data.draw(where)
    fast = check_events(events[:index])
    slow = check_events(events[:index])
    before = state(fast)
    obj = mutations(data.draw, event_to_json(events[index]), events)
    # Through orjson, as the reader does: ints stay ints, floats floats.
    obj = orjson.loads(orjson.dumps(obj))
    line = orjson.dumps(obj) + b"\n"
    typed_agrees(fast, line)
    accepted = feed_fast(fast, obj)
    try:
        slow.feed(event_from_json(obj))
        ok = True
    except (LogError, KeyError):
        ok = False
    assert accepted == ok, f"the fast path {'accepted' if accepted else 'declined'}: {obj}"
    assert state(fast) == (state(slow) if accepted else before)


@pytest.mark.slow  # long: make test-fast leaves it out
@settings(max_examples=25, deadline=None)
@given(logs, st.data())
def test_fast_path_agrees_on_every_line_at_every_position(
    events: list[Event], data: st.DataObject
) -> None:
    # A crashed prefix plus its repair closers, so placeholders (I17) occur too; then every
    # line of the log, written at every position (out of order, after its call's result,
    # after the message, after a placeholder, in another step or turn).
    cut = events[: data.draw(st.integers(0, len(events)))]
    log = cut + repair_closers(cut)
    # Most lines are refused where they are written: those are tried on the walker itself,
    # since a refusal leaves a checker as it was (LogChecker.feed, feed_fast, feed_typed),
    # which is asserted; copies are made only for a line the rules accept.
    lines = [event_to_json(e) for e in events if e.type in FAST_TYPES]
    walker = LogChecker()
    for event in log:
        before, held = state(walker), copy.deepcopy(walker)
        for obj in lines:
            moved = orjson.loads(orjson.dumps({**obj, "seq": walker.next_seq}))
            line = orjson.dumps(moved) + b"\n"
            try:
                walker.feed(event_from_json(moved))
            except LogError:
                assert state(walker) == before, moved
                assert not feed_fast(walker, moved), moved  # refused by the rules: declined
                try:
                    ev = decode_typed(line)
                except TYPED_ERRORS:
                    pass
                else:
                    assert not feed_typed(walker, ev, line), moved
                assert state(walker) == before, moved
                continue
            slow, walker, fast = walker, copy.deepcopy(held), copy.deepcopy(held)
            assert feed_fast(fast, moved), moved  # valid lines of the fast types always go fast
            assert state(fast) == state(slow)
            typed_agrees(walker, line)
        walker.feed(event)


@settings(max_examples=200, deadline=None)
@given(logs)
def test_fast_path_takes_every_event_of_a_valid_log(events: list[Event]) -> None:
    checker = LogChecker()
    for event in events:
        assert feed_fast(checker, orjson.loads(encode_event(event))), event
    assert state(checker) == state(check_events(events))


@settings(max_examples=200, deadline=None)
@given(logs)
def test_typed_path_takes_every_event_of_a_valid_log_but_other_chunks(events: list[Event]) -> None:
    # Every event type is decoded typed; only a chunk other than a text delta is left to
    # feed_fast (the structs describe the text delta alone).
    checker = LogChecker()
    for event in events:
        line = encode_event(event)
        other_chunk = (
            event.type == "assistant/chunk" and event.data["chunk"]["type"] != "text-delta"
        )
        assert typed_agrees(checker, line) is not other_chunk, event
        checker.feed(event)


VECTOR_DIR = Path(__file__).resolve().parents[2] / "spec" / "vectors"
VECTOR_LOGS = {
    str(path.relative_to(VECTOR_DIR).with_suffix("")): vector["log"]
    for path in sorted(VECTOR_DIR.rglob("*.json"))
    if "log" in (vector := orjson.loads(path.read_bytes())) and not vector.get("suffix")
}


@pytest.mark.parametrize("cid", sorted(VECTOR_LOGS))
def test_fast_path_agrees_on_every_vector_line(cid: str) -> None:
    """Each line of each vector, both ways, up to the first line the checker refuses."""
    checker = LogChecker()
    for line in VECTOR_LOGS[cid][1:]:
        typed_agrees(checker, line.encode() + b"\n")
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        fast, slow = copy.deepcopy(checker), copy.deepcopy(checker)
        accepted = feed_fast(fast, obj)
        try:
            slow.feed(event_from_json(obj))
            ok = True
        except LogError:
            ok = False
        assert accepted == ok, line
        assert state(fast) == state(slow if accepted else checker)
        if not ok:
            return
        checker = slow


_CHUNK = b'{"seq":5,"time":TIME,"type":"assistant/chunk","data":{"turn":TURN,"step":1,CHUNK}}'
_OUTPUT = b'{"seq":7,"time":TIME,"type":"tool/output","data":{"turn":TURN,"step":1,OUTPUT}}'


def _written(template: bytes, **parts: bytes) -> bytes:
    defaults = {
        "TIME": b"2",
        "TURN": b"1",
        "CHUNK": b'"chunk":{"type":"text-delta","text":"x"}',
        "OUTPUT": b'"callId":"c1","stream":"stdout","text":"x"',
    }
    for key, value in {**defaults, **parts}.items():
        template = template.replace(key.encode(), value)
    return template + b"\n"


#: Lines whose text a JSON reader may read in more than one way, each a chunk or an output at
#: the place it would be valid as written plainly: integers written as numbers of another
#: kind, out of range, duplicated or escaped keys, escaped tags, unknown keys, nulls, white
#: space. The typed path must agree with the readable one on each, whatever the verdict.
WRITTEN_FORMS = [
    *(
        _written(_CHUNK, TIME=t)
        for t in (
            b"-0",
            b"0",
            b"2.0",
            b"2e0",
            b"-1",
            b"true",
            b"null",
            b'"2"',
            b"9007199254740991",
            b"9007199254740992",
            b"18446744073709551616",
            b"2 ",
        )
    ),
    *(_written(_CHUNK, TURN=t) for t in (b"1.0", b"1e0", b"true", b"-0", b"2", b"null", b"01")),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":"x","extra":[1]}'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":null}'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text\\u002ddelta","text":"x"}'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","type":"finish","text":"x"}'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":"x"},"x":null'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":"\\ud800"}'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":"x"},"turn":1'),
    _written(_CHUNK, CHUNK=b'"chunk":{"type":"text-delta","text":"x"},"turn":"1"'),
    _written(_CHUNK).replace(b'"seq"', b'"s\\u0065q"'),
    _written(_CHUNK).replace(b'"assistant/chunk"', b'"assistant\\/chunk"'),
    _written(_CHUNK).replace(b'"seq":5,', b'"seq":9,"seq":5,'),
    _written(_CHUNK).replace(b'"seq":5,', b'"seq":5,"seq":9,'),
    _written(_CHUNK).replace(b'"seq":5,', b'"seq":5,"extra":1,'),
    _written(_CHUNK).replace(b'"seq":5,', b'"seq":5,"type":"tool/output",'),
    _written(_CHUNK).replace(b"\n", b"\r\n"),
    _written(_CHUNK).replace(b"{", b" { ", 1),
    _written(_CHUNK).replace(b"}}}", b"}}} x"),
    *(
        _written(_OUTPUT, OUTPUT=o)
        for o in (
            b'"callId":"","stream":"stdout","text":"x"',
            b'"callId":"c1","stream":"stdin","text":"x"',
            b'"callId":"c1","stream":"std\\u006fut","text":"x"',
            b'"callId":"c1","stream":"stderr","text":""',
            b'"callId":"c1","stream":"stdout"',
            b'"callId":"c1","stream":"stdout","text":"x","callId":"c2"',
            b'"callId":"c2","stream":"stdout","text":"x"',
            b'"callId":1,"stream":"stdout","text":"x"',
        )
    ),
]


@pytest.mark.parametrize("depth", [10, 1_000, 100_000])
def test_a_deeply_nested_line_gets_the_readable_verdict(depth: int) -> None:
    # msgspec gives up on nesting sooner than orjson (it raises RecursionError): the typed
    # path declines and the line gets the verdict it had, whatever the depth.
    nested = b"[" * depth + b"]" * depth
    call = (
        b'{"seq":6,"time":1,"type":"tool/call","data":{"turn":1,"step":1,"callId":"c1",'
        b'"name":"bash","arguments":{"x":NESTED}}}'
    ).replace(b"NESTED", nested)
    message = CALL_DISPATCHED[0].replace(b'"arguments":{}', b'"arguments":{"x":NESTED}')
    lines = [*OPEN_STEP, message.replace(b"NESTED", nested), call]
    log = encode_header(Header("s", 1)) + b"\n".join(lines) + b"\n"
    try:
        events = [decode_event(line) for line in lines]
    except LogError as exc:
        expected: Any = type(exc)
    else:
        expected = len(check_events(events).__class__.__name__) and len(events)
    try:
        got: Any = scan_lines(lines_of(log)).count
    except LogError as exc:
        got = type(exc)
    assert got == expected


@pytest.mark.parametrize("line", WRITTEN_FORMS, ids=lambda line: line.decode(errors="replace"))
def test_typed_path_agrees_on_how_a_line_is_written(line: bytes) -> None:
    lines = OPEN_STEP + (CALL_DISPATCHED if b"tool/output" in line and b'"seq":7' in line else [])
    checker = LogChecker()
    for prior in lines:
        assert feed_fast(checker, orjson.loads(prior)), prior
    typed_agrees(checker, line)


def test_typed_path_takes_the_plain_forms() -> None:
    # The control of the test above: written plainly, each is accepted by the typed path.
    for line, prior in (
        (_written(_CHUNK), OPEN_STEP),
        (_written(_OUTPUT), OPEN_STEP + CALL_DISPATCHED),
    ):
        checker = LogChecker()
        for before in prior:
            checker.feed(decode_event(before))
        assert typed_agrees(checker, line), line


def _file(events: list[Event], tail: bytes = b"") -> bytes:
    return encode_header(Header("s", 1)) + b"".join(map(encode_event, events)) + tail


@settings(max_examples=100, deadline=None)
@given(logs, st.data())
def test_streamed_truncate_agrees_with_truncate_open_turn(
    events: list[Event], data: st.DataObject
) -> None:
    cut = events[: data.draw(st.integers(0, len(events)))]
    fold = TruncateFold()
    scan = scan_lines(
        lines_of(_file(cut)), sink=fold.feed_fields, sink_types=fold.TYPES, line_sink=fold.feed_line
    )
    assert scan.count == len(cut)
    streamed = fold.report(scan.count)
    whole = truncate_open_turn(cut)
    assert streamed.to_json() == whole.to_json()
    assert list(streamed.dropped) == list(whole.dropped)
    assert streamed.kept == ()  # a stream keeps only the open turn


def test_the_streamed_truncate_holds_one_line_between_turns() -> None:
    # A closed turn, then many messages queued between turns: none is a candidate for
    # dropping, and the fold holds at most the last line (its memory is the longest turn's).
    events = generate_log(3, 2)
    closed = events[: next(i for i, e in enumerate(events) if e.type == "turn/end") + 1]
    queued = [
        Event(len(closed) + i, 10**6 + i, "agent/inbox/spliced", _insert(f"q{i}"))
        for i in range(200)
    ]
    fold = TruncateFold()
    held: list[int] = []

    def take(line: bytes) -> None:
        fold.feed_line(line)
        held.append(len(fold._lines))

    scan = scan_lines(
        lines_of(_file(closed + queued)),
        sink=fold.feed_fields,
        sink_types=fold.TYPES,
        line_sink=take,
    )
    assert scan.count == len(closed) + len(queued)
    assert max(held[len(closed) :]) == 1
    assert fold.report(scan.count).to_json() == truncate_open_turn(closed + queued).to_json()


def _insert(mid: str) -> dict[str, Any]:
    message = {"id": mid, "text": "later", "source": "user"}
    return {"target": "next-turn", "start": 0, "inserted": [message]}


def test_lines_of_cuts_like_a_binary_file(tmp_path: Path) -> None:
    events = generate_log(7, 5)
    for tail in (b"", b'{"seq":', b"\n", b"x\ny"):
        data = _file(events, tail)
        path = tmp_path / "log.jsonl"
        path.write_bytes(data)
        with path.open("rb") as f:
            assert list(lines_of(data)) == list(f)
        with path.open("rb") as f:
            from_file = scan_lines(f, strict=False)
        in_memory = scan_log(data, strict=False)
        assert from_file.count == len(in_memory.events)
        assert from_file.tail == in_memory.tail
        assert state(from_file.checker) == state(in_memory.checker)


def _one_long_step(chunks: int) -> Iterator[bytes]:
    """A log whose single step streams ``chunks`` chunks and ``chunks`` output lines, made
    line by line (never held)."""
    yield encode_header(Header("s", 1))
    seq = 0

    def line(type_: str, data: dict[str, Any]) -> bytes:
        nonlocal seq
        seq += 1
        return encode_event(Event(seq - 1, seq, type_, data))

    ts = {"turn": 1, "step": 1}
    msg = {"id": "m", "text": "go", "source": "user"}
    yield line("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
    yield line("turn/start", {"turn": 1})
    yield line(
        "agent/inbox/spliced",
        {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
    )
    yield line("step/start", ts)
    for _ in range(chunks):
        yield line("assistant/chunk", {**ts, "chunk": {"type": "text-delta", "text": "x" * 40}})
    call = {"type": "tool-call", "id": "c", "name": "bash", "arguments": {}}
    yield line("assistant/message", {**ts, "message": {"id": "a", "content": [call]}})
    yield line("tool/call", {**ts, "callId": "c", "name": "bash", "arguments": {}})
    for _ in range(chunks):
        yield line("tool/output", {**ts, "callId": "c", "stream": "stdout", "text": "y" * 40})


def _peak(chunks: int) -> int:
    tracemalloc.start()
    try:
        scan = scan_lines(_one_long_step(chunks))
        assert scan.count == 2 * chunks + 6
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_chunks_and_output() -> None:
    small, large = _peak(200), _peak(20_000)
    # 100x the events, the same peak give or take allocator noise: nothing is kept per line.
    assert large - small < 64 * 1024, (small, large)


def _agree(checker: LogChecker, obj: Any) -> None:
    """feed_fast and feed agree on ``obj`` from ``checker``'s state (which stays unchanged)."""
    fast, slow = copy.deepcopy(checker), copy.deepcopy(checker)
    obj = orjson.loads(orjson.dumps(obj))
    typed_agrees(checker, orjson.dumps(obj) + b"\n")
    accepted = feed_fast(fast, obj)
    try:
        slow.feed(event_from_json(obj))
        ok = True
    except LogError:
        ok = False
    assert accepted == ok, (obj, ok)
    assert state(fast) == state(slow if ok else checker)


@settings(max_examples=60, deadline=None)
@given(logs, st.data())
def test_fast_path_agrees_on_every_result_between_repair_closers(
    events: list[Event], data: st.DataObject
) -> None:
    # Part of a crash's closers written: a placeholder may stand while calls are pending.
    # Every pending call is then answered with each code (and none), isError either way.
    cut = events[: data.draw(st.integers(0, len(events)))]
    closers = repair_closers(cut)
    checker = check_events(cut + closers[: data.draw(st.integers(0, len(closers)))])
    if checker.open_step is None:
        return
    where = {"turn": checker.open_turn, "step": checker.open_step}
    codes = [None, *sorted(NOT_DISPATCHED_CODES | DISPATCHED_CODES)]
    for cid, _, _ in checker.unanswered_calls():
        for code in codes:
            for is_error in (True, False):
                result: dict[str, Any] = {**where, "callId": cid, "isError": is_error}
                result["content"] = "x"
                if code is not None:
                    result["error"] = {"code": code}
                line = {"seq": checker.next_seq, "time": 0, "type": "tool/result", "data": result}
                _agree(checker, line)


json_leaves = st.sampled_from((0, 1, 2, 0.0, 1.0, 2.5, True, False, "1", "true", ""))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=8,
)


def _twin(draw: Draw, value: Any) -> Any:
    """A value ``==`` to ``value`` in Python, with booleans and numbers maybe swapped."""
    if isinstance(value, dict):
        return {k: _twin(draw, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_twin(draw, v) for v in value]
    if type(value) in (bool, int, float) and value in (0, 1):
        return draw(st.sampled_from((value, bool(value), int(value), float(value))))
    return value


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("xyz"), json_values), st.data())
def test_fast_path_agrees_on_repeated_arguments(
    arguments: dict[str, Any], data: st.DataObject
) -> None:
    # I11: tool/call repeats its block's arguments as JSON values; true is not 1 (_same_json).
    where = {"turn": 1, "step": 1}
    block = {"type": "tool-call", "id": "c", "name": "bash", "arguments": arguments}
    prefix = [
        Event(0, 0, "turn/start", {"turn": 1}),
        Event(1, 0, "step/start", where),
        Event(2, 0, "assistant/message", {**where, "message": {"id": "a", "content": [block]}}),
    ]
    repeated = _twin(data.draw, arguments)
    call = {**where, "callId": "c", "name": "bash", "arguments": repeated}
    _agree(check_events(prefix), {"seq": 3, "time": 0, "type": "tool/call", "data": call})


@pytest.mark.parametrize(
    ("block_n", "call_n", "same"),
    [
        (2**53 + 1, 2**53, True),  # one binary64 value (spec/log.md §Values)
        (10**400, 10**400 + 1, True),  # both read as +Infinity, as JSON.parse does
        (10**400, -(10**400), False),
        (0.1, 0.30000000000000004 - 0.2, False),
    ],
    ids=["beyond-2^53", "beyond-binary64", "opposite-infinities", "decimal-rounding"],
)
def test_numbers_in_arguments_compare_as_binary64(block_n: Any, call_n: Any, same: bool) -> None:
    """I11 on Python-built events (the checker's own API, not a decoded line), numbers even
    beyond binary64's range: judged, never an OverflowError."""
    where = {"turn": 1, "step": 1}
    block = {"type": "tool-call", "id": "c", "name": "q", "arguments": {"n": block_n}}
    checker = check_events(
        [
            Event(0, 0, "turn/start", {"turn": 1}),
            Event(1, 0, "step/start", where),
            Event(2, 0, "assistant/message", {**where, "message": {"id": "a", "content": [block]}}),
        ]
    )
    call = {**where, "callId": "c", "name": "q", "arguments": {"n": call_n}}
    if same:
        checker.feed(Event(3, 0, "tool/call", call))
    else:
        with pytest.raises(LogError, match="I11"):
            checker.feed(Event(3, 0, "tool/call", call))


@pytest.mark.parametrize("dispatched", [True, False])
def test_fast_path_agrees_on_results_after_a_placeholder(dispatched: bool) -> None:
    # Two calls, the first closed by a placeholder (I17 then holds): every answer to the other.
    where = {"turn": 1, "step": 1}
    blocks = [{"type": "tool-call", "id": c, "name": "bash", "arguments": {}} for c in "ab"]
    prefix = [
        Event(0, 0, "turn/start", {"turn": 1}),
        Event(1, 0, "step/start", where),
        Event(2, 0, "assistant/message", {**where, "message": {"id": "m", "content": blocks}}),
        Event(3, 0, "tool/call", {**where, "callId": "a", "name": "bash", "arguments": {}}),
    ]
    if dispatched:
        prefix.append(
            Event(4, 0, "tool/call", {**where, "callId": "b", "name": "bash", "arguments": {}})
        )
    placeholder = {**where, "callId": "a", "isError": True, "content": "x"}
    placeholder["error"] = {"code": "TOOL_OUTCOME_UNKNOWN"}
    prefix.append(Event(len(prefix), 0, "tool/result", placeholder))
    checker = check_events(prefix)
    assert checker._repairing
    for code in [None, *sorted(NOT_DISPATCHED_CODES | DISPATCHED_CODES)]:
        for is_error in (True, False):
            result: dict[str, Any] = {**where, "callId": "b", "isError": is_error, "content": ""}
            if code is not None:
                result["error"] = {"code": code}
            _agree(checker, {"seq": len(prefix), "time": 0, "type": "tool/result", "data": result})
