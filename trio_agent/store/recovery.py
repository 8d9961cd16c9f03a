"""Cold open: read, classify damage, cut a torn tail, stop orphans, append closers durably.

spec/persistence.md §Cold open. The classification is the log core's (pure, lines in:
:func:`trio_agent.log.scan_lines`, spec/recovery.md §Torn tail and corruption); the rest runs
under the session's exclusive lock.

Crash safety. The file is only ever changed in two steps, each followed by ``fsync``:
(1) cut it back to its valid prefix, (2) append the closers. After (1) the file is a clean
prefix whose closers are a function of that prefix alone (their ``time`` is the last event's),
so a crash between the steps, or in the middle of (2), leaves either that clean prefix or the
prefix plus a torn line plus some complete closers; the next cold open cuts the torn line,
continues the same state, and appends the remaining closers, which are exactly the missing
ones. Repair therefore converges to the same balanced log however often it is interrupted.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs
import trio

from ..log.checker import LogChecker
from ..log.codec import encode_event
from ..log.errors import HeaderError, LogViolation, UnreadableLineError
from ..log.events import Event, Header
from ..log.lines import EventLines
from ..log.repair import closers_for
from ..log.scan import lines_of, scan_lines
from .errors import SessionCorrupt, UnsupportedFormat, WriteFailed
from .fileops import FileOps, reading_lines, write_all

#: ``(call_id, pgid, identity)`` of a process group logged by an unanswered call of the open turn.
Orphan = tuple[str, int, str]
#: Stops orphaned process groups; returns ``{call_id: what was done}`` for the groups it stopped.
Reaper = Callable[[list[Orphan]], Awaitable[Mapping[str, str]]]


class _DefaultReaper:
    """Marker for "use :func:`reap_orphans_with_procgroup`" in keyword defaults."""

    def __repr__(self) -> str:
        return "DEFAULT_REAPER"


DEFAULT_REAPER: Final = _DefaultReaper()
ReaperArg = Reaper | None | _DefaultReaper


async def reap_orphans_with_procgroup(orphans: list[Orphan]) -> Mapping[str, str]:
    """The default reaper: :func:`trio_agent.tools.procgroup.reap_orphan_group` for each group.

    A group is signalled only if its leader still has the recorded identity (the tools layer
    decides). Imported lazily: the store sits below the tools layer and only borrows this one
    standalone function.
    """
    if not orphans:
        return {}
    from ..tools.procgroup import DEFAULT_GRACE, reap_orphan_group

    stopped: dict[str, str] = {}
    for call_id, pgid, identity in orphans:
        try:
            outcome = await reap_orphan_group(pgid, identity, grace=DEFAULT_GRACE)
        except ValueError:  # a malformed pgid or identity in the log: nothing to signal
            continue
        if outcome.status == "stopped":
            stopped[call_id] = f"process group {pgid} stopped during recovery"
    return stopped


def current_boot_id() -> str | None:
    """This host's boot id (spec/tools.md §3), or ``None`` where the system has none.

    Recovery passes it to repair with the orphans it reaped: a call whose process group was
    started under another boot id gets the other-host placeholder (spec/recovery.md R5).
    Borrowed lazily from the tools layer, like the default reaper.
    """
    from ..tools.procgroup import boot_id

    try:
        return boot_id()
    except OSError:
        return None


def resolve_reaper(arg: ReaperArg) -> Reaper | None:
    return reap_orphans_with_procgroup if isinstance(arg, _DefaultReaper) else arg


@attrs.frozen
class Scan:
    """What a cold read of a log found (no modification)."""

    header: Header
    #: The valid events, in order (the prefix that is kept), held as their lines.
    events: EventLines
    #: A checker fed exactly :attr:`events`.
    checker: LogChecker
    #: Length of the valid prefix in bytes: the file is cut here.
    keep: int
    #: Length of the file as read.
    size: int
    #: Complete lines dropped after the last committed ``turn/end`` (garbage or bad events).
    dropped_lines: int
    #: True when the file ended in a line without its newline (a torn final line).
    torn: bool
    #: Where the dropped tail starts and why (``"line N: reason"``), or ``None``.
    damage: str | None

    @property
    def dropped_bytes(self) -> int:
        return self.size - self.keep


class _CountedLines:
    """Passes lines through, counting bytes and complete lines (for the tail's figures)."""

    __slots__ = ("_lines", "bytes", "complete", "last_complete")

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines = lines
        self.bytes = 0
        self.complete = 0
        self.last_complete = True

    def __iter__(self) -> Iterator[bytes]:
        for line in self._lines:
            self.bytes += len(line)
            self.last_complete = line.endswith(b"\n")
            self.complete += self.last_complete
            yield line


def scan_lines_of(lines: Iterable[bytes], path: str, expect_id: str | None = None) -> Scan:
    """Classify a log given as its lines (spec/recovery.md §Torn tail and corruption).

    The classification is the log core's (:func:`trio_agent.log.scan_lines` with
    ``strict=False``); this maps its verdicts to store errors. Raises
    :class:`UnsupportedFormat` for a missing or foreign header (another format version
    included) and :class:`SessionCorrupt` for damage at or before the last committed
    ``turn/end``. The kept events are held as their lines (:class:`EventLines`), so a cold
    open holds about the file's size, not the several times more that decoded events take.
    """
    counted = _CountedLines(lines)
    kept = EventLines()
    try:
        core = scan_lines(counted, strict=False, line_sink=kept.append_line)
    except HeaderError as exc:
        raise UnsupportedFormat(path, str(exc)) from None
    except UnreadableLineError as exc:
        raise SessionCorrupt(path, exc.line, None, "I0", exc.message) from None
    except LogViolation as exc:
        raise SessionCorrupt(path, exc.line, exc.seq, exc.rule, exc.message) from None
    if expect_id is not None and core.header.id != expect_id:
        raise SessionCorrupt(
            path, 1, None, None, f"the header names session {core.header.id!r}, not {expect_id!r}"
        )
    tail = core.tail
    return Scan(
        header=core.header,
        events=kept,
        checker=core.checker,
        keep=counted.bytes if tail is None else tail.offset,
        size=counted.bytes,
        dropped_lines=counted.complete - 1 - core.count,  # the header is the first line
        torn=not counted.last_complete,
        damage=None if tail is None else f"line {tail.line}: {tail.reason}",
    )


def scan_log(data: bytes, path: str, expect_id: str | None = None) -> Scan:
    """:func:`scan_lines_of` of a log's bytes held in memory."""
    return scan_lines_of(lines_of(data), path, expect_id)


def orphans_of(scan_events: Sequence[Event], checker: LogChecker) -> list[Orphan]:
    """Process groups logged by dispatched calls of the open step that have no result."""
    if checker.open_step is None:
        return []
    waiting = {cid for cid, _name, dispatched in checker.unanswered_calls() if dispatched}
    if not waiting:
        return []
    found: list[Orphan] = []
    for event in reversed(scan_events):
        if event.type == "step/start":
            break
        if event.type == "tool/spawned" and event.data["callId"] in waiting:
            data = event.data
            found.append((data["callId"], data["pgid"], data["identity"]))
    found.reverse()
    return found


def closers_after(
    scan: Scan, stopped: Mapping[str, str] | None = None, boot_id: str | None = None
) -> list[Event]:
    """The closers of a scanned log; their time is the last event's (deterministic).

    ``stopped`` and ``boot_id`` are what orphan reaping found (spec/recovery.md R5); without
    reaping, neither is known and the placeholders carry no R5 sentence.
    """
    last_time = scan.checker.last_time if len(scan.events) else scan.header.created_at
    return closers_for(scan.checker, last_time, stopped, boot_id)


async def reap_for_repair(scan: Scan, reaper: Reaper | None) -> tuple[dict[str, str], str | None]:
    """Step 3 of a cold open (spec/persistence.md): stop the orphans of the open step with
    ``reaper`` and say which host recovery runs on. ``({}, None)`` when not reaping."""
    if reaper is None:
        return {}, None
    orphans = orphans_of(scan.events, scan.checker)
    stopped = dict(await reaper(orphans)) if orphans else {}
    return stopped, current_boot_id()


@attrs.frozen
class ColdOpen:
    scan: Scan
    closers: list[Event]
    stopped: dict[str, str]
    #: File length after repair (the durable length a writer continues from).
    length: int


def read_and_scan(fd: int, path: str, expect_id: str | None) -> Scan:
    """Read the file on ``fd`` from offset 0 as a stream of lines and :func:`scan_lines_of`
    it (blocking; run it in a worker thread). The descriptor's offset is left where it was.

    The cyclic garbage collector is paused meanwhile: a scan builds a million small acyclic
    objects that all stay alive (the kept lines), and letting the collector walk that
    growing heap again and again slows a cold open of a large log a lot (bench/bench_files.py).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        with reading_lines(fd) as lines:
            return scan_lines_of(lines, path, expect_id)
    finally:
        if enabled:
            gc.enable()


async def cold_open_fd(
    fd: int,
    path: str,
    *,
    expect_id: str | None,
    ops: FileOps,
    reaper: Reaper | None,
) -> ColdOpen:
    """Repair the log open on ``fd`` (which the caller has locked exclusively) and return it.

    Nothing is modified when the log is corrupt or foreign (the error is raised first).
    """
    scan = await trio.to_thread.run_sync(read_and_scan, fd, path, expect_id)
    ops.point("repair:scanned")
    length = scan.keep
    if scan.keep < scan.size:
        await trio.to_thread.run_sync(_cut, ops, fd, scan.keep)
    stopped, boot_id = await reap_for_repair(scan, reaper)
    closers = closers_after(scan, stopped, boot_id)
    if closers:
        data = b"".join(encode_event(e) for e in closers)
        try:
            await trio.to_thread.run_sync(_append_closers, ops, fd, data, length)
        except OSError as exc:
            raise WriteFailed(scan.header.id, exc, len(closers)) from exc
        length += len(data)
        scan.checker.feed_all(closers)
        scan.events.extend(closers)
    return ColdOpen(scan=scan, closers=closers, stopped=stopped, length=length)


def _cut(ops: FileOps, fd: int, length: int) -> None:
    ops.truncate(fd, length)
    ops.point("repair:truncated")
    ops.fsync(fd)
    ops.point("repair:truncate-synced")


def _append_closers(ops: FileOps, fd: int, data: bytes, length: int) -> None:
    try:
        write_all(ops, fd, data)
        ops.point("repair:closers-written")
        ops.fsync(fd)
    except OSError:
        try:  # leave the clean prefix behind; the next open computes the same closers
            ops.truncate(fd, length)
            ops.fsync(fd)
        except OSError:
            pass  # the next cold open cuts whatever is left
        raise
    ops.point("repair:closers-synced")


@attrs.frozen
class RepairReport:
    """What a cold open (or ``trio-agent repair``) found and did."""

    path: str
    session_id: str
    #: Events in the repaired log (closers included).
    events: int
    #: The closers appended (or, when not written, that would be appended).
    closers: list[Event]
    #: Bytes cut from the end: a torn final line plus any dropped tail lines.
    torn_bytes: int
    #: Complete lines dropped after the last committed ``turn/end``.
    dropped_lines: int
    #: The first damage in the dropped tail, or ``None``.
    damage: str | None
    #: ``{call_id: what was done}`` for orphaned process groups stopped before closing.
    stopped: dict[str, str]
    #: True when the repair was written to the file.
    written: bool

    @property
    def changed(self) -> bool:
        return bool(self.closers) or self.torn_bytes > 0

    def to_json(self) -> dict[str, Any]:
        from ..log.codec import event_to_json

        return {
            "path": self.path,
            "sessionId": self.session_id,
            "events": self.events,
            "closers": [event_to_json(e) for e in self.closers],
            "tornBytes": self.torn_bytes,
            "droppedLines": self.dropped_lines,
            "damage": self.damage,
            "stopped": dict(self.stopped),
            "written": self.written,
        }


def report_for(path: str, cold: ColdOpen, *, written: bool) -> RepairReport:
    scan = cold.scan
    return RepairReport(
        path=path,
        session_id=scan.header.id,
        events=len(scan.events) if written else len(scan.events) + len(cold.closers),
        closers=cold.closers,
        torn_bytes=scan.dropped_bytes,
        dropped_lines=scan.dropped_lines,
        damage=scan.damage,
        stopped=cold.stopped,
        written=written,
    )
