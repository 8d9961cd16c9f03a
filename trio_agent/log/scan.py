"""Reading a whole log file's bytes: strict for ``check``, tail-tolerant for recovery.

spec/recovery.md §Torn tail and corruption:

* a final line without a newline is a torn tail in both modes: reported, never an error;
* ``strict`` (``trio-agent check``): any other bad line is an error;
* recovery (``strict=False``; ``repair``, the store's cold open): a bad complete line, or an
  event breaking a rule, is the start of a torn tail when no complete line from it on is a
  ``turn/end``: nothing after it was ever committed. If one is (the bad line itself
  included, e.g. a ``turn/end`` whose seq leaves a gap; well-formed or not), the damage is
  inside committed data: corruption, raised as the error found.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Final

import attrs
import orjson

from .checker import LogChecker
from .checker_fast import feed_fast
from .checker_typed import (
    HOT_TYPES,
    TYPED_ERRORS,
    decode_typed,
    feed_typed,
    typed_kinds,
)
from .codec import decode_event, decode_header, event_from_json, too_deep
from .envelope import Event, Header
from .errors import HeaderError, LogError, LogViolation, UnreadableLineError

_TORN_REASON: Final = "final line has no newline (torn write)"
_NEWLINE: Final = 10


@attrs.frozen
class TornTail:
    """The part of a file recovery ignores: from ``line`` (1-based) to the end of the file."""

    line: int
    offset: int  # byte offset where the tail starts; the file's committed length
    size: int  # bytes in the tail
    reason: str  # why it is not part of the log
    #: Complete lines in the tail, the damaged one included (none for a torn final line).
    lines: int
    #: Whether the tail, and so the file, ends in a line without its newline (a torn write).
    torn: bool


@attrs.frozen
class LineScan:
    """What a streamed reading keeps: no events, only the checker's state and counts."""

    header: Header
    #: The checker after every kept event: open turn, pending calls, inbox, last time.
    checker: LogChecker
    #: Kept events (complete, accepted lines after the header).
    count: int
    tail: TornTail | None
    #: Bytes read: the offset just past the last line (the end of the prefix when resuming,
    #: if no line followed it).
    end: int
    #: The header line as read, newline included (a checkpoint holds its digest).
    header_line: bytes = b""

    @property
    def last_time(self) -> int:
        return self.checker.last_time


@attrs.frozen
class Scan:
    header: Header
    events: list[Event]
    #: The checker after every kept event: open turn, pending calls, inbox.
    checker: LogChecker
    tail: TornTail | None

    @property
    def last_time(self) -> int:
        return self.events[-1].time if self.events else 0


#: Takes a kept event as its fields: ``seq``, ``time``, ``type`` and ``data`` as written. Not
#: an :class:`Event`: a fold keeps few of the events it reads, and builds only those.
Sink = Callable[[int, int, str, Mapping[str, Any]], None]


@attrs.frozen
class Resume:
    """Where a scan of a log's tail starts (spec/persistence.md §5.1): the log's header line
    (newline included), a checker in the state after the prefix
    (:func:`trio_agent.log.checkpoint.restore`) and the prefix's length in bytes. The
    checker is fed the tail: it is not copied."""

    header_line: bytes
    checker: LogChecker
    offset: int


def scan_lines(
    lines: Iterable[bytes],
    *,
    strict: bool = True,
    sink: Sink | None = None,
    sink_types: Collection[str] | None = None,
    line_sink: Callable[[bytes], None] | None = None,
    resume: Resume | None = None,
    item_sink: Callable[[object], None] | None = None,
) -> LineScan:
    """Decode and check a log given as its lines, in one pass, keeping no events.

    ``lines`` yields the file's bytes cut after each newline, each line keeping its newline
    (iterating a binary file object does exactly this; only the last line may lack one).
    ``sink``, when given, receives the fields of every kept event in order (only those whose
    type is in ``sink_types``, when given; :data:`Sink`), so a caller folds the log without
    holding it. The reading rules are :func:`scan_log`'s (module docstring). ``line_sink``,
    when given, receives the line (newline included) of every kept event, without decoding
    it again: the store keeps a live session's log this way
    (:class:`~trio_agent.log.lines.EventLines`). Memory is the checker's state plus one
    line, whatever the log's length.
    ``item_sink``, when given, receives for every kept event what the scan accepted it as:
    its typed envelope (:mod:`~trio_agent.log.checker_typed`) when the typed path took it,
    else its line (newline included); ``show`` renders the hot lines from the envelope
    instead of parsing them again (:mod:`~trio_agent.log.render_fast`).

    ``resume``, when given, says that ``lines`` are the tail of a log after a prefix already
    checked (no header line; the counts, offsets and line numbers go on from the prefix).

    A valid line is parsed once and no event is built for it: msgspec decodes it into a
    typed envelope that :func:`~trio_agent.log.checker_typed.feed_typed` accepts; a shape
    those structs do not describe is parsed with orjson and accepted by
    :func:`~trio_agent.log.checker_fast.feed_fast`. Anything either declines (every line
    that breaks a rule) goes through :func:`decode_event` and :meth:`LogChecker.feed`, the
    explanatory path that words the error.
    """
    it = iter(lines)
    if resume is None:
        first = next(it, b"")
        checker = LogChecker()
        offset = len(first)
    else:
        first, checker, offset = resume.header_line, resume.checker, resume.offset
    if not first or first[-1] != _NEWLINE:
        if first:
            raise HeaderError("the header line is incomplete (no newline)")
        raise HeaderError("the file is empty (no session header)")
    header = decode_header(first[:-1])
    # The structs of the hot types drop the unknown keys an event keeps, so a sink that
    # takes them would pay a second parse of each of their lines: the typed path is only
    # taken when the sink wants none of them, and then it hands on envelopes whose data
    # is the dict as written.
    typed_pays = sink is None or (sink_types is not None and not HOT_TYPES & set(sink_types))
    typed, typed_errors, fast_typed = decode_typed, TYPED_ERRORS, feed_typed
    # envelope class -> event type, for the types the sink takes
    sunk = typed_kinds(sink_types) if typed_pays and sink_types is not None else {}
    fast = feed_fast
    feed = checker.feed
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    # Every kept event advanced the checker's next_seq by one (I1, from 0), so next_seq is
    # the count of kept events and the line being read is line next_seq + 2 (1-based).
    tail: TornTail | None = None
    for line in it:
        if line[-1] != _NEWLINE:  # only the last line can lack its newline: a torn write
            tail = TornTail(checker.next_seq + 2, offset, len(line), _TORN_REASON, 0, True)
            break
        ev = None
        if typed_pays:
            # not contextlib.suppress: a context manager per line costs measurably
            try:  # noqa: SIM105
                ev = typed(line)
            except typed_errors:
                pass
        if ev is not None and fast_typed(checker, ev, line):  # the hot path: most lines
            if sink is not None and type(ev) in sunk:
                sink(ev.seq, ev.time, sunk[type(ev)], ev.data)
            if line_sink is not None:
                line_sink(line)
            if item_sink is not None:
                item_sink(ev)
            offset += len(line)
            continue
        obj: Any = _UNREADABLE
        if not too_deep(line):  # one nested too deep is left to decode_event, which says so
            # not contextlib.suppress, as above
            try:  # noqa: SIM105
                obj = loads(line)
            except decode_error:
                pass
        if obj is not _UNREADABLE and fast(checker, obj):  # the other shapes of valid events
            if sink is not None and (sink_types is None or obj["type"] in sink_types):
                sink(obj["seq"], obj["time"], obj["type"], obj["data"])
            if line_sink is not None:
                line_sink(line)
            if item_sink is not None:
                item_sink(line)
            offset += len(line)
            continue
        line_no = checker.next_seq + 2
        try:
            if obj is _UNREADABLE:  # worded from the line as written, without its newline
                event = decode_event(line[:-1], line_no)
            else:
                event = event_from_json(obj, line_no)
            feed(event)
        except LogError as exc:
            if isinstance(exc, LogViolation) and exc.line is None:
                exc.line = line_no
            if strict:
                raise
            commits, rest, complete, torn = _commits_later(line, it)
            if commits:
                raise
            reason = (
                exc.message if isinstance(exc, UnreadableLineError | LogViolation) else str(exc)
            )
            tail = TornTail(line_no, offset, len(line) + rest, reason, 1 + complete, torn)
            break
        if sink is not None and (sink_types is None or event.type in sink_types):
            sink(event.seq, event.time, event.type, event.data)
        if line_sink is not None:
            line_sink(line)
        if item_sink is not None:
            item_sink(line)
        offset += len(line)
    end = offset if tail is None else tail.offset + tail.size
    return LineScan(header, checker, checker.next_seq, tail, end, first)


class _Unreadable:
    """Marks a line orjson could not parse (``None`` is a JSON value)."""


_UNREADABLE: Final = _Unreadable()


def lines_of(data: bytes) -> Iterator[bytes]:
    """The lines of in-memory bytes, as :func:`scan_lines` takes them (cut after each newline;
    the last keeps no newline if the bytes end without one)."""
    start = 0
    find = data.find
    while True:
        end = find(b"\n", start) + 1
        if end == 0:
            if start < len(data):
                yield data[start:]
            return
        yield data[start:end]
        start = end


def scan_log(data: bytes, *, strict: bool = True) -> Scan:
    """Decode and check a log file's bytes. See the module docstring for the two modes.

    Raises :class:`HeaderError` for a missing or foreign header, :class:`UnreadableLineError`
    for a complete line that is not JSON, :class:`LogViolation` for an event breaking a rule.
    This is :func:`scan_lines` keeping every event, for callers that need them in memory.
    """
    events: list[Event] = []

    def keep(seq: int, time: int, kind: str, data: Mapping[str, Any]) -> None:
        events.append(Event(seq, time, kind, data))

    scan = scan_lines(lines_of(data), strict=strict, sink=keep)
    return Scan(scan.header, events, scan.checker, scan.tail)


def _commits_later(line: bytes, rest: Iterator[bytes]) -> tuple[bool, int, int, bool]:
    """Whether a complete line from ``line`` on (the damaged line itself included) is a JSON
    object of type ``turn/end``, well-formed or not: committed data (spec/recovery.md §Torn
    tail and corruption; the store's classifier and DSH use the same test). Consumes
    ``rest``; also returns, for the torn tail's figures, the bytes it held, how many of its
    lines were complete, and whether its last line lacked its newline."""
    size = complete = 0
    torn = False
    found = _is_turn_end(line)
    for later in rest:
        size += len(later)
        torn = later[-1] != _NEWLINE
        if not torn:
            complete += 1
            if not found and _is_turn_end(later):
                found = True
    return found, size, complete, torn


def _is_turn_end(line: bytes) -> bool:
    if b"turn" not in line:  # cheap filter; "turn\/end" is valid JSON for "turn/end"
        return False
    if too_deep(line):  # not JSON this format reads (spec/log.md §Values), so no turn/end
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return type(obj) is dict and obj.get("type") == "turn/end"


__all__ = [
    "HeaderError",
    "LineScan",
    "Resume",
    "Scan",
    "Sink",
    "TornTail",
    "lines_of",
    "scan_lines",
    "scan_log",
]
