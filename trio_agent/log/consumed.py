"""``fold_consumed_work``: which turn last accounted for consumed input (spec/consumed-work.md).

This follows DSH's fold exactly, so a caller can tell whether queued work was dropped without
ever running (``dropped_unrun``) after the last turn that accounted for what it consumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from .envelope import Event
from .splice import SpliceKind, splice_kind


@attrs.frozen
class ConsumedWork:
    #: The accounting ``turn/end`` event, or ``None`` if no turn accounts.
    end: Event | None
    #: A ``canceled`` splice that left nothing inserted came after ``end``.
    dropped_unrun: bool

    @property
    def end_seq(self) -> int | None:
        return None if self.end is None else self.end.seq


# Bound once (an enum member read off its class is slow on Python 3.11, see splice.py).
_INSERT: Final = SpliceKind.INSERT
_DROP: Final = SpliceKind.DROP

#: The only event types the fold looks at (C5: everything else changes nothing).
FOLD_TYPES: Final = frozenset({"turn/start", "step/start", "agent/inbox/spliced", "turn/end"})


class ConsumedFold:
    """The fold as a state machine: :meth:`feed` events one at a time, read :attr:`result`.

    Its state is two sets of turn numbers and the accounting event, so a file can be folded
    as it streams by. Rules C1-C5 of spec/consumed-work.md.
    """

    __slots__ = ("_claimed", "_dropped", "_end", "_open_turn", "_stepped")

    def __init__(self) -> None:
        self._stepped: set[int] = set()
        self._claimed: set[int] = set()
        self._open_turn: int | None = None
        self._end: tuple[int, int, Mapping[str, Any]] | None = None  # the seq, time, data
        self._dropped = False

    def feed(self, event: Event) -> None:
        """Fold one event."""
        self.feed_fields(event.seq, event.time, event.type, event.data)

    def feed_fields(self, seq: int, time: int, kind: str, data: Mapping[str, Any]) -> None:
        """Fold one event given its fields, as a scan hands them to its sink
        (:data:`~trio_agent.log.scan.Sink`): no :class:`Event` is built but the result's."""
        if kind == "turn/start":
            self._open_turn = data["turn"]
        elif kind == "step/start":
            self._stepped.add(data["turn"])
        elif kind == "agent/inbox/spliced":
            splice = splice_kind(data)
            if splice is _INSERT:
                return  # C3: a pure insert consumes nothing
            if splice is _DROP:
                if not data["inserted"]:
                    self._dropped = True  # C3: a replacement keeps work pending; a removal drops
            elif self._open_turn is not None:
                self._claimed.add(self._open_turn)  # C2: a claim with no open turn credits nothing
        elif kind == "turn/end":
            turn = data["turn"]
            self._open_turn = None
            accounts = turn in self._stepped or (
                turn in self._claimed and data["reason"]["kind"] != "completed"
            )
            if accounts:  # C4
                self._end = (seq, time, data)
                self._dropped = False

    @property
    def result(self) -> ConsumedWork:
        if self._end is None:
            return ConsumedWork(None, self._dropped)
        seq, time, data = self._end
        return ConsumedWork(Event(seq, time, "turn/end", data), self._dropped)


def fold_consumed_work(events: Iterable[Event]) -> ConsumedWork:
    """One pass over a log (or a suffix of one). Rules C1-C5 of spec/consumed-work.md."""
    fold = ConsumedFold()
    for event in events:
        fold.feed(event)
    return fold.result
