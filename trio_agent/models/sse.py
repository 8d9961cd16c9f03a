"""Server-sent events, decoded with bounds (spec/models.md §Bounds). Pure: no trio, no I/O.

:class:`SSEDecoder` takes the response body as bytes, in any pieces, and returns whole events
(WHATWG event-stream rules: lines end in ``\\n``, ``\\r\\n`` or ``\\r``; ``data:`` lines join
with ``\\n``; ``event:`` names the event; a blank line dispatches it; ``:`` starts a comment;
``id`` and ``retry`` are ignored, as no reconnection is done). Unlike a line iterator, it never
holds more than ``max_line`` bytes of an unfinished line or ``max_event`` bytes of an
unfinished event: past either, :class:`TooLarge` is raised and the rest is never buffered. It
counts what arrived (bytes, lines, events, comments) so an error can say so.
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["SSEDecoder", "SSEEvent", "TooLarge"]

_LF: Final = 0x0A
_CR: Final = 0x0D


class TooLarge(Exception):
    """A bound was crossed; the message names it and the bound."""


@attrs.frozen(slots=True)
class SSEEvent:
    """One dispatched event: its ``event`` name (``"message"`` when none) and its ``data``."""

    data: str
    event: str = "message"


class SSEDecoder:
    """Feed body bytes; get events. See the module docstring for the bounds."""

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_size",
        "_event",
        "_line",
        "bytes",
        "comments",
        "events",
        "max_event",
        "max_line",
    )

    def __init__(self, *, max_line: int, max_event: int) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self._line = bytearray()
        self._after_cr = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        #: Body bytes fed, events dispatched, comment lines seen.
        self.bytes = 0
        self.events = 0
        self.comments = 0

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode ``data`` (a piece of the body); the events it completed, in order."""
        self.bytes += len(data)
        out: list[SSEEvent] = []
        if not data:
            return out  # nothing to say, and a CR just seen still waits for its LF
        start = 0
        n = len(data)
        if self._after_cr and n and data[0] == _LF:
            start = 1  # the LF of a CRLF split across two pieces
        self._after_cr = False
        lf = cr = -1
        while start < n:
            # Each search result is kept until passed, so a piece is scanned once (linear).
            if lf != -2 and lf < start:
                lf = data.find(b"\n", start)
                lf = -2 if lf < 0 else lf
            if cr != -2 and cr < start:
                cr = data.find(b"\r", start)
                cr = -2 if cr < 0 else cr
            if lf == -2 and cr == -2:
                self._grow(data[start:])
                break
            end = lf if cr == -2 else cr if lf == -2 else min(lf, cr)
            self._grow(data[start:end])
            line = bytes(self._line)
            self._line.clear()
            event = self._line_done(line)
            if event is not None:
                out.append(event)
            if data[end] == _CR:
                if end + 1 < n:
                    start = end + 2 if data[end + 1] == _LF else end + 1
                else:
                    self._after_cr = True
                    start = n
            else:
                start = end + 1
        return out

    def _grow(self, piece: bytes) -> None:
        if len(self._line) + len(piece) > self.max_line:
            raise TooLarge(f"an event-stream line longer than {self.max_line} bytes")
        self._line += piece

    def _line_done(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            self.comments += 1
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_size += len(raw) + 1
            if self._data_size > self.max_event:
                raise TooLarge(f"an event larger than {self.max_event} bytes")
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        event_name, self._event = self._event, ""
        if not self._data:
            return None  # a blank line with no data lines dispatches nothing (WHATWG)
        data = "\n".join(self._data)
        self._data = []
        self._data_size = 0
        self.events += 1
        return SSEEvent(data, event_name or "message")

    def close(self) -> list[SSEEvent]:
        """The body ended: an event whose data lines all arrived but whose blank line did not
        is dispatched (some servers end that way); an unfinished line is dropped."""
        self._line.clear()
        event = self._dispatch()
        return [] if event is None else [event]

    def describe(self) -> str:
        """What arrived so far, for an error message: ``nothing arrived``,
        ``no event, 412 bytes`` or ``3 events, 412 bytes`` (and comment lines, if any)."""
        if self.bytes == 0:
            return "nothing arrived"
        said = "no event" if self.events == 0 else f"{self.events} event"
        said += "s" if self.events > 1 else ""
        said += f", {self.bytes} bytes"
        if self.comments:
            said += f", {self.comments} comment line{'s' if self.comments != 1 else ''}"
        return said
