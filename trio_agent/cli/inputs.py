"""The input of a file command: a log file or a stored session, opened and probed for
liveness (spec/cli.md §Input files, §Live sessions), and streamed through the pure core.

Only regular files are read (:func:`open_regular`); a live session is one whose writer holds
the lock (or whose lease is current), probed before and after the read and never held while
reading. Nothing here imports trio or the store's runtime: the file commands start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

import attrs
import orjson

from ..files import (
    LOG_NAME,
    directory_problem,
    file_kind,
    holder_pid,
    not_a_log,
    other_session,
    shared_lock_free,
)
from ..log import (
    Event,
    HeaderError,
    LineScan,
    LogViolation,
    UnreadableLineError,
    decode_event,
    decode_header,
    scan_lines,
)
from ..log.lines import event_of_line
from ..log.render import visible
from ..log.scan import Sink
from .dsn import is_dsn, redact
from .errors import BROKEN, REFUSED, UNREADABLE, CliError

if TYPE_CHECKING:
    from ..store.postgres import StoredLog


def open_regular(path: str, flags: int = os.O_RDONLY) -> int:
    """Open ``path`` only if it is a regular file; a one-line :class:`CliError` otherwise.

    spec/cli.md §Input files: ``stat`` first (names what the file is without opening it), then
    open with ``O_NONBLOCK`` (a FIFO swapped in meanwhile cannot block the open) and ``fstat``
    the descriptor, so a FIFO, a device or a directory is refused and never read.
    """
    try:
        kind = file_kind(os.stat(path).st_mode)
        if kind is None:
            fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                kind = file_kind(os.fstat(fd).st_mode)
            except BaseException:
                os.close(fd)
                raise
            if kind is None:
                os.set_blocking(fd, True)
                return fd
            os.close(fd)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file", UNREADABLE) from None
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"{path}: cannot read: {why}", UNREADABLE) from None
    raise CliError(not_a_log(path, kind), UNREADABLE)


@attrs.frozen
class Live:
    """The log is held by a live writer: its ``flock`` (spec/persistence.md §4), or for a
    session in a database its current lease (``lease`` names owner and expiry,
    spec/persistence.md §10.2)."""

    pid: int | None
    lease: str | None = None

    def holder(self) -> str:
        return "another process" if self.pid is None else f"process {self.pid}"

    def locked(self) -> str:
        """``locked by process 4242`` or ``leased by HOST:PID:RND until TIME``."""
        return self.lease if self.lease is not None else f"locked by {self.holder()}"


def _probe_live(fd: int, path: str) -> Live | None:
    """A momentary shared-lock probe, as the store's own readers do (spec/persistence.md §4):
    blocked means a writer holds the session; the pid file beside the log names it."""
    if shared_lock_free(fd) is False:
        return Live(holder_pid(path))
    return None


#: Read buffer of the file commands: big enough that a read is rarely a system call per line.
_BUFFER = 1 << 20

#: Whether the input is live now (probed before and after a read).
Probe = Callable[[], "Live | None"]

#: Opens one input of a file command: its log as a binary stream, and its liveness probe.
Reader = Callable[[], contextlib.AbstractContextManager[tuple[BinaryIO, Probe]]]


@contextlib.contextmanager
def open_log(path: str) -> Iterator[tuple[BinaryIO, Probe]]:
    """The log file ``path`` as a binary stream, and the probe of its writer's lock.

    A regular file only (:func:`open_regular`); the lock is probed, never held while reading:
    a reader must never make a writer's open fail (spec/cli.md §Live sessions).
    """
    fd = open_regular(path)
    with open(fd, "rb", buffering=_BUFFER, closefd=True) as f:
        yield f, functools.partial(_probe_live, fd, path)


def usage_error(command: str, message: str) -> CliError:
    return CliError(
        f"trio-agent {command}: {message} (see `trio-agent {command} --help`)", UNREADABLE
    )


def _stored_live(stored: StoredLog) -> Live | None:
    """A stored session's lease as a :class:`Live` when it is current."""
    if not stored.live:
        return None
    owner = stored.owner or "an unknown owner"
    return Live(None, f"leased by {owner} until {stored.expires}")


@contextlib.contextmanager
def stored_input(stored: StoredLog) -> Iterator[tuple[BinaryIO, Probe]]:
    """A stored session's log (as the bytes of its JSONL file) and its lease."""
    live = _stored_live(stored)
    yield io.BytesIO(stored.data), lambda: live


def _read_stored(dsn: str, session_id: str, where: str) -> StoredLog:
    """A session in a database, read in one go; errors as one line each."""
    from ..store import SessionCorrupt, SessionNotFound, StoreError
    from .stored import read_session

    try:
        return read_session(dsn, session_id)
    except SessionNotFound:
        raise CliError(f"{where}: no such session in {redact(dsn)}", UNREADABLE) from None
    except SessionCorrupt as exc:
        raise CliError(str(exc), BROKEN) from None
    except StoreError as exc:
        raise CliError(f"{redact(dsn)}: cannot read the store: {exc}", UNREADABLE) from None


def _open_stored(
    dsn: str, session_id: str, where: str
) -> contextlib.AbstractContextManager[tuple[BinaryIO, Probe]]:
    return stored_input(_read_stored(dsn, session_id, where))


def store_where(session_id: str) -> str:
    """How messages name a session stored in a database (the store's own errors do too)."""
    return f"postgres:{session_id}"


def _store_input(command: str, store: str, session_id: str) -> tuple[str, Reader]:
    """``--store STORE --session ID``: a database session, or a JSONL store directory's log."""
    if is_dsn(store):
        where = store_where(session_id)
        return where, functools.partial(_open_stored, store, session_id, where)
    root = Path(store)
    if (problem := directory_problem(root)) is not None:
        raise CliError(
            f"{root}: {problem} (--store takes a store directory or a postgresql:// DSN)",
            UNREADABLE,
        )
    from ..store.ids import escape_id

    path = str(root / escape_id(session_id) / LOG_NAME)
    return path, functools.partial(_open_session_log, path, session_id)


#: The longest header line read to compare its id (an id is at most 4096 bytes of UTF-8, each
#: at most six bytes as a JSON escape); a longer first line is left to the scan, which words
#: what is wrong with it.
_HEADER_READ = 64 * 1024


@contextlib.contextmanager
def _open_session_log(path: str, session_id: str) -> Iterator[tuple[BinaryIO, Probe]]:
    """:func:`open_log` of session ``session_id``'s log in a store directory, whose header
    must name that session, as the store's cold open requires (spec/persistence.md §5): a
    log copied or renamed into another session's directory is corrupt there (exit 1), as
    ``run --session ID`` finds it, however valid it is as a file."""
    with open_log(path) as (f, probe):
        first = f.readline(_HEADER_READ)
        f.seek(0)
        try:
            named = decode_header(first.removesuffix(b"\n")).id
        except HeaderError:  # the scan says what is wrong with it
            named = session_id
        if named != session_id:
            what = other_session(named, session_id)
            raise CliError(f"{path}:1: {what}", BROKEN, line=1, what=what)
        yield f, probe


def inputs_of(args: argparse.Namespace, files: list[str]) -> list[tuple[str, Reader]]:
    """What a file command reads: its FILE arguments, or ``--store STORE --session ID``."""
    command = args.command
    if args.store is None:
        if args.session is not None:
            raise usage_error(command, "--session needs --store STORE")
        if not files:
            raise usage_error(command, "give a FILE, or --store STORE --session ID")
        return [(path, functools.partial(open_log, path)) for path in files]
    if files:
        raise usage_error(command, "give either FILE or --store STORE --session ID, not both")
    if args.session is None:
        raise usage_error(command, "--store needs --session ID (the session to read)")
    return [_store_input(command, args.store, args.session)]


def one_input(args: argparse.Namespace) -> tuple[str, Reader]:
    return inputs_of(args, [args.file] if args.file is not None else [])[0]


def stream_log(
    path: str,
    f: BinaryIO,
    *,
    strict: bool,
    sink: Sink | None = None,
    sink_types: Collection[str] | None = None,
    line_sink: Callable[[bytes], None] | None = None,
    lines: Iterable[bytes] | None = None,
    item_sink: Callable[[object], None] | None = None,
) -> LineScan:
    """:func:`scan_lines` over ``f`` from its start, every core error and read error mapped to
    a one-line :class:`CliError`. Memory is the checker's state, whatever the file's size.

    ``lines``, when given, are ``f``'s lines as the scan takes them, read lazily from its
    start (``show`` reads them in batches, see ``cli/show.py``)."""
    try:
        f.seek(0)
        return scan_lines(
            f if lines is None else lines,
            strict=strict,
            sink=sink,
            sink_types=sink_types,
            line_sink=line_sink,
            item_sink=item_sink,
        )
    except HeaderError as exc:
        raise CliError(f"{path}:1: {exc}", UNREADABLE, line=1, what=str(exc)) from None
    except UnreadableLineError as exc:
        raise CliError(
            f"{path}:{exc.line}: {exc.message}", UNREADABLE, line=exc.line, what=exc.message
        ) from None
    except LogViolation as exc:
        seq = "?" if exc.seq is None else exc.seq
        what = f"{path}:{exc.line}: seq {seq}: {exc.rule}: {exc.message}"
        raise CliError(
            what, BROKEN, line=exc.line, rule=exc.rule, seq=exc.seq, what=exc.message
        ) from None
    except OSError as exc:
        why = f"cannot read: {exc.strerror or exc}"
        raise CliError(f"{path}: {why}", UNREADABLE, what=why) from None


def scan_live(
    path: str,
    *,
    strict: bool,
    sink: Sink | None = None,
    sink_types: Collection[str] | None = None,
    line_sink: Callable[[bytes], None] | None = None,
    read: Reader | None = None,
) -> tuple[LineScan, Live | None]:
    """Stream and check ``path`` (opened by ``read``, when given); ``(scan, live)``, live
    probed before and after the read."""
    opener = read if read is not None else functools.partial(open_log, path)
    with opener() as (f, probe):
        live = probe()
        scan = stream_log(
            path, f, strict=strict, sink=sink, sink_types=sink_types, line_sink=line_sink
        )
        return scan, live or probe()


def note_tail(path: str, scan: LineScan, err: TextIO) -> None:
    """The one-line note on stderr when a torn tail was ignored (spec/cli.md)."""
    if scan.tail is not None:
        t, shown = scan.tail, visible(path)
        print(f"{shown}:{t.line}: note: torn tail ignored ({t.size} bytes): {t.reason}", file=err)


def live_words(path: str, scan: LineScan, live: Live) -> str:
    return f"{visible(path)}: session {scan.header.id!r} is live ({live.locked()})"


def refuse_live(path: str, scan: LineScan, live: Live | None) -> None:
    """Repair and truncate describe a cold session only: a live one is refused, exit 3
    (spec/cli.md §Live sessions)."""
    if live is not None:
        raise CliError(
            f"{live_words(path, scan, live)}; a live session is never repaired or truncated, "
            "so there is nothing to show",
            REFUSED,
        )


def events_of(f: BinaryIO, count: int) -> Iterator[Event]:
    """The first ``count`` events of a log a scan already accepted, decoded again from ``f``
    (positioned after the header): the second pass of ``show``, one event in memory at a time.

    The scan checked these very lines (I0 and every rule), so each is parsed into its event
    as a session's held lines are (:func:`~trio_agent.log.lines.event_of_line`), without
    running the shape predicates again; a line that no longer parses into the four
    fields of an event (the file rewritten in place between the passes) still goes through
    :func:`decode_event`, which raises the worded error."""
    for _, line in zip(range(count), f, strict=False):
        try:
            event = event_of_line(line)
        except (orjson.JSONDecodeError, KeyError, TypeError):
            event = decode_event(line[:-1])
        yield event
