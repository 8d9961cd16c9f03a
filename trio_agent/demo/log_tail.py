"""The log view (the left pane): the session file read back, complete lines only.

A :class:`LogTail` reads what was appended to the session file since its last poll and keeps
the decoded header and events. Only complete lines are taken, so it shows exactly what is
durable: a line still in the writer's batch is not shown yet, a torn final line never is.
:func:`log_items` turns the events into the rows both front ends draw.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ..log import Event, Header, LogError, SpliceKind, decode_event, decode_header, splice_kind
from ..log.render import describe
from ..log.rules import REPAIR_ONLY_CODES

__all__ = ["LogTail", "ShrunkError", "log_item", "log_items", "open_turn", "tone_of"]


class ShrunkError(Exception):
    """The session file is shorter than what was already read from it."""


class LogTail:
    """The complete lines of one session file, read incrementally (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: Header | None = None
        self.events: list[Event] = []
        #: Bytes of the file taken so far (up to the end of the last complete line read).
        self.offset = 0

    def poll(self, *, halted: bool = False) -> tuple[list[Event], str | None]:
        """Take the complete lines appended since the last poll.

        Returns the new events and, if a line does not decode, why (the tail stops before that
        line). With ``halted`` the file is looked at but no line is taken. A missing file is
        nothing new; a file that shrank raises :class:`ShrunkError`.
        """
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.offset:
                    raise ShrunkError("the session file shrank below what was already shown")
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return [], None
        new: list[Event] = []
        bad: str | None = None
        start = 0
        while not halted:
            newline = data.find(b"\n", start)
            if newline < 0:
                break  # an incomplete last line: not durable yet, or torn; never shown
            line = data[start:newline]
            try:
                if self.header is None:
                    self.header = decode_header(line)
                else:
                    event = decode_event(line)
                    self.events.append(event)
                    new.append(event)
            except LogError as exc:
                bad = str(exc)
                break
            start = newline + 1
        self.offset += start
        return new, bad


# -- log items (what the left pane shows) ------------------------------------------------------


#: The tone of each kind of splice (log/splice.py): queued work, work taken to run, work
#: discarded unrun.
_SPLICE_TONES: Final = {
    SpliceKind.INSERT: "queue",
    SpliceKind.CLAIM: "claim",
    SpliceKind.DROP: "dropped",
}


def tone_of(event: Event) -> str:
    """A colour class for an event: the endings and drops this project is about stand out."""
    d: Any = event.data
    kind = event.type
    if kind == "turn/end":
        return str(d["reason"]["kind"])  # completed, aborted, interrupted, error, ...
    if kind == "agent/inbox/spliced":
        return _SPLICE_TONES[splice_kind(d)]
    if kind == "tool/result":
        code = (d.get("error") or {}).get("code")
        if code in REPAIR_ONLY_CODES:
            return "placeholder"
        if code is not None:
            return "aborted" if code.startswith("ABORTED") else "error"
        return "ok"
    if kind == "assistant/message" and d.get("interrupted"):
        return "aborted"
    if kind in ("tool/call", "tool/spawned"):
        return "dispatch"
    if kind == "tool/output":
        return "output"
    if kind == "assistant/chunk":
        return "chunk"
    if kind in ("turn/start", "step/start", "step/end"):
        return "boundary"
    return "plain"


def log_item(event: Event, depth: int, origin: str) -> dict[str, Any]:
    """One row of the log pane: ``origin`` is ``loop``, ``recovery`` or ``would-append``."""
    item = {
        "seq": event.seq,
        "type": event.type,
        "text": describe(event),
        "depth": depth,
        "tone": tone_of(event),
        "origin": origin,
    }
    d: Any = event.data
    if event.type == "assistant/chunk" and d["chunk"]["type"] == "text-delta":
        item["delta"] = d["chunk"]["text"]  # front ends fold a run of these into one line
    return item


def log_items(events: Sequence[Event], recovery: frozenset[int]) -> list[dict[str, Any]]:
    """The rows of the log pane, indented by turn and step; ``recovery`` seqs are marked."""
    items = []
    depth = 0
    for event in events:
        if event.type in ("turn/end", "step/end"):
            depth = max(0, depth - 1)
        origin = "recovery" if event.seq in recovery else "loop"
        items.append(log_item(event, depth, origin))
        if event.type in ("turn/start", "step/start"):
            depth += 1
    return items


def open_turn(events: Sequence[Event]) -> int | None:
    """The turn a ``turn/start`` opened and no ``turn/end`` closed, if any."""
    turn = None
    for e in events:
        if e.type == "turn/start":
            turn = e.data["turn"]
        elif e.type == "turn/end":
            turn = None
    return turn
