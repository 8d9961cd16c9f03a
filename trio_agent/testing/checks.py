"""Invariants on durable bytes, crashes and repairs (pure functions, no trio, no I/O).

Events are handled as their JSON objects (``{"seq", "time", "type", "data"}``), the form the
harness protocol carries, so the same checks apply to any implementation that writes a v1 log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..log import (
    Event,
    LogChecker,
    LogError,
    check_events,
    decode_event,
    event_to_json,
    fold_consumed_work,
    repair_closers,
    scan_log,
)

__all__ = [
    "DurableLog",
    "HarnessViolation",
    "check_crash_bytes",
    "check_live_bytes",
    "check_reopened",
    "dropped_unrun",
    "tear_last_line",
    "to_events",
]

EventJson = Mapping[str, Any]


class HarnessViolation(AssertionError):
    """An invariant of the durable log does not hold."""


def to_events(items: Sequence[EventJson]) -> list[Event]:
    return [Event(e["seq"], e["time"], e["type"], e["data"]) for e in items]


def _first_difference(durable: Sequence[EventJson], memory: Sequence[EventJson]) -> str:
    for index, (a, b) in enumerate(zip(durable, memory, strict=False)):
        if a != b:
            return f"event {index} on disk is {dict(a)}, in memory {dict(b)}"
    return f"{len(durable)} events on disk, {len(memory)} in memory"


def _strict_events(data: bytes, what: str) -> tuple[list[dict[str, Any]], bool]:
    """Every complete line must be a valid event (a torn final line is allowed)."""
    try:
        scan = scan_log(data, strict=True)
    except LogError as exc:
        raise HarnessViolation(
            f"{what}: the durable bytes are not a valid log prefix: {exc}"
        ) from None
    return [event_to_json(e) for e in scan.events], scan.tail is not None


def check_live_bytes(data: bytes, memory: Sequence[EventJson], acked: int) -> int:
    """The file of a live, settled session: a valid prefix of the in-memory log, with no torn
    line (no write is in flight when the world is settled), holding at least every event a
    flush acknowledged. Returns the number of durable events."""
    durable, torn = _strict_events(data, "live log")
    if torn:
        raise HarnessViolation("live log: a torn final line while no write is in flight")
    if list(durable) != list(memory[: len(durable)]) or len(durable) > len(memory):
        raise HarnessViolation(
            f"live log: disk and memory differ: {_first_difference(durable, memory)}"
        )
    if len(durable) < acked:
        raise HarnessViolation(
            f"live log: {acked} events were acknowledged durable, only {len(durable)} are"
        )
    return len(durable)


class DurableLog:
    """:func:`check_live_bytes`, incrementally: a live file only grows, so each check
    verifies that the bytes seen before are unchanged and decodes only what was appended."""

    def __init__(self) -> None:
        self._data = b""
        self._checker: LogChecker | None = None
        self._count = 0

    def check(self, data: bytes, memory: Sequence[EventJson], acked: int) -> int:
        """Check the file's current bytes; return the number of durable events."""
        if self._checker is None:
            self._count = check_live_bytes(data, memory, acked)
            self._checker = check_events(to_events(memory[: self._count]))
            self._data = data
            return self._count
        if not data.startswith(self._data):
            raise HarnessViolation("live log: bytes already on disk changed or disappeared")
        if not data.endswith(b"\n"):
            raise HarnessViolation("live log: a torn final line while no write is in flight")
        checker = self._checker
        for line in data[len(self._data) :].splitlines():
            try:
                event = decode_event(line)
                checker.feed(event)
            except LogError as exc:
                raise HarnessViolation(
                    f"live log: the durable bytes are not a valid log prefix: {exc}"
                ) from None
            index = self._count
            if index >= len(memory) or event_to_json(event) != memory[index]:
                shown = dict(memory[index]) if index < len(memory) else None
                raise HarnessViolation(
                    f"live log: event {index} on disk is {event_to_json(event)}, in memory {shown}"
                )
            self._count += 1
        self._data = data
        if self._count < acked:
            raise HarnessViolation(
                f"live log: {acked} events were acknowledged durable, only {self._count} are"
            )
        return self._count


def tear_last_line(data: bytes, acked: int, tear: int | None) -> bytes:
    """Tear the last line at a byte chosen by ``tear`` (a crash in the middle of the last
    write). Only an event line that no flush acknowledged can be torn: acknowledged bytes are
    on disk. ``None`` (or nothing tearable) returns ``data`` unchanged."""
    if tear is None or not data.endswith(b"\n"):
        return data
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    lines_before = data.count(b"\n", 0, start)  # the header is line 1
    if lines_before == 0 or lines_before - 1 < acked:
        return data  # the header, or an acknowledged event
    cut = start + tear % (len(data) - start)
    return data[:cut]


def check_crash_bytes(data: bytes, memory: Sequence[EventJson], acked: int) -> list[dict[str, Any]]:
    """The durable bytes a crash left: complete lines are a valid prefix of what the process
    had in memory (a torn final line aside), unchanged, and every acknowledged event is there.
    Returns the events a cold open keeps."""
    durable, _torn = _strict_events(data, "crashed log")
    if list(durable) != list(memory[: len(durable)]) or len(durable) > len(memory):
        raise HarnessViolation(
            f"crash: the durable log is not what the process wrote: "
            f"{_first_difference(durable, memory)}"
        )
    if len(durable) < acked:
        raise HarnessViolation(
            f"crash: {acked} events were acknowledged durable, only {len(durable)} survived"
        )
    return durable


def check_reopened(
    prefix: Sequence[EventJson], opened: Sequence[EventJson]
) -> list[dict[str, Any]]:
    """A cold open kept the durable prefix unchanged and appended exactly the repair closers
    (spec/recovery.md R3-R4), leaving a valid, balanced log. Returns the closers."""
    if list(opened[: len(prefix)]) != list(prefix):
        raise HarnessViolation(
            f"reopen changed the durable prefix: {_first_difference(opened, prefix)}"
        )
    closers = [dict(e) for e in opened[len(prefix) :]]
    expected = [event_to_json(e) for e in repair_closers(to_events(prefix))]
    if closers != expected:
        raise HarnessViolation(f"reopen appended {closers}, repair says {expected}")
    try:
        checker = check_events(to_events(opened))
    except LogError as exc:
        raise HarnessViolation(f"the reopened log is invalid: {exc}") from None
    if checker.open_turn is not None:
        raise HarnessViolation(f"turn {checker.open_turn} is still open after reopening")
    dispatched = {e["data"]["callId"] for e in prefix if e["type"] == "tool/call"}
    for event in closers:
        if event["type"] != "tool/result":
            continue
        call = event["data"]["callId"]
        code = event["data"]["error"]["code"]
        want = "TOOL_OUTCOME_UNKNOWN" if call in dispatched else "TOOL_NOT_STARTED"
        if code != want:
            raise HarnessViolation(f"placeholder for {call} says {code}, expected {want}")
    return closers


def dropped_unrun(events: Sequence[EventJson]) -> bool:
    return fold_consumed_work(to_events(events)).dropped_unrun


def balanced_ends(events: Sequence[EventJson]) -> None:
    """Every turn that started ended exactly once, after its last step ended."""
    starts = sum(1 for e in events if e["type"] == "turn/start")
    ends = sum(1 for e in events if e["type"] == "turn/end")
    if starts != ends:
        raise HarnessViolation(f"{starts} turns started, {ends} ended")
