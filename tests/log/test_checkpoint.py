"""Cold-open checkpoints (trio_agent/log/checkpoint.py): restoring one and replaying the tail
gives the full scan's state; every refusal names its reason."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs
import pytest
from hypothesis import given, strategies as st
from support.checker_state import checker_state

from trio_agent.log import checkpoint as ck
from trio_agent.log.checker import LogChecker
from trio_agent.log.codec import encode_event, encode_header
from trio_agent.log.events import Event, Header
from trio_agent.testing.loggen import generate_log

HEADER = encode_header(Header(id="s1", created_at=1000))


def lines_of(events: list[Event]) -> list[bytes]:
    return [HEADER, *(encode_event(e) for e in events)]


def balanced_points(events: list[Event]) -> list[int]:
    """Indexes i such that events[:i] ends with a turn/end (or is empty)."""
    return [0] + [i + 1 for i, e in enumerate(events) if e.type == "turn/end"]


@given(st.integers(0, 2**32), st.integers(1, 6), st.data())
def test_checkpoint_plus_tail_equals_full_scan(seed: int, turns: int, data: st.DataObject) -> None:
    events = generate_log(seed, turns)
    cut = events[: data.draw(st.integers(0, len(events)), label="cut")]
    point = data.draw(st.sampled_from(balanced_points(cut)), label="point")
    lines = lines_of(cut)
    prefix = LogChecker()
    prefix.feed_all(cut[:point])
    offset = sum(map(len, lines[: point + 1]))
    cp = ck.take(
        prefix,
        session="s1",
        offset=offset,
        header_line=lines[0],
        last_line=lines[point],
        file_id="1:2",
    )
    decoded = ck.decode(ck.encode(cp))
    assert decoded == cp
    ck.verify(decoded, size=offset, header_line=lines[0], last_line=lines[point], file_id="1:2")
    resumed = ck.restore(decoded)
    resumed.feed_all(cut[point:])
    full = LogChecker()
    full.feed_all(cut)
    assert checker_state(resumed) == checker_state(full)


def _log() -> tuple[list[bytes], ck.Checkpoint]:
    events = generate_log(7, 3)
    lines = lines_of(events)
    point = balanced_points(events)[2]
    checker = LogChecker()
    checker.feed_all(events[:point])
    cp = ck.take(
        checker,
        session="s1",
        offset=sum(map(len, lines[: point + 1])),
        header_line=lines[0],
        last_line=lines[point],
        file_id="1:2",
    )
    return lines, cp


def test_an_open_turn_is_not_checkpointed() -> None:
    events = generate_log(3, 2)
    checker = LogChecker()
    checker.feed_all(events[:2])
    assert checker.open_turn is not None
    with pytest.raises(ValueError, match="open"):
        ck.take(checker, session="s", offset=1, header_line=b"", last_line=b"", file_id=None)


@pytest.mark.parametrize(
    "damage",
    [lambda b: b[: len(b) // 2], lambda b: b.replace(b'"seq":', b'"seq":1'), lambda b: b"", b"[]"],
    ids=["torn-half", "edited", "empty", "not-an-object"],
)
def test_a_torn_or_edited_sidecar_is_refused_as_torn(damage: Any) -> None:
    _lines, cp = _log()
    data = ck.encode(cp)
    bad = damage(data) if callable(damage) else damage
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.decode(bad)
    assert info.value.reason == ck.TORN


def test_another_format_is_refused_as_unsupported() -> None:
    _lines, cp = _log()

    body = json.loads(ck.encode(cp))
    del body["digest"]
    body["format"] = "trio-agent-checkpoint/2"
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    body["digest"] = hashlib.sha256(raw).hexdigest()
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.decode(json.dumps(body).encode())
    assert info.value.reason == ck.UNSUPPORTED


def test_each_mismatch_is_refused_with_its_reason() -> None:
    lines, cp = _log()
    point = next(i for i in range(len(lines)) if sum(map(len, lines[: i + 1])) == cp.offset)
    good: dict[str, Any] = {
        "size": sum(map(len, lines)),
        "header_line": lines[0],
        "last_line": lines[point],
        "file_id": "1:2",
    }
    ck.verify(cp, **good)  # the intact case passes

    cases: dict[str, dict[str, Any]] = {
        ck.TRUNCATED: {"size": cp.offset - 1, "last_line": b""},
        ck.COPIED: {"file_id": "9:9"},
        # another session's log put in its place
        ck.MISMATCHED: {"header_line": encode_header(Header(id="s2", created_at=1000))},
    }
    for reason, change in cases.items():
        with pytest.raises(ck.CheckpointRefused) as info:
            ck.verify(cp, **{**good, **change})
        assert info.value.reason == reason, change
    # rewritten at the offset: the line ending there is another one
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.verify(cp, **{**good, "last_line": lines[point - 1]})
    assert info.value.reason == ck.MISMATCHED


def _resealed(cp: ck.Checkpoint, **changes: Any) -> bytes:
    """``cp`` encoded with ``changes`` to its body and a digest that matches them: a sidecar
    that is whole but says what another program (or a bug) wrote."""
    body = json.loads(ck.encode(cp))
    del body["digest"]
    body.update(changes)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["digest"] = hashlib.sha256(canonical.encode()).hexdigest()
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    "changes",
    [
        {"offset": -5},
        {"offset": 0},
        {"seq": -1},
        {"lastTime": 2**60},
        {"lastTurn": True},
        {"inbox": {"next-turn": [{"id": "m"}], "next-step": []}},
        {"inbox": {"next-turn": [7], "next-step": []}},
        {"inbox": {"next-turn": [], "next-step": [], "later": []}},
        {
            "inbox": {
                "next-turn": [{"id": "m", "text": "a", "source": "user"}],
                "next-step": [{"id": "m", "text": "b", "source": "user"}],
            }
        },
        {"callIds": ["c1", 2]},
        {"callIds": "c1"},
        {"approvalIds": [["a1"]]},
        {"approvalIds": ["a1", True]},
    ],
    ids=[
        "negative-offset",
        "zero-offset",
        "negative-seq",
        "time-beyond-2^53",
        "bool-turn",
        "message-without-text",
        "message-not-an-object",
        "third-queue",
        "message-id-twice",
        "call-id-not-a-string",
        "call-ids-not-a-list",
        "approval-id-a-list",
        "approval-id-true",
    ],
)
def test_a_whole_sidecar_with_values_no_checker_holds_is_unsupported(
    changes: dict[str, Any],
) -> None:
    """Restoring must never fail: every value is checked when the sidecar is read."""
    _lines, cp = _log()
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.decode(_resealed(cp, **changes))
    assert info.value.reason == ck.UNSUPPORTED


@pytest.mark.parametrize(
    "changes",
    [{"seq": 3}, {"lastTime": 1}, {"lastTurn": 9}, {"session": "s2"}],
    ids=["seq", "time", "turn", "session"],
)
def test_a_state_that_is_not_that_of_its_lines_is_mismatched(changes: dict[str, Any]) -> None:
    """The digests pin the lines; the state must be theirs too, or the tail would be misread
    (a seq too low, say, makes the tail's first event look like a gap, and repair cut it)."""
    lines, cp = _log()
    point = next(i for i in range(len(lines)) if sum(map(len, lines[: i + 1])) == cp.offset)
    bad = ck.decode(_resealed(cp, **changes))
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.verify(
            bad,
            size=sum(map(len, lines)),
            header_line=lines[0],
            last_line=lines[point],
            file_id="1:2",
        )
    assert info.value.reason == ck.MISMATCHED


# -- reading a sidecar as a log line is read (spec/persistence.md §5.1, log.md §Torn tail) ---


def _odd_sidecar(value_json: bytes) -> bytes:
    """A sidecar of :func:`_log`'s checkpoint with ``value_json`` (raw bytes) under an
    extension key of a queued message, its digest over the bytes as written, as a reader
    that hashed what it was given would compute it."""
    _lines, cp = _log()
    body = json.loads(ck.encode(cp))
    del body["digest"]
    body["inbox"]["next-turn"] = [{"id": "m9", "text": "hi", "source": "user", "x": "ODD"}]
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    raw = raw.replace(b'"ODD"', value_json)
    digest = hashlib.sha256(raw).hexdigest().encode()
    return raw.replace(b'{"approvalIds"', b'{"digest":"' + digest + b'","approvalIds"', 1) + b"\n"


@pytest.mark.parametrize(
    "value_json",
    [
        b"NaN",
        b"-Infinity",
        b'"\\ud800"',
        b'"\\udc00\\ud800"',
        b"[" * 97 + b"]" * 97,
        b"[" * 100_000,
    ],
    ids=["nan", "infinity", "lone-high", "swapped-pair", "101-levels", "100000-levels"],
)
def test_json_no_log_line_could_hold_is_torn_and_never_an_error(value_json: bytes) -> None:
    """Python's json takes NaN and lone surrogates (and then cannot write the latter as UTF-8
    to check the digest), and runs out of stack on deep nesting: none of it reaches here."""
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.decode(_odd_sidecar(value_json))
    assert info.value.reason == ck.TORN


def test_the_odd_sidecar_is_whole_but_for_its_odd_value() -> None:
    """The helper above makes sidecars that only their value spoils: with a plain one, it is
    used."""
    decoded = ck.decode(_odd_sidecar(b"[[1]]"))
    assert decoded.inbox["next-turn"][0]["x"] == [[1]]


@given(st.binary(max_size=300) | st.integers(0, 10_000).map(lambda cut: ck.encode(_log()[1])[:cut]))
def test_any_bytes_decode_or_are_refused(data: bytes) -> None:
    """Arbitrary bytes, and every cut of a valid sidecar (a torn write)."""
    try:
        ck.decode(data)
    except ck.CheckpointRefused as refused:
        assert refused.reason in (ck.TORN, ck.UNSUPPORTED)


@given(st.data())
def test_any_damage_to_a_sidecar_is_refused_or_changes_nothing(data: st.DataObject) -> None:
    _lines, cp = _log()
    good = bytearray(ck.encode(cp))
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        at = data.draw(st.integers(0, len(good) - 1), label="at")
        good[at] = data.draw(st.sampled_from(b'"\\[]{}:,0aN\xff\n'), label="byte")
    try:
        decoded = ck.decode(bytes(good))
    except ck.CheckpointRefused as refused:
        assert refused.reason in (ck.TORN, ck.UNSUPPORTED)
    else:  # only an edit that leaves the same value can keep the digest right
        assert decoded == cp


def test_a_line_too_deep_for_python_s_json_is_mismatched_not_an_error() -> None:
    """verify reads the header and the line at the offset once their digests match: a
    sidecar written for such lines (by another program) is refused, never a crash."""
    _lines, cp = _log()
    deep = b"[" * 100_000 + b"\n"
    odd = attrs.evolve(cp, header_line=ck.line_digest(deep), last_line=ck.line_digest(deep))
    with pytest.raises(ck.CheckpointRefused) as info:
        ck.verify(odd, size=cp.offset, header_line=deep, last_line=deep, file_id="1:2")
    assert info.value.reason == ck.MISMATCHED


# -- the canonical form: orjson where it writes what json writes -----------------------------

_JSON_TEXT = st.text(st.characters(exclude_categories=["Cs"]))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_the_canonical_form_is_json_s_for_every_value(value: Any) -> None:
    """The readable definition (spec/persistence.md §5.1) against the fast path: the same
    bytes for every JSON value, floats and integers beyond 64 bits included."""
    readable = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert ck._canonical(value) == readable.encode()


def test_ids_are_sets_whatever_their_order() -> None:
    _lines, cp = _log()
    assert len(cp.call_ids) > 1
    shuffled = attrs.evolve(cp, call_ids=tuple(reversed(cp.call_ids)))
    assert shuffled == cp
    assert ck.encode(shuffled) == ck.encode(cp)
