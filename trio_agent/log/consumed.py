"""``fold_consumed_work``: which turn last accounted for consumed input (spec/consumed-work.md).

This follows DSH's fold exactly, so a caller can tell whether queued work was dropped without
ever running (``dropped_unrun``) after the last turn that accounted for what it consumed.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .events import Event


@attrs.frozen
class ConsumedWork:
    #: The accounting ``turn/end`` event, or ``None`` if no turn accounts.
    end: Event | None
    #: A ``canceled`` splice that left nothing inserted came after ``end``.
    dropped_unrun: bool

    @property
    def end_seq(self) -> int | None:
        return None if self.end is None else self.end.seq


def fold_consumed_work(events: Iterable[Event]) -> ConsumedWork:
    """One pass over a log (or a suffix of one). Rules C1-C5 of spec/consumed-work.md."""
    stepped: set[int] = set()
    claimed: set[int] = set()
    open_turn: int | None = None
    end: Event | None = None
    dropped = False
    for event in events:
        kind = event.type
        data = event.data
        if kind == "turn/start":
            open_turn = data["turn"]
        elif kind == "step/start":
            stepped.add(data["turn"])
        elif kind == "agent/inbox/spliced":
            if "removedCount" not in data:
                continue  # C3: a pure insert consumes nothing
            if data.get("outcome") == "canceled":
                if not data["inserted"]:
                    dropped = True  # C3: a replacement keeps work pending; only a removal drops
            elif open_turn is not None:
                claimed.add(open_turn)  # C2: a claim with no open turn credits nothing
        elif kind == "turn/end":
            turn = data["turn"]
            open_turn = None
            accounts = turn in stepped or (
                turn in claimed and data["reason"]["kind"] != "completed"
            )
            if accounts:  # C4
                end = event
                dropped = False
    return ConsumedWork(end, dropped)
