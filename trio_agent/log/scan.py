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

import attrs
import orjson

from .checker import LogChecker
from .codec import SplitLog, decode_event, decode_header, split_log
from .errors import HeaderError, LogError, LogViolation, UnreadableLineError
from .events import Event, Header


@attrs.frozen
class TornTail:
    """The part of a file recovery ignores: from ``line`` (1-based) to the end of the file."""

    line: int
    offset: int  # byte offset where the tail starts; the file's committed length
    size: int  # bytes in the tail
    reason: str  # why it is not part of the log


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


def scan_log(data: bytes, *, strict: bool = True) -> Scan:
    """Decode and check a log file's bytes. See the module docstring for the two modes.

    Raises :class:`HeaderError` for a missing or foreign header, :class:`UnreadableLineError`
    for a complete line that is not JSON, :class:`LogViolation` for an event breaking a rule.
    """
    split = split_log(data)
    if split.header is None:
        if data:
            raise HeaderError("the header line is incomplete (no newline)")
        raise HeaderError("the file is empty (no session header)")
    header = decode_header(split.header)
    checker = LogChecker()
    events: list[Event] = []
    append = events.append
    feed = checker.feed
    lines = split.lines
    for index, (line_no, line) in enumerate(lines):
        try:
            event = decode_event(line, line_no)
            feed(event)
        except LogError as exc:
            if isinstance(exc, LogViolation) and exc.line is None:
                exc.line = line_no
            if strict or _commits_later(lines, index):
                raise
            offset = _offset_of(split, index)
            reason = (
                exc.message if isinstance(exc, UnreadableLineError | LogViolation) else str(exc)
            )
            tail = TornTail(line_no, offset, len(data) - offset, reason)
            return Scan(header, events, checker, tail)
        append(event)
    if split.torn_tail:
        line_no = len(lines) + 2
        reason = "final line has no newline (torn write)"
        return Scan(
            header,
            events,
            checker,
            TornTail(line_no, split.committed_bytes, len(split.torn_tail), reason),
        )
    return Scan(header, events, checker, None)


def _commits_later(lines: list[tuple[int, bytes]], start: int) -> bool:
    """Whether a complete line from ``start`` on (the damaged line itself included) is a JSON
    object of type ``turn/end``, well-formed or not: committed data (spec/recovery.md §Torn
    tail and corruption; the store's classifier and DSH use the same test)."""
    for _, line in lines[start:]:
        if b"turn" not in line:  # cheap filter; "turn\/end" is valid JSON for "turn/end"
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if type(obj) is dict and obj.get("type") == "turn/end":
            return True
    return False


def _offset_of(split: SplitLog, index: int) -> int:
    # Header plus every complete line before ``index``, each with its newline.
    assert split.header is not None
    return len(split.header) + 1 + sum(len(line) + 1 for _, line in split.lines[:index])


__all__ = ["HeaderError", "Scan", "TornTail", "scan_log"]
