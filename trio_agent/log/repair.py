"""Crash repair by completion: the closers of an interrupted turn (spec/recovery.md §Repair).

A cold log whose last turn is open is completed, never cut: one placeholder ``tool/result``
per requested call of the open step that has none (in request order), then ``step/end`` if a
step is open, then ``turn/end{interrupted}``. Seqs continue the log and every closer reuses the
last event's ``time``, so repair is deterministic; repairing a repaired log yields nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .checker import LogChecker
from .events import Event

#: Placeholder for a call whose ``tool/call`` is durable but whose result is not (R2).
OUTCOME_UNKNOWN_TEXT: Final = (
    "The {name} call {call_id} was recorded as started, but the session stopped before its "
    "result was recorded, so its outcome is unknown. Retry it only if the operation is "
    "read-only or idempotent; otherwise first verify external state or ask the user. "
    "Do not retry blindly."
)
#: Placeholder for a requested call that was never dispatched (R3).
NOT_STARTED_TEXT: Final = (
    "The {name} call {call_id} never started: the session stopped before it was dispatched. "
    "Retry it if it is still needed."
)
#: Appended when recovery found the call's process group still running and stopped it (R4).
STOPPED_DURING_RECOVERY_TEXT: Final = (
    " Its process group was still running and was stopped during recovery."
)


def closers_for(
    checker: LogChecker, time: int, stopped: Mapping[str, str] | None = None
) -> list[Event]:
    """The closers for the state a checker reached; ``time`` is the last event's time.

    ``stopped`` maps call ids whose orphaned process group recovery terminated to a short
    description of what was done; it only changes the placeholder's wording.
    """
    turn = checker.open_turn
    if turn is None:
        return []
    seq = checker.next_seq
    out: list[Event] = []
    step = checker.open_step
    if step is not None:
        for call_id, name, dispatched in checker.unanswered_calls():
            if dispatched:
                code, text = "TOOL_OUTCOME_UNKNOWN", OUTCOME_UNKNOWN_TEXT
            else:
                code, text = "TOOL_NOT_STARTED", NOT_STARTED_TEXT
            content = text.format(name=name, call_id=call_id)
            if dispatched and stopped and call_id in stopped:  # R5: only a dispatched call
                content += STOPPED_DURING_RECOVERY_TEXT
            data: dict[str, Any] = {
                "turn": turn,
                "step": step,
                "callId": call_id,
                "isError": True,
                "content": content,
                "error": {"code": code},
            }
            out.append(Event(seq, time, "tool/result", data))
            seq += 1
        out.append(Event(seq, time, "step/end", {"turn": turn, "step": step}))
        seq += 1
    out.append(Event(seq, time, "turn/end", {"turn": turn, "reason": {"kind": "interrupted"}}))
    return out


def repair_closers(
    events: Iterable[Event], stopped: Mapping[str, str] | None = None
) -> list[Event]:
    """The events that complete a crashed log (empty for a balanced or empty log).

    Raises :class:`~trio_agent.log.errors.LogViolation` if ``events`` is not a valid log:
    a log that breaks a rule is corrupt, and repair never guesses.
    """
    checker = LogChecker()
    last_time = 0
    for event in events:
        checker.feed(event)
        last_time = event.time
    return closers_for(checker, last_time, stopped)
