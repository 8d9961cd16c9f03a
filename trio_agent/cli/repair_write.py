"""The command line's side of the store: ``repair --write`` and the errors of opening a session.

Presentation only; the store does the work. Output follows the CLI's conventions
(:mod:`trio_agent.cli`): the closers appended, one JSON line each, on stdout; notes and
problems, one line each, on stderr (a :class:`~trio_agent.cli.errors.CliError`, printed once
by :func:`trio_agent.cli.main`); never a traceback. The exit codes are ``repair``'s, as
:mod:`trio_agent.cli.errors` states them.

Whoever opens a store passes it the orphan reaper; here it is
:func:`trio_agent.procs.reap_orphans` unless ``--no-reap`` (spec/persistence.md §5).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final, TextIO

import trio

from ..log.codec import encode_event
from ..log.envelope import Event
from ..log.render import visible
from ..procs import reap_orphans
from ..store import (
    CreateFailed,
    NotALogFile,
    RepairReport,
    SessionCorrupt,
    SessionExists,
    SessionFenced,
    SessionLocked,
    SessionNotFound,
    StoreError,
    UnsupportedFormat,
    WriteFailed,
    repair_file,
)
from ..store.recovery import Reaper, cold_scan
from .dsn import redact
from .errors import BROKEN, OK, REFUSED, UNREADABLE, CliError, plural

#: What each R5 kind (spec/recovery.md) did, as the command line's notes say it.
REAPED_NOTES: Final = {
    "stopped": "its orphaned process group was stopped (every process carrying its marker)",
    "namespace-ended": "its orphaned PID namespace was ended (the kernel stopped all of it)",
    "namespace-gone": "its PID namespace had ended with its runtime; nothing was left",
    "owner-running": "the runtime that started it still runs; nothing was signalled",
}

if TYPE_CHECKING:
    from ..store import PostgresStore

__all__ = ["cannot_write", "reaper", "repair_session", "run_repair_file", "session_errors"]


def reaper(no_reap: bool) -> Reaper | None:
    """The orphan reaper the command line gives a store: none with ``--no-reap``."""
    return None if no_reap else reap_orphans


def cannot_write(where: str, exc: WriteFailed, fate: str) -> str:
    """``run``'s one line for a write the disk refused (spec/cli.md §`trio-agent run`'s
    screen): ``WHERE: cannot write the session log (REASON); FATE (the log is a valid prefix,
    which the next open repairs)``."""
    reason = exc.cause.strerror or exc.errno
    return (
        f"{where}: cannot write the session log ({reason}); {fate} (the log is a valid "
        "prefix, which the next open repairs)"
    )


@contextlib.contextmanager
def session_errors(
    where: str, *, dsn: str | None = None, repairing: bool = False
) -> Iterator[None]:
    """Opening (or repairing) the session ``where`` names: each store error raised inside
    becomes one :class:`CliError` line with its exit code.

    ``dsn`` is the database the session is in (``None``: a JSONL file, and ``where`` is its
    path). ``repairing`` words it for ``repair --write``: a live session is refused, a failed
    write says to run repair again, a missing session is named.
    """
    try:
        yield
    except SessionNotFound as exc:
        if repairing and dsn is not None:
            raise CliError(f"{where}: no such session in {redact(dsn)}", UNREADABLE) from None
        raise _store_error(where, dsn, exc) from None
    except (SessionLocked, SessionExists, SessionFenced) as exc:
        if repairing:
            raise CliError(f"{where}: refused: {exc}", REFUSED) from None
        if isinstance(exc, SessionFenced):
            raise _store_error(where, dsn, exc) from None
        raise CliError(f"{where}: {exc}", REFUSED) from None
    except WriteFailed as exc:
        if repairing:
            what = f"{where}: {exc} (nothing was written; run repair again)"
            raise CliError(what, REFUSED) from None
        # The cold open's repair could not append its closers.
        fate = f"the {plural(exc.queued, 'event')} its cold open appends were not written"
        raise CliError(
            cannot_write(where, exc, fate), REFUSED if dsn is not None else UNREADABLE
        ) from None
    except SessionCorrupt as exc:
        raise CliError(str(exc), BROKEN) from None
    except (UnsupportedFormat, NotALogFile, CreateFailed) as exc:  # their messages name it
        raise CliError(str(exc), UNREADABLE) from None
    except StoreError as exc:
        raise _store_error(where, dsn, exc) from None
    except OSError as exc:
        if dsn is not None:
            raise
        what = f"{where}: cannot open the session: {exc.strerror or exc}"
        raise CliError(what, UNREADABLE) from None


def _store_error(where: str, dsn: str | None, exc: StoreError) -> CliError:
    if dsn is None:
        return CliError(f"{where}: {exc}", UNREADABLE)
    return CliError(f"{redact(dsn)}: cannot use the store: {exc}", UNREADABLE)


@contextlib.contextmanager
def _file_repair_errors(path: str) -> Iterator[None]:
    """``repair FILE --write``: the store's errors about one file as one line each (the
    file's own ``FILE:LINE:`` place, and whether it was modified)."""
    try:
        yield
    except SessionNotFound:
        raise CliError(f"{path}: no such file", UNREADABLE) from None
    except UnsupportedFormat as exc:
        raise CliError(f"{path}:1: {exc.message.removeprefix('line 1: ')}", UNREADABLE) from None
    except SessionCorrupt as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else path
        if exc.seq is None and exc.rule == "I0":  # a committed line that is not JSON
            raise CliError(f"{where}: {exc.message} (file not modified)", UNREADABLE) from None
        seq = "?" if exc.seq is None else exc.seq
        rule = f"{exc.rule}: " if exc.rule else ""
        what = f"{where}: seq {seq}: {rule}{exc.message} (file not modified)"
        raise CliError(what, BROKEN) from None
    except SessionLocked as exc:
        raise CliError(f"{path}: refused: {exc}", REFUSED) from None
    except WriteFailed as exc:
        what = f"{path}: {exc} (the file holds a valid prefix; run repair again)"
        raise CliError(what, REFUSED) from None
    except NotALogFile as exc:
        raise CliError(str(exc), UNREADABLE) from None
    except OSError as exc:
        raise CliError(f"{path}: cannot repair: {exc.strerror or exc}", REFUSED) from None


def run_repair_file(path: str, out: TextIO, err: TextIO, *, reap_orphans: Reaper | None) -> int:
    """``repair FILE --write``: repair ``path`` in place (``trio.run``), print what was done,
    return the exit code (a problem is its one line on ``err``)."""
    try:
        with _file_repair_errors(path):
            report = trio.run(_repair, path, reap_orphans)
    except CliError as exc:
        print(exc.stderr_line, file=err)
        return exc.code
    # One line, whatever the name holds (spec/cli.md §stderr: errors and notes).
    shown = visible(path)
    if report.torn_bytes:
        cut = f"{report.torn_bytes} bytes of torn tail"
        print(f"{shown}: note: cut {cut} ({report.damage})", file=err)
    for call_id, kind in report.reaped.items():
        print(f"{shown}: note: call {call_id}: {REAPED_NOTES.get(kind, kind)}", file=err)
    _print_repaired(shown, report.closers, report.events, report.changed, out, err)
    return OK


async def _repair(path: str, reap_orphans: Reaper | None) -> RepairReport:
    return await repair_file(path, reap_orphans=reap_orphans)


def repair_session(
    dsn: str, session_id: str, where: str, out: TextIO, err: TextIO, *, no_reap: bool
) -> int:
    """``repair --write --store DSN``: take the session's lease (``open``: the cold open's
    repair, fenced by the new token), print the closers it appended, give the lease back."""
    with session_errors(where, dsn=dsn, repairing=True):
        closers, events = trio.run(_repair_stored, dsn, session_id, where, reaper(no_reap))
    _print_repaired(where, closers, events, bool(closers), out, err)
    return OK


async def _repair_stored(
    dsn: str, session_id: str, where: str, reap: Reaper | None
) -> tuple[list[Event], int]:
    from ..store import PostgresStore

    store: PostgresStore
    async with PostgresStore(dsn, reap_orphans=reap) as store:
        before = await store.read_log(session_id)
        kept = len(cold_scan(before.data, where, session_id).events)
        session = await store.open(session_id)
        closers = list(session.events[kept:])
        await session.aclose()
    return closers, len(session.events)


def _print_repaired(
    where: str, closers: Sequence[Event], events: int, changed: bool, out: TextIO, err: TextIO
) -> None:
    for event in closers:
        out.write(encode_event(event).decode())
    if changed:
        print(
            f"{where}: repaired: {len(closers)} closing event(s) appended, {events} events",
            file=err,
        )
    else:
        print(f"{where}: nothing to repair ({events} events, balanced)", file=err)
