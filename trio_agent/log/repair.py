"""Crash repair by completion: the closers of an interrupted turn (spec/recovery.md §Repair).

A cold log whose last turn is open is completed, never cut: one placeholder ``tool/result``
per requested call of the open step that has none (in request order), then ``step/end`` if a
step is open, then ``turn/end{interrupted}``. Seqs continue the log and every closer reuses the
last event's ``time``, so repair is deterministic; repairing a repaired log yields nothing.

Pure: what recovery found on the machine comes in as arguments (what it found of each call's
processes, and the recovering host's boot id; :class:`Reaping` carries both from whoever
reaped), never from the machine itself. :func:`repair_closers` is the one entry point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal, get_args

import attrs

from . import build
from .checker import LogChecker
from .envelope import Event


@attrs.frozen
class Orphan:
    """A process group logged (``tool/spawned``) by an unanswered, dispatched call of the open
    step: what a store asks its reaper to look for (R5). ``containment`` and ``owner`` are as
    the event recorded them (``None`` when it did not: an earlier version wrote it)."""

    call_id: str
    pgid: int
    identity: str
    containment: str | None = None
    owner: str | None = None


#: What recovery found for one call (R5), each with the one sentence it adds: ``stopped`` (the
#: process-group fallback found processes carrying the call's marker and stopped them),
#: ``namespace-ended`` (its PID namespace was still there and recovery ended it),
#: ``namespace-gone`` (the namespace had ended with its runtime), ``owner-running`` (the
#: runtime that started it still runs, so nothing was signalled).
ReapKind = Literal["stopped", "namespace-ended", "namespace-gone", "owner-running"]
REAP_KINDS: Final = get_args(ReapKind)


@attrs.frozen
class Reaping:
    """What looking for a crashed turn's orphans found on the machine (R5): ``{call_id:
    kind}`` for the calls it can speak for, and the recovering host's boot id (``None``:
    unknown, and then no call gets the other-host sentence)."""

    reaped: Mapping[str, ReapKind] = attrs.field(factory=dict)
    boot_id: str | None = None


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
#: The sentence R5 appends to a dispatched call's placeholder for each :data:`ReapKind`.
REAPED_TEXTS: Final[Mapping[str, str]] = {
    "stopped": (
        " Its process group was still running and was stopped during recovery: every process "
        "carrying the call's marker was stopped, but a process that had cleared its "
        "environment could have survived."
    ),
    "namespace-ended": (
        " Its PID namespace was still running and was ended during recovery: the kernel "
        "stopped every process in it."
    ),
    "namespace-gone": (
        " Its processes ran in a PID namespace tied to the runtime that started them, and the "
        "kernel ended that namespace when the runtime stopped."
    ),
    "owner-running": (
        " The runtime that started it is still running, so recovery signalled nothing: the "
        "call may still be running there."
    ),
}
#: Appended when the call's process group was started under another boot id than the
#: recovering host's, so recovery could neither stop it nor prove it ended (R5, other host).
OTHER_HOST_TEXT: Final = (
    " Its process group was started on another host (boot id {boot_id}), or on this host "
    "before it restarted: recovery here could not stop it or tell whether it ended, and it "
    "may still be running there."
)


def spawn_boot_id(identity: str) -> str | None:
    """The boot id of a ``tool/spawned`` identity of the form ``<boot_id>:<starttime>`` or
    ``<boot_id>:<starttime>:<marker>`` (spec/tools.md §3), or ``None`` for any other form."""
    parts = identity.split(":")
    # ASCII digits only: str.isdigit() also takes "²" and other scripts' digits.
    if len(parts) not in (2, 3) or "" in parts or not (parts[1].isascii() and parts[1].isdigit()):
        return None
    return parts[0]


def _suffix(
    checker: LogChecker, call_id: str, reaped: Mapping[str, str] | None, boot_id: str | None
) -> str:
    """What R5 appends to a dispatched call's placeholder (empty for none)."""
    if reaped and call_id in reaped:
        kind = reaped[call_id]
        if kind not in REAPED_TEXTS:
            raise ValueError(f"call {call_id!r}: unknown R5 kind {kind!r}")
        return REAPED_TEXTS[kind]
    if boot_id is not None:
        identity = checker.spawn_identity(call_id)
        recorded = None if identity is None else spawn_boot_id(identity)
        if recorded is not None and recorded != boot_id:
            return OTHER_HOST_TEXT.format(boot_id=recorded)
    return ""


def repair_closers(
    log: LogChecker | Iterable[Event],
    reaped: Mapping[str, str] | None = None,
    boot_id: str | None = None,
) -> list[Event]:
    """The events that complete a crashed log (empty for a balanced or empty log).

    ``log`` is the log's events, or a :class:`LogChecker` already fed them (a streamed
    reading keeps only the checker); the closers' ``time`` is the last event's.
    ``reaped`` maps call ids to what recovery found of their processes (a :data:`ReapKind`);
    ``boot_id`` is the recovering host's boot id, when recovery looked for orphans (``None``:
    it did not). Both only change the placeholder's wording (R5).

    Raises :class:`~trio_agent.log.errors.LogViolation` if ``events`` is not a valid log:
    a log that breaks a rule is corrupt, and repair never guesses.
    """
    if isinstance(log, LogChecker):
        checker = log
    else:
        checker = LogChecker()
        for event in log:
            checker.feed(event)
    return _closers(checker, reaped, boot_id)


def _closers(
    checker: LogChecker, reaped: Mapping[str, str] | None, boot_id: str | None
) -> list[Event]:
    """The closers for the state a checker reached, all at the last event's time."""
    time = checker.last_time
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
            if dispatched:  # R5: only a dispatched call can have had a process group
                content += _suffix(checker, call_id, reaped, boot_id)
            result = build.tool_result(turn, step, call_id, content, is_error=True, code=code)
            out.append(Event(seq, time, *result))
            seq += 1
        out.append(Event(seq, time, *build.step_end(turn, step)))
        seq += 1
    out.append(Event(seq, time, *build.turn_end(turn, "interrupted")))
    return out
