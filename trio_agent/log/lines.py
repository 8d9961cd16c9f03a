"""``EventLines``: a log's events kept as their encoded lines, decoded when read.

A long session holds millions of events, most of them small chunks and output lines. As
Python objects (an :class:`Event` and its data dicts) they take about seven times the file's
size; as the lines they were read from or written as, they take about the file's size. The
lines were checked when they were read or appended (the checker keeps every projection the
runtime needs), so decoding one again is a plain parse: it cannot fail and needs no check.

Reading an event builds a new :class:`Event` each time (equal to the first, not the same
object). Callers that walk the log often keep their own incremental fold instead (the
transcript does, see ``trio_agent.models.base.Transcript.catch_up``).

The first lines may be held elsewhere: a cold open that resumed from a checkpoint
(spec/persistence.md §5.1) does not read the checkpointed prefix, and hands over a sequence
that reads it from the file when asked (the store's, since this package does no I/O).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import orjson

from .codec import encode_event
from .envelope import Event


def event_of_line(line: bytes) -> Event:
    """The event of a line that a checker has already accepted (no validation here)."""
    obj = orjson.loads(line)
    return Event(obj["seq"], obj["time"], obj["type"], obj["data"])


class EventLines(Sequence[Event]):
    """A sequence of events stored as encoded lines (each may keep its newline).

    ``prefix``, when given, holds the first ``len(prefix)`` lines (read on demand, never
    appended to); the lines after it are kept here."""

    __slots__ = ("_lines", "_prefix")

    def __init__(self, lines: Iterable[bytes] = (), *, prefix: Sequence[bytes] = ()) -> None:
        self._prefix = prefix
        self._lines: list[bytes] = list(lines)

    @classmethod
    def of(cls, events: Iterable[Event]) -> EventLines:
        """Encode ``events`` (already checked) into a new sequence."""
        return cls(encode_event(e) for e in events)

    def __len__(self) -> int:
        return len(self._prefix) + len(self._lines)

    @property
    def held(self) -> int:
        """How many lines are held in memory (the rest are the prefix's)."""
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            if not self._prefix:
                return [event_of_line(line) for line in self._lines[index]]
            return [event_of_line(self.line(i)) for i in range(*index.indices(len(self)))]
        return event_of_line(self.line(index))

    def __iter__(self) -> Iterator[Event]:
        for line in self._prefix:
            yield event_of_line(line)
        for line in self._lines:
            yield event_of_line(line)

    def __reversed__(self) -> Iterator[Event]:
        for line in reversed(self._lines):
            yield event_of_line(line)
        for line in reversed(self._prefix):
            yield event_of_line(line)

    def line(self, index: int) -> bytes:
        """The encoded line of event ``index`` as stored."""
        first = len(self._prefix)
        if not first:
            return self._lines[index]
        if index < 0:
            index += first + len(self._lines)
            if index < 0:
                raise IndexError("event index out of range")
        return self._prefix[index] if index < first else self._lines[index - first]

    def append_line(self, line: bytes) -> None:
        """Record an accepted event by its encoded line."""
        self._lines.append(line)

    def extend(self, events: Iterable[Event]) -> None:
        """Record accepted events (encoded here)."""
        self._lines.extend(encode_event(e) for e in events)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same events (a list of them included)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"<{len(self)} events>"


def as_event_lines(events: Sequence[Event]) -> EventLines:
    """``events`` itself if it already is an :class:`EventLines`, else an encoded copy."""
    return events if isinstance(events, EventLines) else EventLines.of(events)


__all__ = ["EventLines", "as_event_lines", "event_of_line"]
