"""Cold-open checkpoints: the checker's state at a balanced prefix, encoded, decoded and
verified (pure: no I/O, no trio). spec/persistence.md §5.1: the file store records one
beside a long log and resumes a cold open from it.

A checkpoint is taken only where no turn is open (just after a ``turn/end``). There the state
table of spec/invariants.md §State a checker keeps reduces to what outlives a turn: next seq,
last turn, the last step of that turn, the last event's time, the used call ids (I10), the
used approval ids (I12) and the inbox (I18); the open step, its requested calls, open
approvals and ``repairing`` are all empty by definition (and its phase is of no step). A
checkpoint so never holds a half-open step, and the tail a cold open replays is exactly the
part that repair may cut or close (spec/recovery.md).

What identifies the prefix: its size in bytes, the SHA-256 of the header line and of the last
line of the prefix (the ``turn/end`` with seq ``seq - 1``), and an opaque file identity the
store supplies (device and inode), so that a log truncated below the offset, rewritten at the
offset, swapped for another session's, or copied elsewhere with its sidecar is refused. A
writer that appended without recording a checkpoint only lengthens the tail, which is replayed
and checked anyway. A running digest of the whole prefix would also catch a rewrite in the
middle of the prefix, but verifying it needs reading the prefix, which is what a checkpoint
avoids; the same goes for every scheme that checks more than a bounded number of bytes.

The encoding is one line of JSON with a ``digest`` over the rest (canonical JSON: sorted keys,
no spaces, UTF-8), so a torn or garbled sidecar is told apart from a stale one. A sidecar is
read as a log line is (spec/log.md §Torn tail): JSON that a log line could not be is torn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

import attrs
import orjson

from .checker import LogChecker
from .codec import MAX_DEPTH, too_deep
from .data_predicates import DATA_PREDICATES, why_invalid
from .envelope import MAX_INTEGER

#: The ``format`` value of this version of the checkpoint encoding.
FORMAT: Final = "trio-agent-checkpoint/1"

#: Why a cold open did not use a checkpoint (the fallback reasons; each means: full scan).
MISSING: Final = "missing"  # no sidecar file
UNREADABLE: Final = "unreadable"  # the sidecar exists but reading it failed (the OS said why)
TORN: Final = "torn"  # not one JSON object, or its digest does not match its content
UNSUPPORTED: Final = "unsupported"  # another format version
TRUNCATED: Final = "truncated"  # the log is shorter than the checkpoint's offset
MISMATCHED: Final = "mismatched"  # header or last line of the prefix differs: rewritten/swapped
COPIED: Final = "copied"  # the file identity differs: the log is another file now
REASONS: Final = (MISSING, UNREADABLE, TORN, UNSUPPORTED, TRUNCATED, MISMATCHED, COPIED)


def line_digest(line: bytes) -> str:
    """SHA-256 hex of one log line as stored (its newline included)."""
    return hashlib.sha256(line).hexdigest()


@attrs.frozen
class Checkpoint:
    """The checker's state after a balanced prefix, and what identifies that prefix."""

    session: str
    #: Bytes of the prefix (header included); it ends just after a ``turn/end`` line.
    offset: int
    #: The seq of the next event (the checker's ``next_seq``).
    seq: int
    header_line: str
    last_line: str
    #: Opaque identity of the file (e.g. ``"dev:ino"``), or ``None`` when the store has none.
    file_id: str | None
    last_turn: int
    #: The last step of the last turn (spec/invariants.md "last step"; ``turn/start`` resets it,
    #: so it does not change what is accepted, but it is kept for an exact state).
    last_step: int
    last_time: int
    #: Sets (no id twice, compared as sets) held in the order the checker accepted them (a
    #: decoded checkpoint's in the sidecar's order, sorted): :func:`take` copies them as they
    #: are (cheap, on the appending thread) and :func:`encode` sorts them (on the writer's
    #: thread), which after a restore is one sorted run and the tail's few ids.
    call_ids: tuple[str, ...] = attrs.field(eq=frozenset)
    approval_ids: tuple[str, ...] = attrs.field(eq=frozenset)
    #: The inbox queues, ``{target: [message, ...]}`` (spec/log.md §agent/inbox/spliced).
    inbox: Mapping[str, tuple[Mapping[str, Any], ...]]


def take(
    checker: LogChecker,
    *,
    session: str,
    offset: int,
    header_line: bytes,
    last_line: bytes,
    file_id: str | None,
) -> Checkpoint:
    """A checkpoint of ``checker``, which has been fed exactly the prefix of ``offset`` bytes
    ending in ``last_line``. Raises :class:`ValueError` when a turn is open."""
    if checker.open_turn is not None:
        raise ValueError(f"turn {checker.open_turn} is open: a checkpoint needs a balanced prefix")
    return Checkpoint(
        session=session,
        offset=offset,
        seq=checker.next_seq,
        header_line=line_digest(header_line),
        last_line=line_digest(last_line),
        file_id=file_id,
        last_turn=checker.last_turn,
        last_step=checker._last_step,
        last_time=checker.last_time,
        call_ids=tuple(checker._call_ids),
        approval_ids=tuple(checker._approval_ids),
        inbox={t: tuple(q) for t, q in checker.inbox.queues.items()},
    )


def restore(cp: Checkpoint) -> LogChecker:
    """A checker in the state :func:`take` recorded: feeding it the tail gives the same state
    as feeding the whole log to a new one."""
    checker = LogChecker()
    checker.next_seq = cp.seq
    checker.last_turn = cp.last_turn
    checker._last_step = cp.last_step
    checker.last_time = cp.last_time
    checker._call_ids = dict.fromkeys(cp.call_ids)
    checker._approval_ids = dict.fromkeys(cp.approval_ids)
    for target, queue in cp.inbox.items():
        checker.inbox.queues[target] = list(queue)
        checker.inbox._ids.update(m["id"] for m in queue)
    return checker


def _body(cp: Checkpoint) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "session": cp.session,
        "offset": cp.offset,
        "seq": cp.seq,
        "headerLine": cp.header_line,
        "lastLine": cp.last_line,
        "fileId": cp.file_id,
        "lastTurn": cp.last_turn,
        "lastStep": cp.last_step,
        "lastTime": cp.last_time,
        "callIds": sorted(cp.call_ids),
        "approvalIds": sorted(cp.approval_ids),
        "inbox": {t: list(q) for t, q in cp.inbox.items()},
    }


def _canonical(obj: Any) -> bytes:
    """``obj`` written canonically (spec/persistence.md §5.1): members sorted by name at every
    level, no white space, UTF-8 (nothing escaped to ASCII), numbers as Python's ``json``
    writes them. orjson writes the same bytes, faster (tests/log/test_checkpoint.py holds it
    to that), for every value but a float, which it may spell otherwise (``1e-7`` for
    ``1e-07``), and an integer beyond 64 bits, which it refuses."""
    if not _holds_float(obj):
        try:
            return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits
            pass
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_CONTAINERS: Final = frozenset({dict, list, tuple})


def _holds_float(value: Any) -> bool:
    """Whether a float is anywhere in ``value``. A list of ids is one pass of ``map``."""
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        return any(map(_holds_float, value.values()))
    if kind is list or kind is tuple:
        kinds = set(map(type, value))
        if float in kinds:
            return True
        return not kinds.isdisjoint(_CONTAINERS) and any(map(_holds_float, value))
    return False


def encode(cp: Checkpoint) -> bytes:
    """The sidecar's bytes: one canonical JSON line with ``digest`` = SHA-256 of the rest."""
    body = _body(cp)
    body["digest"] = hashlib.sha256(_canonical(body)).hexdigest()
    return _canonical(body) + b"\n"


class CheckpointRefused(ValueError):
    """A checkpoint that must not be used; :attr:`reason` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def decode(data: bytes) -> Checkpoint:
    """Parse a sidecar's bytes; raises :class:`CheckpointRefused` (``torn`` or
    ``unsupported``) for anything but an intact checkpoint of this format."""
    obj = _read_json(data)
    if obj is None:
        raise CheckpointRefused(TORN, "not one JSON object (as a log line reads it)")
    if not isinstance(obj, dict) or not isinstance(obj.get("digest"), str):
        raise CheckpointRefused(TORN, "no digest")
    digest = obj.pop("digest")
    if hashlib.sha256(_canonical(obj)).hexdigest() != digest:
        raise CheckpointRefused(TORN, "the digest does not match the content")
    if obj.get("format") != FORMAT:
        raise CheckpointRefused(UNSUPPORTED, f"format {obj.get('format')!r}, not {FORMAT!r}")
    try:
        cp = Checkpoint(
            session=_typed(obj["session"], str),
            offset=_typed(obj["offset"], int),
            seq=_typed(obj["seq"], int),
            header_line=_typed(obj["headerLine"], str),
            last_line=_typed(obj["lastLine"], str),
            file_id=None if obj["fileId"] is None else _typed(obj["fileId"], str),
            last_turn=_typed(obj["lastTurn"], int),
            last_step=_typed(obj["lastStep"], int),
            last_time=_typed(obj["lastTime"], int),
            call_ids=_ids(obj["callIds"]),
            approval_ids=_ids(obj["approvalIds"]),
            inbox={
                t: tuple(_typed(m, dict) for m in _typed(q, list))
                for t, q in _typed(obj["inbox"], dict).items()
            },
        )
    except (KeyError, TypeError) as exc:
        # A digest that matches a malformed body: written by another program, not torn.
        raise CheckpointRefused(UNSUPPORTED, f"malformed checkpoint ({exc})") from None
    if set(cp.inbox) != {"next-turn", "next-step"}:
        raise CheckpointRefused(UNSUPPORTED, "the inbox must have next-turn and next-step")
    _check_values(cp)
    return cp


def _check_values(cp: Checkpoint) -> None:
    """Refuse (``unsupported``) values no checker state can hold: a sidecar's digest proves
    only that it is whole, not who wrote it, and restoring must never fail."""
    for name, value, least in (
        ("offset", cp.offset, 1),
        ("seq", cp.seq, 0),
        ("lastTurn", cp.last_turn, 0),
        ("lastStep", cp.last_step, 0),
        ("lastTime", cp.last_time, 0),
    ):
        if not least <= value <= MAX_INTEGER:
            raise CheckpointRefused(UNSUPPORTED, f"{name} {value} is out of range")
    ids: set[str] = set()
    spliced_ok = DATA_PREDICATES["agent/inbox/spliced"]
    for target, queue in cp.inbox.items():
        # each queued message as a splice would insert it (spec/log.md)
        splice = {"target": target, "start": 0, "inserted": list(queue)}
        if not spliced_ok(splice):
            why = why_invalid("agent/inbox/spliced", splice, "inbox")
            raise CheckpointRefused(UNSUPPORTED, f"inbox {target}: {why}")
        for message in queue:
            if message["id"] in ids:
                raise CheckpointRefused(UNSUPPORTED, f"message id {message['id']!r} twice")
            ids.add(message["id"])


def _typed(value: Any, kind: type[Any]) -> Any:
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _ids(value: Any) -> tuple[str, ...]:
    """A list of ids as a set, in the list's order; ``TypeError`` unless every item is a
    string. The lists hold every call and approval id of the prefix (31,766 on the 286 MB
    bench log), so the items are typed in one pass of ``map``, not one call each."""
    ids = tuple(dict.fromkeys(_typed(value, list)))  # TypeError for an unhashable item
    kinds = set(map(type, ids))
    if not kinds <= {str}:
        strange = sorted(k.__name__ for k in kinds - {str})
        raise TypeError(f"expected ids as str, got {', '.join(strange)}")
    return ids


def verify(
    cp: Checkpoint,
    *,
    size: int,
    header_line: bytes,
    last_line: bytes,
    file_id: str | None,
) -> None:
    """Raise :class:`CheckpointRefused` unless ``cp`` describes the log as found: ``size`` is
    the log's length now, ``header_line`` its first line, ``last_line`` the line that ends at
    ``cp.offset`` (empty when the log is shorter), ``file_id`` the log's identity now."""
    if size < cp.offset:
        raise CheckpointRefused(TRUNCATED, f"the log has {size} bytes, the checkpoint {cp.offset}")
    if cp.file_id is not None and file_id != cp.file_id:
        raise CheckpointRefused(COPIED, f"the log is file {file_id}, the checkpoint's {cp.file_id}")
    if line_digest(header_line) != cp.header_line:
        raise CheckpointRefused(MISMATCHED, "the header line differs")
    if line_digest(last_line) != cp.last_line:
        raise CheckpointRefused(MISMATCHED, f"the line ending at byte {cp.offset} differs")
    # The lines are the checkpoint's; now its state must be theirs: the session the header
    # names, and the seq, time and turn of the turn/end it ends at (or the header itself).
    # A checkpoint whose state disagrees would misread the tail, and repair might cut it.
    if _member(header_line, "id") != cp.session:
        raise CheckpointRefused(MISMATCHED, "the header names another session")
    if cp.seq == 0:
        if last_line != header_line:
            raise CheckpointRefused(MISMATCHED, "seq 0, but the prefix holds events")
        return
    ends = (
        _member(last_line, "type"),
        _member(last_line, "seq"),
        _member(last_line, "time"),
        _member(last_line, "data", "turn"),
    )
    if ends != ("turn/end", cp.seq - 1, cp.last_time, cp.last_turn):
        raise CheckpointRefused(
            MISMATCHED, "the checkpoint's seq, time or turn is not that of the turn/end it ends at"
        )


def _read_json(data: bytes) -> Any:
    """The JSON value of one line, read as a log line is (spec/log.md §Torn tail): ``None``
    when it is not JSON, nests deeper than :data:`MAX_DEPTH` levels, or holds what only a
    lenient reader takes (invalid UTF-8, an escaped lone surrogate, a byte order mark,
    ``NaN``). Python's ``json`` takes the last three, and runs out of stack on deep nesting."""
    if too_deep(data, MAX_DEPTH):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _member(line: bytes, *path: str) -> Any:
    """The value at ``path`` in the JSON object of ``line``, or None."""
    value = _read_json(line)
    for key in path:
        if type(value) is not dict:
            return None
        value = value.get(key)
    return value
