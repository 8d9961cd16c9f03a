"""``trio-agent sessions``: the sessions of a store, live, cold or crashed (spec/cli.md)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shlex
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from ..files import directory_problem, other_session
from ..log.render import visible
from ..store.ids import unescape_id
from .dsn import is_dsn, redact
from .errors import BROKEN, OK, UNREADABLE, CliError
from .inputs import Probe, Reader, open_log, scan_live, store_where, stored_input, usage_error

if TYPE_CHECKING:
    from ..store import JsonlStore


def _when(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms"


def _session_row(
    session_id: str, where: str, read: Reader, *, store: str | None = None
) -> list[str]:
    """One line of ``sessions``: id, turns, events, last activity, state. ``store`` is the
    ``--store`` to name in the hints (``None``: the ``--root`` directory's file)."""
    try:
        scan, live = scan_live(where, strict=False, read=read)
    except CliError as exc:
        what = "corrupt" if exc.code == BROKEN else "unreadable"
        if store is None:
            check = shlex.quote(where)
        else:
            check = f"--store {shlex.quote(store)} --session {shlex.quote(session_id)}"
        return [session_id, "-", "-", "-", f"{what} (trio-agent check {check})"]
    if store is None and scan.header.id != session_id:  # in another session's directory
        return [session_id, "-", "-", "-", f"corrupt: {other_session(scan.header.id, session_id)}"]
    last = scan.last_time if scan.count else scan.header.created_at
    turn = scan.checker.open_turn
    run = "" if store is None else f"--store {shlex.quote(store)} "
    session = shlex.quote(session_id)
    if live is not None:
        holder = live.holder() if live.lease is None else live.lease
        state = f"live ({holder})" + (f", turn {turn} running" if turn else "")
    elif turn is not None:
        state = f"crashed: turn {turn} open (run {run}--session {session} repairs it)"
    elif scan.tail is not None:  # what the next cold open cuts (spec/recovery.md)
        cut = f"{scan.tail.size} bytes from line {scan.tail.line}"
        state = f"cold, a tail to cut: {cut} (run {run}--session {session} cuts it)"
    else:
        state = "cold"
    turns = str(scan.checker.last_turn)
    return [session_id, turns, str(scan.count), _when(last), state]


def _store_option(args: argparse.Namespace) -> str | None:
    """The ``--store`` value naming a database, or ``None`` (then ``args.root`` is the
    JSONL store directory, from ``--root`` or a ``--store`` that is not a DSN)."""
    if args.store is None:
        return None
    if args.root is not None:
        raise usage_error(args.command, "give either --root DIR or --store STORE, not both")
    if is_dsn(args.store):
        return str(args.store)
    args.root = args.store
    return None


@contextlib.contextmanager
def _failing_input(error: CliError) -> Iterator[tuple[BinaryIO, Probe]]:
    raise error
    yield  # pragma: no cover - unreachable; makes this a generator


def _stored_rows(dsn: str) -> list[list[str]]:
    """The ``sessions`` rows of a database store (each session read once, in one go)."""
    from ..store import StoreError
    from .stored import list_sessions

    try:
        found = list_sessions(dsn)
    except StoreError as exc:
        raise CliError(f"{redact(dsn)}: cannot read the store: {exc}", UNREADABLE) from None
    rows = []
    shown = redact(dsn)
    for sid, stored in found:
        where = store_where(sid)
        read: Reader
        if isinstance(stored, StoreError):
            read = functools.partial(_failing_input, CliError(f"{where}: {stored}", BROKEN))
        else:
            read = functools.partial(stored_input, stored)
        rows.append(_session_row(sid, where, read, store=shown))
    return rows


def cmd_sessions(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import trio

    from ..store import JsonlStore

    dsn = _store_option(args)
    if dsn is not None:
        found = _stored_rows(dsn)
        if not found:
            print(f"{redact(dsn)}: note: no sessions here", file=err)
            return OK
        _print_table(found, out)
        return OK
    root = Path(args.root if args.root is not None else "sessions")
    if (problem := directory_problem(root)) is not None:
        raise CliError(f"{root}: {problem} (give the store's directory with --root)", UNREADABLE)
    store = JsonlStore(root)
    try:
        ids = trio.run(store.session_ids)
    except OSError as exc:  # the directory itself cannot be listed (no read permission)
        raise CliError(f"{root}: cannot read: {exc.strerror or exc}", UNREADABLE) from None
    ids = sorted([*ids, *_unlisted(store, ids)])
    if not ids:
        print(f"{visible(str(root))}: note: no sessions here", file=err)
        return OK
    found = []
    for sid in ids:
        path = str(store.path_of(sid))
        found.append(_session_row(sid, path, functools.partial(open_log, path)))
    _print_table(found, out)
    return OK


def _unlisted(store: JsonlStore, listed: list[str]) -> list[str]:
    """The ids whose directory under the root holds a log (a regular file) that the store
    does not list (spec/persistence.md §1): its header cannot be read, or names another
    session (a directory copied or renamed). ``sessions`` shows them as unreadable or
    corrupt, as ``run --session ID`` would find them, instead of passing them over."""
    known = set(listed)
    unlisted = []
    try:
        entries = list(os.scandir(store.root))
    except OSError:  # gone or unreadable since the store listed it: nothing more to show
        return []
    for entry in entries:
        session_id = unescape_id(entry.name)
        if session_id is None or session_id in known:
            continue
        try:
            if stat.S_ISREG(os.lstat(store.path_of(session_id)).st_mode):
                unlisted.append(session_id)
        except OSError:  # no log there (or not a directory): not a session
            continue
    return unlisted


#: The widest the ID column grows: a longer id (one may take 4,096 bytes) overflows its cell
#: instead of pushing every row's other columns that far right.
_ID_WIDTH = 40


def _print_table(found: list[list[str]], out: TextIO) -> None:
    """The rows under their heading, columns aligned. Every cell has its control characters
    shown (``visible``): an id or a holder read from the store cannot drive the terminal."""
    rows = [["ID", "TURNS", "EVENTS", "LAST ACTIVITY", "STATE"]]
    rows += [[visible(cell) for cell in row] for row in found]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    widths[0] = min(widths[0], _ID_WIDTH)
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out.write("  ".join([*cells, row[4]]) + "\n")
