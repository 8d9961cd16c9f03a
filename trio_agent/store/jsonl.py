"""``JsonlStore``: sessions as ``<root>/<escaped id>/session.jsonl`` (spec/persistence.md).

Liveness is the ``flock`` on ``session.jsonl`` itself: a live writer holds it exclusively for
the session's whole life, the kernel drops it when the process dies, so a free lock means the
session is cold. ``session.pid`` beside it names the holder, best effort, for error messages.
Within one process a registry of live sessions (keyed by the file's real path) answers before
the lock is touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Final

import trio

from ..files import LOG_NAME, PID_NAME, file_kind, not_a_log, not_a_session_directory, read_pid
from ..log.codec import decode_header, encode_header
from ..log.envelope import Event, Header
from ..log.errors import HeaderError
from .checkpoints import file_identity, remove_stale_temps
from .errors import (
    CreateFailed,
    LiveTurnOpen,
    NotALogFile,
    SessionExists,
    SessionLocked,
    SessionNotFound,
)
from .fileops import FileOps, write_all
from .ids import escape_id
from .lifecycle import SessionNursery, StoreLifecycle
from .recovery import (
    DEFAULT_REAPER,
    ColdOpen,
    ColdScan,
    Reaper,
    RepairReport,
    cold_open_fd,
    preview,
    read_and_scan,
    report_for,
)
from .session import Clock, Session, wall_clock_ms
from .write_policy import CHECKPOINT_EVERY
from .writer import (
    DEFAULT_HARD_LIMIT,
    DEFAULT_SOFT_LIMIT,
    DEFAULT_WINDOW,
    Writer,
    checkpoint_target,
)

__all__ = ["LOG_NAME", "PID_NAME", "JsonlStore", "repair_file"]

_log = logging.getLogger("trio_agent.store")


#: Live sessions of this process, by the real path of their log file.
_LIVE: dict[str, Session] = {}

#: How often, and how far apart, a writer retries a lock that a momentary probe may hold.
_LOCK_TRIES: Final = 5
_LOCK_PAUSE: Final = 0.01

# O_NOFOLLOW: a symbolic link in the log's place is refused (ELOOP), never written through,
# so closers can never land outside the root. O_NONBLOCK only matters for a FIFO, which must
# not block the open before fstat refuses it; regular files ignore it.
_OPEN_RW: Final = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


_OPEN_READ: Final = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def _not_a_log(path: Path, mode: int) -> NotALogFile:
    return NotALogFile(path, not_a_log(path, file_kind(mode) or "is a special file"))


def _not_a_directory(path: Path, mode: int) -> NotALogFile:
    return NotALogFile(path, not_a_session_directory(path, file_kind(mode) or "is a regular file"))


def _open_log(path: Path, name: str, flags: int = _OPEN_RW) -> int:
    """Open an existing log for the store (spec/persistence.md §1): a regular file only,
    never through a symbolic link. Raises :class:`SessionNotFound` or :class:`NotALogFile`."""
    try:
        directory_mode = os.lstat(path.parent).st_mode
    except FileNotFoundError:
        raise SessionNotFound(name, path) from None
    if not stat.S_ISDIR(directory_mode):
        raise _not_a_directory(path.parent, directory_mode)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SessionNotFound(name, path) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR):
            raise _not_a_log(path, os.lstat(path).st_mode) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_a_log(path, mode)
    return fd


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _write_pid(pid_path: Path) -> None:
    """Best effort: name this process as the holder (atomic rename, no fsync)."""
    tmp = pid_path.with_name(f".{pid_path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        tmp.write_text(f"{os.getpid()}\n", encoding="ascii")
        os.replace(tmp, pid_path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _remove_pid(pid_path: Path) -> None:
    if read_pid(pid_path) == os.getpid():
        with contextlib.suppress(OSError):
            pid_path.unlink()


def _locked_error(session_id: str, pid_path: Path) -> SessionLocked:
    pid = read_pid(pid_path)
    return SessionLocked(session_id, pid, here=pid == os.getpid())


async def _lock_exclusive(fd: int, session_id: str, pid_path: Path) -> None:
    """Take the session's exclusive lock now, or raise :class:`SessionLocked`.

    A few quick retries absorb a reader's momentary shared-lock probe; a live writer holds the
    lock for good, so the answer still comes at once in practice.
    """
    for attempt in range(_LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if attempt + 1 == _LOCK_TRIES:
                break
            await trio.sleep(_LOCK_PAUSE)
    raise _locked_error(session_id, pid_path)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_shared(path: Path, session_id: str, expect_id: str | None) -> tuple[ColdScan, bool]:
    """Scan the log under a momentary shared lock; ``(scan, live_elsewhere)``."""
    fd = _open_log(path, session_id, _OPEN_READ)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            live = False
        except BlockingIOError:
            live = True
        return read_and_scan(fd, str(path), expect_id), live
    finally:
        os.close(fd)  # drops the shared lock, if taken


class JsonlStore(StoreLifecycle):
    """Sessions stored as JSON Lines files under ``root``.

    Use it as an async context manager: it owns the nursery of the writer tasks, and leaving
    it closes every session it handed out (drain, fsync, unlock)::

        async with JsonlStore(root) as store:
            session = await store.create("s1")   # or: await store.open("s1")
            session.append("turn/start", {"turn": 1})
            await session.flush()

    ``clock`` stamps events (integer ms); ``window`` is the batching window in seconds;
    ``soft_limit``/``hard_limit`` bound the bytes waiting for the disk (spec/persistence.md
    §Memory bound); ``file_ops`` is the fault-injection seam; ``reap_orphans`` looks for what a
    crashed turn's tool calls left running before a cold open's repair and stops what is
    proven theirs (:data:`~trio_agent.store.Reaper`; by default
    :func:`trio_agent.procs.reap_orphans`; ``None`` opts out: nothing is signalled).
    ``checkpoint_every`` is the least number of log bytes between two cold-open checkpoints
    (spec/persistence.md §5.1); ``None`` records none and never reads one.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        window: float = DEFAULT_WINDOW,
        soft_limit: int = DEFAULT_SOFT_LIMIT,
        hard_limit: int = DEFAULT_HARD_LIMIT,
        file_ops: FileOps | None = None,
        reap_orphans: Reaper | None = DEFAULT_REAPER,
        checkpoint_every: int | None = CHECKPOINT_EVERY,
    ) -> None:
        if window < 0:
            raise ValueError("the batching window must be >= 0 seconds")
        if not 0 < soft_limit <= hard_limit:
            raise ValueError("need 0 < soft_limit <= hard_limit")
        self.root = Path(root)
        self._clock: Clock = clock if clock is not None else wall_clock_ms
        self._window = window
        self._soft = soft_limit
        self._hard = hard_limit
        self._ops = file_ops if file_ops is not None else FileOps()
        self._reaper = reap_orphans
        if checkpoint_every is not None and checkpoint_every < 1:
            raise ValueError("checkpoint_every must be >= 1 byte, or None")
        self._checkpoint_every = checkpoint_every
        self._life = SessionNursery("JsonlStore", "async with JsonlStore(root) as store")

    # -- paths ----------------------------------------------------------------------------------

    def path_of(self, session_id: str) -> Path:
        """The log file of ``session_id`` (whether or not it exists)."""
        return self.root / escape_id(session_id) / LOG_NAME

    # -- create / open --------------------------------------------------------------------------

    async def create(self, session_id: str) -> Session:
        """A new live session: its header is written durably; an existing id is refused."""
        nursery = self._require_open()
        path = self.path_of(session_id)
        if _key(path) in _LIVE:
            raise SessionExists(session_id)
        # Encoded before anything exists: a bad id creates nothing.
        data = encode_header(Header(id=session_id, created_at=self._clock()))
        fd, length = await trio.to_thread.run_sync(self._create_blocking, session_id, path, data)
        return await self._go_live(nursery, session_id, path, fd, length, None, data)

    def _create_blocking(self, session_id: str, path: Path, data: bytes) -> tuple[int, int]:
        directory = path.parent
        fresh_root = not self.root.exists()
        fresh_dir = not os.path.lexists(directory)
        if not fresh_dir and not stat.S_ISDIR(mode := os.lstat(directory).st_mode):
            raise _not_a_directory(directory, mode)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CreateFailed(session_id, path, exc) from exc
        if os.path.lexists(path):
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                raise SessionExists(session_id)
            self._undo_create(directory, None, fresh_dir)
            raise _not_a_log(path, mode)
        tmp = directory / f".{LOG_NAME}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        linked = False
        try:
            fd = os.open(tmp, _OPEN_RW | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            self._undo_create(directory, None, fresh_dir)
            raise CreateFailed(session_id, path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh inode: never contended
            write_all(self._ops, fd, data)
            self._ops.fsync(fd)
            try:
                os.link(tmp, path)  # publishes the locked, complete file; fails if it exists
            except FileExistsError:
                raise SessionExists(session_id) from None
            finally:
                os.unlink(tmp)
            linked = True
            self._ops.point("create:linked")
            _fsync_dir(directory)
            if fresh_dir:
                _fsync_dir(directory.parent)
            if fresh_root and self.root.parent != self.root:
                _fsync_dir(self.root.parent)
        except SessionExists:
            os.close(fd)
            raise
        except OSError as exc:
            os.close(fd)
            if linked:  # published, only a directory sync failed: keep the complete file
                raise CreateFailed(session_id, path, exc, published=True) from exc
            self._undo_create(directory, tmp, fresh_dir)
            raise CreateFailed(session_id, path, exc) from exc
        except BaseException:
            os.close(fd)
            raise
        return fd, len(data)

    @staticmethod
    def _undo_create(directory: Path, tmp: Path | None, fresh_dir: bool) -> None:
        """Remove what a failed create made: its temporary file, and the session directory
        if this call created it and it is empty."""
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if fresh_dir:
            with contextlib.suppress(OSError):
                os.rmdir(directory)

    async def open(self, session_id: str) -> Session:
        """Cold open: lock, repair (torn tail, orphans, closers, durably), return it live.
        A long log resumes from its checkpoint when one verifies (spec/persistence.md §5.1).

        Raises :class:`SessionLocked` at once if the session is live here or in another
        process, :class:`SessionNotFound`, :class:`SessionCorrupt` (file untouched) or
        :class:`UnsupportedFormat`.
        """
        nursery = self._require_open()
        path = self.path_of(session_id)
        if _key(path) in _LIVE:
            raise SessionLocked(session_id, os.getpid(), here=True)
        fd = await trio.to_thread.run_sync(_open_log, path, session_id)
        pid_path = path.with_name(PID_NAME)
        try:
            await _lock_exclusive(fd, session_id, pid_path)
            _write_pid(pid_path)
            try:
                if self._checkpoint_every is not None:
                    await trio.to_thread.run_sync(remove_stale_temps, path)
                cold = await cold_open_fd(
                    fd,
                    str(path),
                    expect_id=session_id,
                    ops=self._ops,
                    reaper=self._reaper,
                    checkpointed=self._checkpoint_every is not None,
                )
            except BaseException:
                _remove_pid(pid_path)
                raise
        except BaseException:
            os.close(fd)
            raise
        return await self._go_live(
            nursery, session_id, path, fd, cold.length, cold, cold.header_line
        )

    async def _go_live(
        self,
        nursery: trio.Nursery,
        session_id: str,
        path: Path,
        fd: int,
        length: int,
        cold: ColdOpen | None,
        header_line: bytes,
    ) -> Session:
        key = _key(path)
        pid_path = path.with_name(PID_NAME)
        if cold is None:
            _write_pid(pid_path)
        session: Session | None = None

        def on_close() -> None:
            _remove_pid(pid_path)
            if _LIVE.get(key) is session:
                del _LIVE[key]
            self._life.sessions.discard(session)

        writer = Writer(
            session_id,
            fd,
            length,
            ops=self._ops,
            window=self._window,
            soft_limit=self._soft,
            hard_limit=self._hard,
            on_close=on_close,
            checkpoints=checkpoint_target(
                self._checkpoint_every,
                str(path),
                header_line,
                file_identity(fd),
                None if cold is None else cold.resumed_at,
            ),
        )
        session = self._life.seeded(session_id, writer, self._clock, cold)
        if cold is not None:
            writer.opened(cold.checker, cold.events)
        _LIVE[key] = session
        try:
            await self._life.start_writer(nursery, session, writer.run)
        except BaseException:
            on_close()
            os.close(fd)
            raise
        return session

    # -- read-only ------------------------------------------------------------------------------

    def live(self, session_id: str) -> Session | None:
        """The session if it is live in this process, else ``None``."""
        return _LIVE.get(_key(self.path_of(session_id)))

    async def inspect(self, session_id: str) -> list[Event]:
        """The events of a session, read-only; nothing on disk changes.

        Cold: the valid prefix plus the closers repair would append (in memory only; a torn
        tail is skipped, not cut). Live, here or in another process: the events as they are
        (durable ones, for another process), possibly ending in an open turn; a live session
        is never given synthetic boundaries.
        """
        live = self.live(session_id)
        if live is not None:
            await trio.lowlevel.checkpoint()
            return list(live.events)
        scan, live_elsewhere = await trio.to_thread.run_sync(
            _read_shared, self.path_of(session_id), session_id, session_id
        )
        return scan.snapshot(session_id, live_elsewhere, balanced=False)

    async def load(self, session_id: str) -> list[Event]:
        """A balanced snapshot, read-only.

        Live in this process: wait for a flush and return the events if no turn is open, else
        raise :class:`LiveTurnOpen`. Live in another process: its durable events, under the
        same rule. Cold: as :meth:`inspect` (closers in memory only).
        """
        live = self.live(session_id)
        if live is not None:
            await live.flush()
            if live.open_turn is not None:
                raise LiveTurnOpen(session_id, live.open_turn)
            return list(live.events)
        scan, live_elsewhere = await trio.to_thread.run_sync(
            _read_shared, self.path_of(session_id), session_id, session_id
        )
        return scan.snapshot(session_id, live_elsewhere, balanced=True)

    async def session_ids(self) -> list[str]:
        """Ids of the sessions stored under the root, sorted."""
        return await trio.to_thread.run_sync(self._session_ids_blocking)

    def _session_ids_blocking(self) -> list[str]:
        ids: list[str] = []
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return ids
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            header = _read_header(Path(entry.path) / LOG_NAME)
            if header is not None and escape_id(header.id) == entry.name:
                ids.append(header.id)
        return sorted(ids)


def _read_header(path: Path) -> Header | None:
    """The header of the log at ``path``, or None when it has none this store reads. Only a
    regular file is read, and opening never waits: a FIFO in the log's place would block an
    open (and a read) until some writer came, which listing the sessions must not do."""
    # Not _OPEN_READ: the listing follows a link to a log, and opening it is then refused
    # (spec/persistence.md §1).
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        # Asked of the descriptor before it becomes a file object: open() refuses a
        # directory's descriptor with IsADirectoryError, which is no reason to fail a listing.
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    with open(fd, "rb") as f:
        try:
            first = f.readline(1 << 20)
        except OSError:
            return None
    if not first.endswith(b"\n"):
        return None
    try:
        return decode_header(first[:-1])
    except HeaderError:
        return None


async def repair_file(
    path: str | os.PathLike[str],
    *,
    write: bool = True,
    reap_orphans: Reaper | None = DEFAULT_REAPER,
    file_ops: FileOps | None = None,
) -> RepairReport:
    """Run the cold-open repair on one log file (``trio-agent repair FILE --write``).

    With ``write=True``: take the exclusive lock (a live session, here or elsewhere, is
    refused with :class:`SessionLocked`), cut a torn tail, stop orphaned process groups with
    ``reap_orphans`` (``None``: nothing is signalled), append the closers durably,
    release the lock. With ``write=False``: report what would be done,
    change nothing and signal nothing. Corruption raises :class:`SessionCorrupt` and leaves
    the file byte-for-byte unchanged either way.
    """
    p = Path(path)
    name = str(p)
    pid_path = p.with_name(PID_NAME)
    if _key(p) in _LIVE:
        raise SessionLocked(_LIVE[_key(p)].id, os.getpid(), here=True)
    if not write:
        scan, live = await trio.to_thread.run_sync(_read_shared, p, name, None)
        if live:
            raise _locked_error(scan.header.id, pid_path)
        return report_for(name, preview(scan), written=False)
    fd = _open_log(p, name)
    try:
        try:
            await _lock_exclusive(fd, name, pid_path)
        except SessionLocked as exc:
            raise SessionLocked(_header_id(p) or name, exc.pid, here=exc.here) from None
        cold = await cold_open_fd(
            fd, name, expect_id=None, ops=file_ops or FileOps(), reaper=reap_orphans
        )
    finally:
        os.close(fd)
    return report_for(name, cold, written=True)


def _header_id(path: Path) -> str | None:
    header = _read_header(path)
    return header.id if header is not None else None
