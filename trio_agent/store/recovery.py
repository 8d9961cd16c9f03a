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
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Final

import attrs
import trio

from ..files import other_session
from ..log import checkpoint as ck
from ..log.checker import LogChecker
from ..log.codec import encode_event, event_to_json
from ..log.envelope import Event, Header
from ..log.errors import HeaderError, LogViolation, UnreadableLineError
from ..log.lines import EventLines
from ..log.repair import Orphan, Reaping, repair_closers
from ..log.scan import Resume, lines_of, scan_lines
from .checkpoints import find_checkpoint
from .errors import LiveTurnOpen, SessionCorrupt, UnsupportedFormat, WriteFailed
from .fileops import FileOps, reading_lines, write_all
from .prefix import FileLines

_log = logging.getLogger("trio_agent.store")

#: Looks for what a crashed turn's tool calls left running and stops what is proven theirs
#: (spec/persistence.md §5 step 3); it answers a :class:`~trio_agent.log.Reaping`: what it
#: found of each call (recovery.md R5) and the recovering host's boot id. Stores use
#: :func:`trio_agent.procs.reap_orphans` unless their opener passes another, or ``None``.
Reaper = Callable[[list[Orphan]], Awaitable[Reaping]]


async def _default_reaper(orphans: list[Orphan]) -> Reaping:
    """:func:`trio_agent.procs.reap_orphans`, imported when a crash left calls to look for:
    most cold opens have none, and the process census it brings costs every open's start-up
    (a checkpointed open of a long log is mostly start-up, bench/bench_coldopen.py)."""
    from ..procs.orphans import reap_orphans

    return await reap_orphans(orphans)


#: The reaper every store uses unless its opener opts out with ``reap_orphans=None``.
DEFAULT_REAPER: Final[Reaper] = _default_reaper


@attrs.frozen
class ColdScan:
    """What a cold read of a stored log found (nothing modified): the store's view of
    :func:`trio_agent.log.scan_lines`, with the byte figures a repair needs."""

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
    #: Whether the scan resumed from a checkpoint (spec/persistence.md §5.1): ``"used"``, the
    #: reason it did not (:data:`trio_agent.log.checkpoint.REASONS`), or ``None`` when it
    #: did not look for one (read-only scans, bytes in memory, the database store).
    checkpoint: str | None = None
    #: Where the checkpoint's prefix ends (bytes), when one was used.
    resumed_at: int | None = None
    #: The header line as stored, newline included (the writer's checkpoints hold its digest).
    header_line: bytes = b""

    @property
    def dropped_bytes(self) -> int:
        return self.size - self.keep

    def with_closers(self) -> list[Event]:
        """The kept events plus the closers a repair would append, in memory only
        (``inspect`` and ``load`` of a cold session; nothing is reaped)."""
        return [*self.events, *repair_closers(self.checker)]

    def snapshot(self, session_id: str, live_elsewhere: bool, *, balanced: bool) -> list[Event]:
        """``inspect`` (``balanced=False``) or ``load`` of a session not live in this process
        (spec/persistence.md §6), the same for every backend: cold, with the closers in
        memory; live elsewhere, its durable events as they are, and for ``load`` only if no
        turn is open (else :class:`LiveTurnOpen`)."""
        if not live_elsewhere:
            return self.with_closers()
        if balanced and self.checker.open_turn is not None:
            raise LiveTurnOpen(session_id, self.checker.open_turn)
        return list(self.events)


def cold_scan_lines(
    lines: Iterable[bytes],
    path: str,
    expect_id: str | None = None,
    *,
    resume: Resume | None = None,
    prefix: Sequence[bytes] = (),
) -> ColdScan:
    """Classify a log given as its lines (spec/recovery.md §Torn tail and corruption).

    The classification is the log core's (:func:`trio_agent.log.scan_lines` with
    ``strict=False``); this maps its verdicts to store errors. Raises
    :class:`UnsupportedFormat` for a missing or foreign header (another format version
    included) and :class:`SessionCorrupt` for damage at or before the last committed
    ``turn/end``. The kept events are held as their lines (:class:`EventLines`), so a cold
    open holds about the file's size, not the several times more that decoded events take.

    With ``resume`` (a verified checkpoint, spec/persistence.md §5.1), ``lines`` are the tail
    after the checkpoint's prefix, and ``prefix`` the prefix's event lines (read on demand).
    """
    kept = EventLines(prefix=prefix)
    try:
        core = scan_lines(lines, strict=False, line_sink=kept.append_line, resume=resume)
    except HeaderError as exc:
        raise UnsupportedFormat(path, str(exc)) from None
    except UnreadableLineError as exc:
        raise SessionCorrupt(path, exc.line, None, "I0", exc.message) from None
    except LogViolation as exc:
        raise SessionCorrupt(path, exc.line, exc.seq, exc.rule, exc.message) from None
    if expect_id is not None and core.header.id != expect_id:
        raise SessionCorrupt(path, 1, None, None, other_session(core.header.id, expect_id))
    tail = core.tail
    return ColdScan(
        header=core.header,
        events=kept,
        checker=core.checker,
        keep=core.end if tail is None else tail.offset,
        size=core.end,
        dropped_lines=0 if tail is None else tail.lines,
        torn=tail is not None and tail.torn,
        damage=None if tail is None else f"line {tail.line}: {tail.reason}",
        header_line=core.header_line,
    )


def cold_scan(data: bytes, path: str, expect_id: str | None = None) -> ColdScan:
    """:func:`cold_scan_lines` of a log's bytes held in memory."""
    return cold_scan_lines(lines_of(data), path, expect_id)


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
            containment, owner = data.get("containment"), data.get("owner")
            found.append(
                Orphan(
                    call_id=data["callId"],
                    pgid=data["pgid"],
                    identity=data["identity"],
                    # Optional keys (spec/log.md §tool/spawned); another type is not ours.
                    containment=containment if isinstance(containment, str) else None,
                    owner=owner if isinstance(owner, str) else None,
                )
            )
    found.reverse()
    return found


async def reap(scan: ColdScan, reaper: Reaper | None) -> Reaping:
    """Step 3 of a cold open (spec/persistence.md §5): stop the orphans of the open step with
    ``reaper``. Without a reaper nothing is signalled and nothing is known (``Reaping()``:
    the placeholders carry no R5 sentence)."""
    if reaper is None:
        return Reaping()
    orphans = orphans_of(scan.events, scan.checker)
    if not orphans:  # R5 concerns only calls that logged a process group: nothing to ask
        return Reaping()
    return await reaper(orphans)


@attrs.frozen
class ColdOpen:
    """A repaired log, ready to go live: a cold open hands its scan's events and checker over
    to this record (the scan is not used again) and appends the closers to them."""

    header: Header
    #: The kept events, then the closers when they were written.
    events: EventLines
    #: A checker fed exactly :attr:`events`.
    checker: LogChecker
    #: Events kept from the stored log (before the closers).
    kept: int
    #: The closers appended (or, when not written, that would be appended).
    closers: list[Event]
    #: ``{call_id: R5 kind}``: what looking for orphans found of each call (recovery.md R5).
    reaped: dict[str, str]
    #: The durable length after repair (bytes of a file, rows of a database).
    length: int
    #: The scan's figures, for the report.
    torn_bytes: int
    dropped_lines: int
    damage: str | None
    #: :attr:`ColdScan.checkpoint`: whether the read resumed from a checkpoint, or why not.
    checkpoint: str | None = None
    #: :attr:`ColdScan.resumed_at`.
    resumed_at: int | None = None
    #: :attr:`ColdScan.header_line`.
    header_line: bytes = b""


def _hand_over(
    scan: ColdScan, closers: list[Event], reaped: dict[str, str], length: int
) -> ColdOpen:
    return ColdOpen(
        header=scan.header,
        events=scan.events,
        checker=scan.checker,
        kept=len(scan.events),
        closers=closers,
        reaped=reaped,
        length=length,
        torn_bytes=scan.dropped_bytes,
        dropped_lines=scan.dropped_lines,
        damage=scan.damage,
        checkpoint=scan.checkpoint,
        resumed_at=scan.resumed_at,
        header_line=scan.header_line,
    )


def preview(scan: ColdScan) -> ColdOpen:
    """What a cold open of ``scan`` would do, done in memory only: nothing reaped or written
    (``repair --dry-run``)."""
    return _hand_over(scan, repair_closers(scan.checker), {}, scan.keep)


async def complete(
    scan: ColdScan,
    *,
    reaper: Reaper | None,
    length: int,
    append: Callable[[list[Event]], Awaitable[int]],
) -> ColdOpen:
    """Steps 3-4 of a cold open (spec/persistence.md §5), the same for every backend: reap,
    compute the closers (recovery.md R1-R5), have ``append`` write them durably (it returns
    the new durable length; ``length`` is the one before), and hand the log over."""
    reaping = await reap(scan, reaper)
    closers = repair_closers(scan.checker, reaping.reaped, reaping.boot_id)
    if closers:
        length = await append(closers)
    cold = _hand_over(scan, closers, dict(reaping.reaped), length)
    if closers:
        cold.checker.feed_all(closers)
        cold.events.extend(closers)
    return cold


def read_and_scan(
    fd: int, path: str, expect_id: str | None, *, checkpointed: bool = False
) -> ColdScan:
    """Read the file on ``fd`` from offset 0 as a stream of lines and :func:`cold_scan_lines`
    it (blocking; run it in a worker thread). The descriptor's offset is left where it was.

    ``checkpointed``: look for the log's checkpoint first (spec/persistence.md §5.1); when
    it verifies, read only the tail after it, and leave the prefix on disk, read on demand
    (:class:`~trio_agent.store.prefix.FileLines`). Any refusal means the whole file is read;
    the scan's :attr:`ColdScan.checkpoint` says which happened.

    The cyclic garbage collector is paused meanwhile: a scan builds a million small acyclic
    objects that all stay alive (the kept lines), and letting the collector walk that
    growing heap again and again slows a cold open of a large log a lot (bench/bench_files.py).
    """
    found = find_checkpoint(fd, path) if checkpointed else None
    enabled = gc.isenabled()
    gc.disable()
    try:
        if found is not None and found.checkpoint is not None:
            cp = found.checkpoint
            tail = _scan_tail(fd, path, expect_id, cp)
            _log.info(
                "%s: resumed from the checkpoint at byte %d (seq %d)", path, cp.offset, cp.seq
            )
            return attrs.evolve(tail, checkpoint="used", resumed_at=cp.offset)
        with reading_lines(fd) as lines:
            scan = cold_scan_lines(lines, path, expect_id)
    finally:
        if enabled:
            gc.enable()
    if found is not None:
        if found.reason != ck.MISSING:
            _log.warning(
                "%s: checkpoint not used (%s: %s); the whole log was read",
                path,
                found.reason,
                found.detail,
            )
        scan = attrs.evolve(scan, checkpoint=found.reason)
    return scan


def _scan_tail(fd: int, path: str, expect_id: str | None, cp: ck.Checkpoint) -> ColdScan:
    """:func:`cold_scan_lines` of the tail after the verified checkpoint ``cp``."""
    with reading_lines(fd) as reader:
        header_line = reader.readline()
        prefix = FileLines(fd, path, start=len(header_line), end=cp.offset, count=cp.seq)
        reader.seek(cp.offset)
        resume = Resume(header_line, ck.restore(cp), cp.offset)
        return cold_scan_lines(reader, path, expect_id, resume=resume, prefix=prefix)


async def cold_open_fd(
    fd: int,
    path: str,
    *,
    expect_id: str | None,
    ops: FileOps,
    reaper: Reaper | None,
    checkpointed: bool = False,
) -> ColdOpen:
    """Repair the log open on ``fd`` (which the caller has locked exclusively) and return it.
    ``checkpointed``: resume from the log's checkpoint when it verifies (spec/persistence.md
    §5.1, :func:`read_and_scan`).

    Nothing is modified when the log is corrupt or foreign (the error is raised first).
    """
    scan = await trio.to_thread.run_sync(
        lambda: read_and_scan(fd, path, expect_id, checkpointed=checkpointed)
    )
    ops.point("repair:scanned")
    if scan.keep < scan.size:
        await trio.to_thread.run_sync(_cut, ops, fd, scan.keep)

    async def append(closers: list[Event]) -> int:
        data = b"".join(encode_event(e) for e in closers)
        try:
            await trio.to_thread.run_sync(_append_closers, ops, fd, data, scan.keep)
        except OSError as exc:
            raise WriteFailed(scan.header.id, exc, len(closers), repairing=True) from exc
        return scan.keep + len(data)

    return await complete(scan, reaper=reaper, length=scan.keep, append=append)


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
    #: ``{call_id: R5 kind}``: what looking for orphans found of each call (recovery.md R5).
    reaped: dict[str, str]
    #: True when the repair was written to the file.
    written: bool
    #: Whether the read resumed from a checkpoint (``"used"``), why not (spec/persistence.md
    #: §5.1), or ``None`` when no checkpoint was looked for.
    checkpoint: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.closers) or self.torn_bytes > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sessionId": self.session_id,
            "events": self.events,
            "closers": [event_to_json(e) for e in self.closers],
            "tornBytes": self.torn_bytes,
            "droppedLines": self.dropped_lines,
            "damage": self.damage,
            "reaped": dict(self.reaped),
            "written": self.written,
            "checkpoint": self.checkpoint,
        }


def report_for(path: str, cold: ColdOpen, *, written: bool) -> RepairReport:
    return RepairReport(
        path=path,
        session_id=cold.header.id,
        events=cold.kept + len(cold.closers),
        closers=cold.closers,
        torn_bytes=cold.torn_bytes,
        dropped_lines=cold.dropped_lines,
        damage=cold.damage,
        reaped=cold.reaped,
        written=written,
        checkpoint=cold.checkpoint,
    )
