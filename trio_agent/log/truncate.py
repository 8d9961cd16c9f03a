"""``truncate_open_turn``: the rejected alternative to repair, kept to show what it costs.

Truncation drops the open tail turn as if it never happened (spec/recovery.md §Truncate: the
rejected alternative). It is never a default anywhere in trio_agent; the demo and
``trio-agent truncate`` use it to report exactly what completion keeps and truncation would
throw away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from .codec import decode_event
from .envelope import Event
from .splice import SpliceKind, splice_kind


@attrs.frozen
class TruncateReport:
    """What truncating the open turn throws away."""

    #: The events that survive: everything before the open turn's ``turn/start``. Empty when
    #: the report comes from a streamed reading (:class:`TruncateFold`), which only counts them.
    kept: Sequence[Event]
    #: The events thrown away, in log order.
    dropped: Sequence[Event]
    #: The open turn's number, or ``None`` when the log is balanced (nothing is dropped).
    turn: int | None
    #: Dropped events counted by type.
    dropped_by_type: dict[str, int]
    #: Characters of streamed model text (``text-delta`` chunks) thrown away.
    streamed_chars: int
    #: UTF-8 bytes of ``tool/output`` thrown away.
    tool_output_bytes: int
    #: Calls whose ``tool/call`` was durable: their side effects may have happened, but the
    #: truncated log no longer says so.
    dispatched_calls: list[str]
    #: Calls whose ``tool/result`` was durable and is thrown away.
    lost_results: list[str]
    #: Inbox messages the dropped turn had claimed: truncation silently puts them back.
    reclaimed_messages: int
    #: Messages queued while the dropped turn ran: the truncated log forgets they were sent.
    forgotten_messages: int
    #: How many events survive (``len(kept)`` when ``kept`` is filled in).
    kept_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "keptEvents": self.kept_count,
            "droppedEvents": len(self.dropped),
            "droppedByType": dict(self.dropped_by_type),
            "streamedChars": self.streamed_chars,
            "toolOutputBytes": self.tool_output_bytes,
            "dispatchedCalls": list(self.dispatched_calls),
            "lostResults": list(self.lost_results),
            "reclaimedMessages": self.reclaimed_messages,
            "forgottenMessages": self.forgotten_messages,
        }


def truncate_open_turn(events: Sequence[Event]) -> TruncateReport:
    """Split ``events`` at the open tail turn's ``turn/start`` and account for the tail.

    ``events`` is expected to be a valid log (check it first); a balanced log drops nothing.
    """
    start = None
    for index in range(len(events) - 1, -1, -1):
        kind = events[index].type
        if kind == "turn/end":
            break
        if kind == "turn/start":
            start = index
            break
    if start is None:
        return _report(events, len(events), [])
    return _report(events[:start], start, events[start:])


class TruncateFold:
    """:func:`truncate_open_turn` over a stream of lines, then :meth:`report`.

    :func:`~trio_agent.log.scan.scan_lines` drives it: ``sink=fold.feed_fields`` with
    ``sink_types=TruncateFold.TYPES`` and ``line_sink=fold.feed_line``. It holds the lines
    from the open turn's ``turn/start`` on (the candidates for dropping; between turns, at
    most the last line), so a long log is accounted for in the memory of its longest turn,
    and decodes them into events only for the report. The scan hands it the turn boundaries
    and the splices, and one line per event, so the events of the closed turns, most of a
    long log, are never built.
    """

    __slots__ = ("_lines", "_open", "feed_line")

    #: The events :meth:`feed_fields` takes: a splice is the one type a log has between turns.
    TYPES: ClassVar[frozenset[str]] = frozenset({"turn/start", "turn/end", "agent/inbox/spliced"})

    def __init__(self) -> None:
        self._lines: list[bytes] = []  # from the open turn's turn/start line on
        self._open = False
        #: Takes the line of every kept event, in order, after :meth:`feed_fields` took its
        #: event.
        self.feed_line = self._lines.append

    def feed_fields(self, seq: int, time: int, kind: str, data: Mapping[str, Any]) -> None:
        """Takes an event's fields as a scan hands them to its sink (only its type is read).
        Each event's line comes next: a ``turn/start``'s opens the candidates; after a
        ``turn/end``, and for a splice between turns, nothing before it is one."""
        if kind == "turn/start":
            self._open = True
        elif kind == "turn/end":
            self._open = False
        elif self._open:  # a splice inside the turn: a candidate, like its other events
            return
        self._lines.clear()

    def report(self, kept_events: int) -> TruncateReport:
        """The report for a scan that kept ``kept_events`` events (the lines it held are
        those events' last)."""
        if not self._open:
            return _report((), kept_events, [])
        dropped = [decode_event(line[:-1]) for line in self._lines]
        return _report((), kept_events - len(dropped), dropped)


def _report(kept: Sequence[Event], kept_count: int, dropped: Sequence[Event]) -> TruncateReport:
    if not dropped:
        return TruncateReport(kept, [], None, {}, 0, 0, [], [], 0, 0, kept_count)
    streamed = output = reclaimed = forgotten = 0
    dispatched: list[str] = []
    results: list[str] = []
    for event in dropped:
        data = event.data
        if event.type == "assistant/chunk" and data["chunk"]["type"] == "text-delta":
            streamed += len(data["chunk"]["text"])
        elif event.type == "tool/output":
            output += len(data["text"].encode())
        elif event.type == "tool/call":
            dispatched.append(data["callId"])
        elif event.type == "tool/result":
            results.append(data["callId"])
        elif event.type == "agent/inbox/spliced":
            forgotten += len(data["inserted"])
            if splice_kind(data) is SpliceKind.CLAIM:
                reclaimed += data["removedCount"]
    return TruncateReport(
        kept=kept,
        dropped=dropped,
        turn=dropped[0].data["turn"],
        dropped_by_type=dict(Counter(e.type for e in dropped)),
        streamed_chars=streamed,
        tool_output_bytes=output,
        dispatched_calls=dispatched,
        lost_results=results,
        reclaimed_messages=reclaimed,
        forgotten_messages=forgotten,
        kept_count=kept_count,
    )
