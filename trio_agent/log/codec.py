"""JSON Lines codec for log format v1 (spec/log.md). Bytes in, values out; no I/O.

orjson is used for both directions: it is strict JSON (no NaN, no Infinity) and the
benchmark in bench/bench_log.py is why it is here (notes/2026-12-02-orjson.md).
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs
import orjson

from .data_predicates import DATA_PREDICATES, why_invalid
from .envelope import FORMAT_VERSION, MAX_INTEGER, Event, Header
from .errors import HeaderError, LogViolation, UnreadableLineError

_ENVELOPE: Final = ("seq", "time", "type", "data")

#: The deepest a line may nest arrays and objects, its own object being level 1 (spec/log.md
#: §Values): every JSON reader holds it, and every writer can write it.
MAX_DEPTH: Final = 100
#: A JSON string (skipped whole, so brackets inside it do not count), or one bracket.
_STRING_OR_BRACKET: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_OPENING: Final = frozenset(b"[{")


def too_deep(line: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``line`` nests arrays and objects deeper than ``limit`` levels (a log line's
    limit is :data:`MAX_DEPTH`, spec/log.md §Values; a line's ``data`` has one level less).
    Cheap for almost every line: JSON that deep holds more than ``limit`` opening brackets
    and as many closing ones, so a shorter line, or one with no more opening brackets,
    cannot be (a line that is not JSON is refused as such anyway); only the others are
    walked."""
    if len(line) <= 2 * limit + 1:
        return False
    raw = line.encode() if isinstance(line, str) else line
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        char = match.group()[0]
        if char in _OPENING:
            depth += 1
            if depth > limit:
                return True
        elif char != 0x22:  # a closing bracket (0x22 opens a skipped string)
            depth -= 1
    return False


def _too_deep_words() -> str:
    return f"nested deeper than {MAX_DEPTH} levels of arrays and objects"


def encode_header(header: Header) -> bytes:
    """The first line of a log file, newline included."""
    return (
        orjson.dumps(
            {
                "type": "session",
                "version": header.version,
                "id": header.id,
                "createdAt": header.created_at,
            }
        )
        + b"\n"
    )


def decode_header(line: bytes) -> Header:
    """Parse the header line (without its newline). Raises :class:`HeaderError`."""
    if too_deep(line):
        raise HeaderError(f"the header is not JSON this format reads ({_too_deep_words()})")
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:  # its reason names a byte order mark, for one
        raise HeaderError(f"the header is not JSON ({exc.args[0]})") from None
    if type(obj) is not dict or obj.get("type") != "session":
        raise HeaderError('not a trio_agent session log (no {"type":"session"} header)')
    version = obj.get("version")
    if type(version) is not int:
        raise HeaderError("header.version must be an integer")
    if version != FORMAT_VERSION:
        newer = "newer" if version > FORMAT_VERSION else "older"
        raise HeaderError(
            f"written by a {newer} log format (version {version}); "
            f"this build reads version {FORMAT_VERSION}"
        )
    ident = obj.get("id")
    if type(ident) is not str or not ident:
        raise HeaderError("header.id must be a non-empty string")
    created = obj.get("createdAt")
    if type(created) is not int or not 0 <= created <= MAX_INTEGER:
        raise HeaderError("header.createdAt must be an integer >= 0 and at most 2^53 - 1 (ms)")
    return Header(id=ident, created_at=created)


#: The JSON string of every v1 event type, encoded once: a line is built around it.
TYPE_JSON: Final = {name: orjson.dumps(name) for name in DATA_PREDICATES}
#: The one event line: ``EVENT_LINE % (seq, time, TYPE_JSON[type], orjson.dumps(data))``. Key
#: order is the envelope's (seq, time, type, data); the bytes are those of ``orjson.dumps`` of
#: the whole envelope. ``Session.append`` fills it in place with the data bytes it validated,
#: so an append encodes its data once.
EVENT_LINE: Final = b'{"seq":%d,"time":%d,"type":%b,"data":%b}\n'


def encode_event(event: Event) -> bytes:
    """One event line, newline included (:data:`EVENT_LINE` of the event)."""
    try:
        type_json = TYPE_JSON[event.type]
    except KeyError:  # not a v1 type: only an unchecked event gets here
        type_json = orjson.dumps(event.type)
    return EVENT_LINE % (event.seq, event.time, type_json, orjson.dumps(event.data))


def event_to_json(event: Event) -> dict[str, Any]:
    """The JSON object of an event, for callers that print or embed it."""
    return {"seq": event.seq, "time": event.time, "type": event.type, "data": event.data}


def decode_event(line: bytes | str, line_no: int | None = None) -> Event:
    """Decode one event line (without its newline).

    Raises :class:`UnreadableLineError` when the line is not JSON at all (or nests deeper
    than :data:`MAX_DEPTH`), and :class:`LogViolation` with rule ``I0`` when it is JSON but
    not a valid event.
    """
    if too_deep(line):
        raise UnreadableLineError(line_no or 0, f"not JSON this format reads ({_too_deep_words()})")
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise UnreadableLineError(line_no or 0, f"not JSON ({exc.args[0]})") from None
    return event_from_json(obj, line_no)


def event_from_json(obj: Any, line_no: int | None = None) -> Event:
    """The event of an already parsed line: rule ``I0`` as in :func:`decode_event`."""
    # Fast path: a well-formed event checks each envelope field once and touches nothing else.
    if type(obj) is dict and len(obj) == 4:
        try:  # a missing key falls through to the explanation
            seq = obj["seq"]
            time = obj["time"]
            type_ = obj["type"]
            data = obj["data"]
        except KeyError:
            pass
        else:
            # ``type_`` must be a str before the lookup: a JSON array or object is unhashable.
            if (
                type(seq) is int
                and 0 <= seq <= MAX_INTEGER
                and type(time) is int
                and 0 <= time <= MAX_INTEGER
                and type(type_) is str
            ):
                valid = DATA_PREDICATES.get(type_)
                if valid is not None and valid(data):
                    return Event(seq, time, type_, data)
    raise _envelope_violation(obj, line_no)


def _envelope_violation(obj: Any, line_no: int | None) -> LogViolation:
    if type(obj) is not dict:
        return LogViolation("I0", None, "an event must be a JSON object", line_no)
    seq = obj.get("seq")
    # A seq beyond 2^53 - 1 is not an integer this format reads: shown as "?" (spec/cli.md).
    shown_seq = seq if type(seq) is int and -MAX_INTEGER <= seq <= MAX_INTEGER else None

    def bad(message: str) -> LogViolation:
        return LogViolation("I0", shown_seq, message, line_no)

    extra = sorted(set(obj) - set(_ENVELOPE))
    if extra:
        return bad(f"unexpected envelope key {extra[0]!r} (an event has seq, time, type, data)")
    for key in _ENVELOPE:
        if key not in obj:
            return bad(f"{key}: missing")
    if type(seq) is not int or not 0 <= seq <= MAX_INTEGER:
        return bad("seq: expected an integer >= 0 and at most 2^53 - 1")
    time = obj["time"]
    if type(time) is not int or not 0 <= time <= MAX_INTEGER:
        return bad("time: expected an integer >= 0 and at most 2^53 - 1 (ms)")
    if type(obj["type"]) is not str:
        return bad("type: expected a string")
    return bad(why_invalid(obj["type"], obj["data"]))


@attrs.frozen
class SplitLog:
    """A log file cut into its complete lines and a torn tail (spec/log.md §Torn tail)."""

    header: bytes | None
    #: (1-based line number, line without newline) for every complete line after the header.
    lines: list[tuple[int, bytes]]
    #: bytes after the last newline; empty when the file ends with a newline.
    torn_tail: bytes
    #: byte offset just past the last complete line (the committed length).
    committed_bytes: int


def split_log(data: bytes) -> SplitLog:
    """Cut raw file bytes into header, complete lines and torn tail. Never raises."""
    end = data.rfind(b"\n") + 1
    torn = data[end:]
    if end == 0:
        return SplitLog(None, [], torn, 0)
    parts = data[: end - 1].split(b"\n")
    return SplitLog(parts[0], list(enumerate(parts[1:], start=2)), torn, end)
