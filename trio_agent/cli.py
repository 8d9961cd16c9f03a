"""``trio-agent``: the command line (also ``python -m trio_agent``).

File commands run the pure core (:mod:`trio_agent.log`) on a log file. Exit codes
(spec/cli.md §Exit codes): 0 ok, 1 the log breaks a rule (or ``--balanced`` found an open
turn), 2 unreadable input (missing or not a regular file; missing, malformed or foreign
header; a complete line that is not JSON) or a usage error, 3 refused (the session is live,
or ``repair --write`` failed), 70 internal error, 130 Ctrl-C, 141 stdout closed by its reader.
Every problem is one line on stderr, ``FILE:LINE: seq N: I<k>: <what>``; never a traceback:
whatever escapes a command, exception groups included, is turned into one line at the top.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import io
import os
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NoReturn, TextIO

import attrs
import orjson

from . import conform
from .dsn import is_dsn, redact
from .failures import leaves
from .filekind import file_kind
from .log import (
    FOLD_TYPES,
    REAP_KINDS,
    ConsumedFold,
    ConsumedWork,
    Event,
    Header,
    HeaderError,
    LineScan,
    LogViolation,
    TornTail,
    TruncateFold,
    UnreadableLineError,
    decode_event,
    decode_header,
    encode_event,
    event_to_json,
    repair_closers,
    scan_lines,
)
from .testing import command as harness_command

if TYPE_CHECKING:
    from .clijson import CheckResult, TornTailJson
    from .store.postgres import StoredLog

OK, BROKEN, UNREADABLE, REFUSED = 0, 1, 2, 3


class CliError(Exception):
    """One line for stderr and an exit code."""

    def __init__(
        self,
        message: str,
        code: int,
        *,
        line: int | None = None,
        rule: str | None = None,
        seq: int | None = None,
        what: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        #: The log line the problem is on (1 = header), when there is one.
        self.line = line
        #: The rule broken (``I<k>``) and the seq as written on that line, for a violation.
        self.rule = rule
        self.seq = seq
        #: The problem without its ``FILE:LINE:`` place (``None``: the whole message).
        self.what = what


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
    raise CliError(f"{path}: {kind}, not a log file (only a regular file is read)", UNREADABLE)


#: Beside a session's log, the pid of the process holding it (spec/persistence.md §4).
_PID_NAME = "session.pid"


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
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid_path = Path(path).with_name(_PID_NAME)
        try:
            text = pid_path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        return Live(int(text) if text.isdigit() else None)
    except OSError:  # no locks on this file system: nothing to learn
        return None
    fcntl.flock(fd, fcntl.LOCK_UN)
    return None


#: Read buffer of the file commands: big enough that a read is rarely a system call per line.
_BUFFER = 1 << 20


#: Whether the input is live now (probed before and after a read).
Probe = Callable[[], "Live | None"]
#: Opens one input of a file command: its log as a binary stream, and its liveness probe.
Reader = Callable[[], contextlib.AbstractContextManager[tuple[BinaryIO, Probe]]]


@contextlib.contextmanager
def _open_log(path: str) -> Iterator[tuple[BinaryIO, Probe]]:
    """The log file ``path`` as a binary stream, and the probe of its writer's lock.

    A regular file only (:func:`open_regular`); the lock is probed, never held while reading:
    a reader must never make a writer's open fail (spec/cli.md §Live sessions).
    """
    fd = open_regular(path)
    with open(fd, "rb", buffering=_BUFFER, closefd=True) as f:
        yield f, functools.partial(_probe_live, fd, path)


# -- --store STORE --session ID: a stored session as the input of a file command ----------


def _usage(command: str, message: str) -> CliError:
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
def _stored_input(stored: StoredLog) -> Iterator[tuple[BinaryIO, Probe]]:
    """A stored session's log (as the bytes of its JSONL file) and its lease."""
    live = _stored_live(stored)
    yield io.BytesIO(stored.data), lambda: live


def _read_stored(dsn: str, session_id: str, where: str) -> StoredLog:
    """A session in a database, read in one go; errors as one line each."""
    from .store import SessionCorrupt, SessionNotFound, StoreError
    from .store.db_cli import read_session

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
    return _stored_input(_read_stored(dsn, session_id, where))


def store_where(session_id: str) -> str:
    """How messages name a session stored in a database (the store's own errors do too)."""
    return f"postgres:{session_id}"


def _store_input(command: str, store: str, session_id: str) -> tuple[str, Reader]:
    """``--store STORE --session ID``: a database session, or a JSONL store directory's log."""
    if is_dsn(store):
        where = store_where(session_id)
        return where, functools.partial(_open_stored, store, session_id, where)
    root = Path(store)
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "no such directory"
        raise CliError(
            f"{root}: {what} (--store takes a store directory or a postgresql:// DSN)",
            UNREADABLE,
        )
    from .store.ids import escape_id
    from .store.jsonl import LOG_NAME

    path = str(root / escape_id(session_id) / LOG_NAME)
    return path, functools.partial(_open_log, path)


def _inputs(args: argparse.Namespace, files: list[str]) -> list[tuple[str, Reader]]:
    """What a file command reads: its FILE arguments, or ``--store STORE --session ID``."""
    command = args.command
    if args.store is None:
        if args.session is not None:
            raise _usage(command, "--session needs --store STORE")
        if not files:
            raise _usage(command, "give a FILE, or --store STORE --session ID")
        return [(path, functools.partial(_open_log, path)) for path in files]
    if files:
        raise _usage(command, "give either FILE or --store STORE --session ID, not both")
    if args.session is None:
        raise _usage(command, "--store needs --session ID (the session to read)")
    return [_store_input(command, args.store, args.session)]


def _reaped_pair(value: str) -> tuple[str, str]:
    """``CALL_ID=KIND`` of ``repair --reaped`` (spec/cli.md), KIND an R5 kind."""
    call_id, sep, kind = value.rpartition("=")
    if not sep or not call_id or kind not in REAP_KINDS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: want CALL_ID=KIND, KIND one of {', '.join(REAP_KINDS)}"
        )
    return call_id, kind


def _one_input(args: argparse.Namespace) -> tuple[str, Reader]:
    return _inputs(args, [args.file] if args.file is not None else [])[0]


def _stream(
    path: str,
    f: BinaryIO,
    *,
    strict: bool,
    sink: Callable[[Event], None] | None = None,
    sink_types: Collection[str] | None = None,
) -> LineScan:
    """:func:`scan_lines` over ``f`` from its start, every core error and read error mapped to
    a one-line :class:`CliError`. Memory is the checker's state, whatever the file's size."""
    try:
        f.seek(0)
        return scan_lines(f, strict=strict, sink=sink, sink_types=sink_types)
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


def _scan_live(
    path: str,
    *,
    strict: bool,
    sink: Callable[[Event], None] | None = None,
    sink_types: Collection[str] | None = None,
    read: Reader | None = None,
) -> tuple[LineScan, Live | None]:
    """Stream and check ``path`` (opened by ``read``, when given); ``(scan, live)``, live
    probed before and after the read."""
    opener = read if read is not None else functools.partial(_open_log, path)
    with opener() as (f, probe):
        live = probe()
        scan = _stream(path, f, strict=strict, sink=sink, sink_types=sink_types)
        return scan, live or probe()


def _note_tail(path: str, scan: LineScan, err: TextIO) -> None:
    """The one-line note on stderr when a torn tail was ignored (spec/cli.md)."""
    if scan.tail is not None:
        t = scan.tail
        print(f"{path}:{t.line}: note: torn tail ignored ({t.size} bytes): {t.reason}", file=err)


def _live_words(path: str, scan: LineScan, live: Live) -> str:
    return f"{path}: session {scan.header.id!r} is live ({live.locked()})"


def _refuse_live(path: str, scan: LineScan, live: Live | None) -> None:
    """Repair and truncate describe a cold session only: a live one is refused, exit 3
    (spec/cli.md §Live sessions)."""
    if live is not None:
        raise CliError(
            f"{_live_words(path, scan, live)}; a live session is never repaired or truncated, "
            "so there is nothing to show",
            REFUSED,
        )


def _fold_slice(path: str) -> ConsumedWork:
    """The fold of a slice file (a header, then events of a longer log): every complete line
    decoded (I0 applies), no other rule checked; a torn tail is ignored. Streamed."""
    fold = ConsumedFold()
    with _open_log(path) as (f, _probe):
        try:
            lines = iter(f)
            first = next(lines, b"")
            if not first.endswith(b"\n"):
                raise CliError(f"{path}:1: the header line is missing or incomplete", UNREADABLE)
            decode_header(first[:-1])
            for line_no, line in enumerate(lines, start=2):
                if line.endswith(b"\n"):  # else the torn final line, ignored
                    fold.feed(decode_event(line[:-1], line_no))
        except HeaderError as exc:
            raise CliError(f"{path}:1: {exc}", UNREADABLE) from None
        except UnreadableLineError as exc:
            raise CliError(f"{path}:{exc.line}: {exc.message}", UNREADABLE) from None
        except LogViolation as exc:
            seq = "?" if exc.seq is None else exc.seq
            what = f"{path}:{exc.line}: seq {seq}: {exc.rule}: {exc.message}"
            raise CliError(what, BROKEN) from None
        except OSError as exc:
            raise CliError(f"{path}: cannot read: {exc.strerror or exc}", UNREADABLE) from None
    return fold.result


def _events_of(f: BinaryIO, count: int) -> Iterator[Event]:
    """The first ``count`` events of a log a scan already accepted, decoded again from ``f``
    (positioned after the header): the second pass of ``show``, one event in memory at a time."""
    for _, line in zip(range(count), f, strict=False):
        yield decode_event(line[:-1])


def plural(n: int, word: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# -- commands -----------------------------------------------------------------------------


# The JSON records (``clijson``, which loads cattrs) and the timeline renderer are imported
# where they are used: ``check``/``repair``/``fold``/``truncate`` without ``--json`` load
# neither, which keeps the start-up of a file command (one process per conformance case) short.


def _tail_json(scan: LineScan) -> TornTailJson | None:
    from .clijson import TornTailJson

    t = scan.tail
    return None if t is None else TornTailJson(t.line, t.size, t.reason)


def _failed_json(path: str, exc: CliError) -> CheckResult:
    """``check --json`` for a FILE that could not be checked (or broke a rule)."""
    from .clijson import CheckResult

    return CheckResult(
        path=path,
        ok=False,
        exit=exc.code,
        events=None,
        turns=None,
        open_turn=None,
        torn_tail=None,
        live=False,
        rule=exc.rule,
        seq=exc.seq,
        line=exc.line,
        message=exc.what if exc.what is not None else str(exc),
    )


def _checked_json(path: str, scan: LineScan, live: bool) -> CheckResult:
    """``check --json`` for a FILE that passed the check."""
    from .clijson import CheckResult

    return CheckResult(
        path=path,
        ok=True,
        exit=OK,
        events=scan.count,
        turns=scan.checker.last_turn,
        open_turn=scan.checker.open_turn,
        torn_tail=_tail_json(scan),
        live=live,
    )


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Check each FILE; with ``--json`` also one :class:`CheckResult` per FILE on stdout
    (the stderr lines and the exit code are the same either way)."""
    worst = OK
    for path, read in _inputs(args, args.files):
        try:
            scan, live = _scan_live(path, strict=True, read=read)
        except CliError as exc:
            print(exc, file=err)
            worst = max(worst, exc.code)
            if args.json:
                _json_line(out, _failed_json(path, exc))
            continue
        _note_tail(path, scan, err)
        if live is not None:
            print(
                f"{path}: note: session {scan.header.id!r} is live ({live.locked()}); "
                "checked what it has written so far",
                file=err,
            )
        turn = scan.checker.open_turn
        if turn is not None and args.balanced:
            line = scan.count + 2  # where its turn/end would go (spec/cli.md)
            what = f"turn {turn} is open (--balanced requires every turn ended)"
            print(f"{path}:{line}: {what}", file=err)
            worst = max(worst, BROKEN)
            if args.json:
                result = _checked_json(path, scan, live is not None)
                result = attrs.evolve(result, ok=False, exit=BROKEN, line=line, message=what)
                _json_line(out, result)
            continue
        if turn is not None and live is None:
            print(
                f"{path}: note: turn {turn} is open (a valid prefix of a live or crashed session)",
                file=err,
            )
        if args.json:
            _json_line(out, _checked_json(path, scan, live is not None))
        else:
            events, turns = plural(scan.count, "event"), plural(scan.checker.last_turn, "turn")
            print(f"{path}: ok ({events}, {turns})", file=out)
    return worst


def cmd_repair(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.write and (args.stopped or args.reaped):
        raise CliError(
            "trio-agent repair: --stopped and --reaped only describe a dry run; "
            "--write looks for orphans itself",
            UNREADABLE,
        )
    if args.write and args.boot_id is not None:
        raise CliError(
            "trio-agent repair: --boot-id only describes a dry run; --write uses this host's",
            UNREADABLE,
        )
    # --write too reads and checks the file first, so that both modes give the same verdict
    # and the same line on bad input, and a live session is refused before the store is
    # involved (spec/cli.md §Live sessions).
    path, read = _one_input(args)
    scan, live = _scan_live(path, strict=False, read=read)
    _refuse_live(path, scan, live)
    if args.write:
        if args.store is not None and is_dsn(args.store):
            return _repair_stored(args.store, args.session, path, out, err, no_reap=args.no_reap)
        from .cli_repair import reaper, run_repair_file  # the trio layer, only when writing

        return run_repair_file(path, out, err, reap_orphans=reaper(args.no_reap))
    _note_tail(path, scan, err)
    reaped = {call_id: "stopped" for call_id in args.stopped}
    reaped.update(args.reaped)
    for event in repair_closers(scan.checker, reaped, args.boot_id):
        out.write(encode_event(event).decode())
    return OK


def _repair_stored(
    dsn: str, session_id: str, where: str, out: TextIO, err: TextIO, *, no_reap: bool
) -> int:
    """``repair --write --store DSN``: the store's own cold open (lease taken, repair fenced by
    the new token, lease given back); its errors as one line each."""
    from .cli_repair import repair_session  # the trio layer, only when writing

    return repair_session(dsn, session_id, where, out, err, no_reap=no_reap)


def cmd_fold(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.suffix:  # a slice of a longer log: decoded, not checked (spec/cli.md)
        work = _fold_slice(args.file)
    else:
        # Read like repair (spec/cli.md): the kept events stream into the fold (C5: the fold
        # itself validates nothing); only the four types it looks at are handed over.
        fold = ConsumedFold()
        scan, _ = _scan_live(args.file, strict=False, sink=fold.feed, sink_types=FOLD_TYPES)
        _note_tail(args.file, scan, err)
        work = fold.result
    out.write(
        orjson.dumps({"end_seq": work.end_seq, "dropped_unrun": work.dropped_unrun}).decode() + "\n"
    )
    return OK


def cmd_truncate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    truncation = TruncateFold()  # holds the open turn only
    scan, live = _scan_live(args.file, strict=False, sink=truncation.feed)
    _refuse_live(args.file, scan, live)
    _note_tail(args.file, scan, err)
    report = truncation.report()
    out.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    return OK


def _json_line(out: TextIO, record: object) -> None:
    from . import clijson

    out.write(clijson.dumps(record) + "\n")


def _show_events(
    out: TextIO,
    header: Header,
    events: Iterator[Event],
    closers: Sequence[Event],
    tail: TornTail | None,
    *,
    count: int,
    live: bool,
    json: bool,
    color: bool,
    full: bool,
) -> None:
    """The body of ``show``: the timeline, or with ``json`` its JSON Lines (spec/cli.md)."""
    if not json:
        from .log.render import render_timeline

        for line in render_timeline(
            header, events, closers, tail, color=color, count=count, full=full
        ):
            out.write(line + "\n")
        return
    from .clijson import ShowEvent, ShowHeader, ShowTornTail

    _json_line(
        out, ShowHeader(session=header.id, created_at=header.created_at, events=count, live=live)
    )
    for event in events:
        _json_line(out, ShowEvent("event", event_to_json(event)))
    for event in closers:
        _json_line(out, ShowEvent("closer", event_to_json(event)))
    if tail is not None:
        _json_line(out, ShowTornTail(line=tail.line, bytes=tail.size, reason=tail.reason))


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The timeline; a log that breaks a rule is shown up to the offending line, which is
    marked with the rule, and the command exits 1 (2 for a line that is not JSON).

    Two passes over the file: the scan (counts, closers, the tail), then the rendering, which
    decodes the accepted lines again one at a time (memory does not grow with the log)."""
    path, read = _one_input(args)
    color = args.color
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    color = color and not args.json
    shape = {"json": bool(args.json), "color": bool(color), "full": bool(args.full)}
    with read() as (f, probe):
        live = probe()
        try:
            scan = _stream(path, f, strict=False)
        except CliError as exc:
            if exc.line is None or exc.line < 2:
                raise
            count = exc.line - 2
            try:
                f.seek(0)
                header = decode_header(f.readline()[:-1])
                events = _events_of(f, count)
                _show_events(
                    out, header, events, (), None, count=count, live=live is not None, **shape
                )
                raw = f.readline().removesuffix(b"\n")
            except (HeaderError, UnreadableLineError, LogViolation, OSError):
                raise exc from None
            what = exc.what if exc.what is not None else str(exc)
            if args.json:
                from .clijson import ShowViolation

                text = raw.decode("utf-8", "replace")
                violation = ShowViolation(
                    line=exc.line,
                    rule=exc.rule,
                    seq=exc.seq,
                    message=what,
                    exit=exc.code,
                    text=text,
                )
                _json_line(out, violation)
            else:
                long = len(raw) > 120 and not args.full
                shown = (raw[:120] if long else raw).decode("utf-8", "replace")
                shown += "..." if long else ""
                mark = f"line {exc.line}: {str(exc).removeprefix(f'{path}:{exc.line}: ')}"
                red, reset = ("\x1b[31m", "\x1b[0m") if color else ("", "")
                out.write(f"{red}!! {mark}{reset}\n   {shown}\n")
            out.flush()
            raise
        live = live or probe()
        if live is None:
            closers = repair_closers(scan.checker)
        else:  # a live session is never given synthetic boundaries (spec/cli.md §Live sessions)
            closers = []
            print(
                f"{_live_words(path, scan, live)}; a live session is never repaired, "
                "so no closers are shown",
                file=err,
            )
        f.seek(0)
        f.readline()  # the header, already decoded by the scan
        _show_events(
            out,
            scan.header,
            _events_of(f, scan.count),
            closers,
            scan.tail,
            count=scan.count,
            live=live is not None,
            **shape,
        )
    return OK


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
        scan, live = _scan_live(where, strict=False, read=read)
    except CliError as exc:
        what = "corrupt" if exc.code == BROKEN else "unreadable"
        check = where if store is None else f"--store {store} --session {session_id}"
        return [session_id, "-", "-", "-", f"{what} (trio-agent check {check})"]
    last = scan.last_time if scan.count else scan.header.created_at
    turn = scan.checker.open_turn
    if live is not None:
        holder = live.holder() if live.lease is None else live.lease
        state = f"live ({holder})" + (f", turn {turn} running" if turn else "")
    elif turn is not None:
        run = "" if store is None else f"--store {store} "
        state = f"crashed: turn {turn} open (run {run}--session {session_id} repairs it)"
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
        raise _usage(args.command, "give either --root DIR or --store STORE, not both")
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
    from .store import StoreError
    from .store.db_cli import list_sessions

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
            read = functools.partial(_stored_input, stored)
        rows.append(_session_row(sid, where, read, store=shown))
    return rows


def cmd_sessions(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import trio

    from .store import JsonlStore

    dsn = _store_option(args)
    if dsn is not None:
        found = _stored_rows(dsn)
        if not found:
            print(f"{redact(dsn)}: note: no sessions here", file=err)
            return OK
        _print_table(found, out)
        return OK
    root = Path(args.root if args.root is not None else "sessions")
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "no such directory"
        raise CliError(f"{root}: {what} (give the store's directory with --root)", UNREADABLE)
    store = JsonlStore(root)
    ids = trio.run(store.list)
    if not ids:
        print(f"{root}: note: no sessions here", file=err)
        return OK
    found = []
    for sid in ids:
        path = str(store.path_of(sid))
        found.append(_session_row(sid, path, functools.partial(_open_log, path)))
    _print_table(found, out)
    return OK


def _print_table(found: list[list[str]], out: TextIO) -> None:
    rows = [["ID", "TURNS", "EVENTS", "LAST ACTIVITY", "STATE"]]
    rows += found
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out.write("  ".join([*cells, row[4]]) + "\n")


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .demo import run_demo

    return run_demo(args, out, err)


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .interactive import main_run

    return main_run(args, out, err)


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .demo import run_serve

    return run_serve(args, out, err)


# -- parsing ------------------------------------------------------------------------------

DESCRIPTION = """\
Check, repair and read the session logs of a trio agent, and try the agent itself.

A session is a log of events in a JSON Lines file. The file commands check a log against
the rules (spec/invariants.md), print what crash recovery would append to it, and show it
as a readable timeline; they never change a file, except `repair --write`. `run`, `demo`
and `serve` let you feel cancellation (Ctrl-C, Esc) and crash recovery (kill -9) on real
processes.
"""

EPILOG = """\
examples:
  trio-agent demo                      the walkthrough in the terminal
  trio-agent run                       type shell commands; Ctrl-C cancels the running one
  trio-agent check sessions/*/session.jsonl
  trio-agent show FILE

`trio-agent COMMAND --help` explains a command and lists its exit codes.
Problems are one line on stderr, never a traceback (spec/cli.md).
"""

#: Exit codes that every command may return (spec/cli.md §Exit codes).
_COMMON_CODES = """\
  2    usage error (a bad option or argument)
  130  interrupted (Ctrl-C)
  141  stdout was closed by its reader (`| head`); nothing more is printed"""

_FILE_CODES = """\
  0    done
  1    the log breaks a rule: FILE:LINE: seq N: I<k>: <what>
  2    unreadable input: no such file, not a regular file, a bad header or a line that
       is not JSON"""

_STORE_CODE = """
       (with --store: a bad DSN, an unreachable database, no such session)"""

_CODES: dict[str, str] = {
    "check": """\
  0    every FILE is a valid log (with --balanced, no turn is open)
  1    a log breaks a rule, or --balanced found an open turn
  2    unreadable input: no such file, not a regular file, a bad header or a line that
       is not JSON (the worst code over all FILEs is returned)"""
    + _STORE_CODE,
    "repair": _FILE_CODES
    + _STORE_CODE
    + """
  3    refused: the session is live (its writer holds the lock, or its lease is current;
       a live session is never repaired), or --write could not write the repair""",
    "fold": _FILE_CODES,
    "truncate": _FILE_CODES
    + """
  3    refused: the session is live (a live session is never truncated)""",
    "show": _FILE_CODES + _STORE_CODE,
    "demo": """\
  0    every scenario ran and its checks passed
  1    a scenario's check failed (the line says which)
  2    --keep DIR cannot be created or is not a directory, or $TRIO_AGENT_DEMO_PACE is
       not a number of seconds from 0.001 to 10""",
    "run": """\
  0    stdin ended and the last turn finished
  1    the session's log is corrupt (nothing was modified)
  2    unusable --root, --store or --session (a bad DSN, an unreachable database), or the
       log is not a session log; or --model cannot be used (unreachable, --model-name not
       among the models it lists, --api-key-env naming an unset variable), or the log
       could not be written (a full disk)
  3    refused: the session is live in another process (or its lease was taken over by
       another owner while this run was writing it)""",
    "sessions": """\
  0    listed (a session that cannot be read is listed as such)
  2    --root is missing or not a directory, or the --store database cannot be read""",
    "serve": """\
  0    stopped by Ctrl-C or SIGTERM
  2    cannot listen on HOST:PORT (for example the port is in use), or
       $TRIO_AGENT_DEMO_PACE is not a number of seconds from 0.001 to 10""",
    "conform": """\
  0    every selected vector passed
  1    some vector failed (each is listed)
  2    also: the program cannot run (checked before any case)""",
    "harness": """\
  0    every example passed
  1    the state machine found a failure (shrunk rules and reproduction printed)
  2    also: the program cannot run or does not answer hello (checked before any
       example), or Hypothesis is not installed (pip install 'trio-agent[harness]')""",
}


def _epilog(command: str) -> str:
    return f"exit codes:\n{_CODES[command]}\n{_COMMON_CODES}\n"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's own usage errors: one line, exit 2 (same as unreadable input).
        raise CliError(f"{self.prog}: {message} (see `{self.prog} --help`)", UNREADABLE)


def _session_id(text: str) -> str:
    """``--session``: a non-empty id that is valid UTF-8 (spec/persistence.md §1)."""
    if not text:
        raise argparse.ArgumentTypeError("a session id must not be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{text.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8"
        ) from None
    return text


def _demo_width(text: str) -> int:
    """``demo --width``: a whole number of columns, at least the narrowest layout."""
    from .demo.terminal import MIN_WIDTH

    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of columns") from None
    if width < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} columns is too narrow (at least {MIN_WIDTH})")
    return width


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="trio-agent", description=DESCRIPTION, epilog=EPILOG, formatter_class=fmt)
    parser.add_argument(
        "--version",
        action="version",
        version=f"trio-agent {__version__}",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(
            name,
            help=help,
            description=description or help[:1].upper() + help[1:] + ".",
            epilog=_epilog(name),
            formatter_class=fmt,
        )
        return p

    def add_store_input(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            metavar="STORE",
            help="instead of FILE: read session --session from this store, a postgresql:// "
            "DSN (or libpq key=value string) or a store directory",
        )
        p.add_argument(
            "--session", type=_session_id, metavar="ID", help="with --store: the session's id"
        )

    p = add("check", "check log files against the rules of spec/invariants.md")
    p.add_argument("files", nargs="*", metavar="FILE", help="a session log (session.jsonl)")
    p.add_argument("--balanced", action="store_true", help="an open last turn is an error")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per FILE on stdout instead of the ok line (spec/cli.md)",
    )
    add_store_input(p)
    p.set_defaults(run=cmd_check)

    p = add(
        "repair",
        "print the closers a cold open would append",
        "Print the closing events crash recovery would append to FILE (JSON Lines), or\n"
        "append them with --write. --write also stops the processes of tools that were\n"
        "still running when the agent died (orphans), before it writes: only processes\n"
        "running as you whose environment carries the marker the log recorded for that\n"
        "call (spec/tools.md §9), so a forged log cannot get other processes killed.\n"
        "--no-reap writes the closers without signalling anything.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="a session log (session.jsonl)")
    add_store_input(p)
    p.add_argument(
        "--write",
        action="store_true",
        help="append them durably, after stopping orphaned tool process groups (cold sessions "
        "only)",
    )
    p.add_argument(
        "--no-reap",
        action="store_true",
        help="with --write: stop no process, only append the closers",
    )
    p.add_argument(
        "--stopped",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="a call whose process group recovery stopped: --reaped CALL_ID=stopped (R5; "
        "repeatable)",
    )
    p.add_argument(
        "--reaped",
        action="append",
        default=[],
        type=_reaped_pair,
        metavar="CALL_ID=KIND",
        help=f"what recovery found of a call's processes, KIND one of {', '.join(REAP_KINDS)} "
        "(R5; repeatable)",
    )
    p.add_argument(
        "--boot-id",
        metavar="ID",
        help="the boot id of the host recovery runs on: a call whose process group was started "
        "under another boot id gets the other-host placeholder (R5)",
    )
    p.set_defaults(run=cmd_repair)

    p = add("fold", "print how far the log's work was consumed (spec/consumed-work.md)")
    p.add_argument("file", metavar="FILE", help="a session log (session.jsonl)")
    p.add_argument("--suffix", action="store_true", help="FILE is a slice: decode, do not check")
    p.set_defaults(run=cmd_fold)

    p = add("truncate", "report what truncating the open turn would throw away")
    p.add_argument("file", metavar="FILE", help="a session log (session.jsonl)")
    p.set_defaults(run=cmd_truncate)

    p = add("show", "print a readable timeline")
    p.add_argument("file", nargs="?", metavar="FILE", help="a session log (session.jsonl)")
    add_store_input(p)
    p.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the timeline (default: when stdout is a terminal and NO_COLOR is unset)",
    )
    p.add_argument(
        "--full", action="store_true", help="print long texts whole instead of cutting them"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the header, events, closers and any violation as JSON Lines (spec/cli.md)",
    )
    p.set_defaults(run=cmd_show)

    p = add("demo", "walk through Esc, kill -9 then restart, and truncate")
    p.add_argument(
        "scenario",
        nargs="?",
        default="all",
        choices=["esc", "kill", "truncate", "all"],
        help="which scenario to play (default: all)",
    )
    p.add_argument("--step", action="store_true", help="wait for Enter between steps")
    p.add_argument(
        "--width",
        type=_demo_width,
        metavar="N",
        help="lay the output out for N columns (default: the terminal's width; piped, "
        "$COLUMNS or 100); the panes sit side by side from 100 columns, stacked below",
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep each scenario's session in the store root DIR (created if missing) and "
        "print the log paths, for `trio-agent show` and `trio-agent check`",
    )
    p.set_defaults(run=cmd_demo)

    store_help = (
        "the store: a postgresql:// DSN (or libpq key=value string) for a database, or a "
        "store directory (the same as --root)"
    )
    p = add("run", "an interactive agent: each line runs in bash; Ctrl-C cancels")
    p.add_argument("--root", help="store directory (default: ./sessions)")
    p.add_argument("--store", metavar="STORE", help=store_help)
    p.add_argument(
        "--session",
        default="default",
        type=_session_id,
        help="session id (created if missing, resumed otherwise)",
    )
    p.add_argument(
        "--model",
        metavar="URL",
        help="chat with a model server (e.g. http://127.0.0.1:8080/v1) instead of the "
        "embedded bash-echo model",
    )
    p.add_argument(
        "--model-name",
        metavar="NAME",
        help="the model to ask; checked against the server's GET URL/models where it has "
        "one (default: the one model it lists)",
    )
    p.add_argument(
        "--api",
        choices=("openai", "anthropic"),
        help="the API --model speaks: OpenAI's Chat Completions or Anthropic's Messages "
        "(default: anthropic for an anthropic.com URL, else openai)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the API key (default: OPENAI_API_KEY, or "
        "ANTHROPIC_API_KEY with --api anthropic; unset means no key)",
    )
    p.add_argument(
        "--tool-choice",
        choices=("auto", "required", "none"),
        help="whether the model may, must or must not call bash (default: auto)",
    )
    p.set_defaults(run=cmd_run)

    p = add(
        "sessions",
        "list the sessions under a store directory",
        "List the sessions under --root: id, turns, events, last activity, and whether each\n"
        "is live (another process holds it), cold, or crashed with a turn open. --store\n"
        "lists a database store (or a store directory) instead.",
    )
    p.add_argument("--root", help="store directory (default: ./sessions)")
    p.add_argument("--store", metavar="STORE", help=store_help)
    p.set_defaults(run=cmd_sessions)

    conform.add_parser(sub)
    harness_command.add_parser(sub)
    for name in ("conform", "harness"):
        sub.choices[name].epilog = _epilog(name)
        sub.choices[name].formatter_class = fmt

    p = add("serve", "serve the demo web page")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765)")
    p.add_argument(
        "--max-runs",
        type=_positive_int,
        default=8,
        help="scenario runs (worker processes) at once, across all clients (default: 8)",
    )
    p.add_argument(
        "--idle-timeout",
        type=_positive_float,
        default=300.0,
        metavar="SECONDS",
        help="close a websocket that sends nothing for this long (default: 300)",
    )
    p.add_argument(
        "--head-timeout",
        type=_positive_float,
        default=10.0,
        metavar="SECONDS",
        help="close a connection whose request head has not arrived whole in this long "
        "(default: 10)",
    )
    p.add_argument(
        "--max-connections",
        type=_positive_int,
        default=256,
        metavar="N",
        help="connections held at once (default: 256, fewer if the open-file limit is "
        "lower); at the cap the one waiting longest for its request head is closed",
    )
    p.set_defaults(run=cmd_serve)
    return parser


# -- the top: every exception becomes one line ----------------------------------------------

#: Exit codes beyond the file commands' (spec/cli.md §Exit codes).
INTERRUPTED, PIPE_CLOSED, INTERNAL = 130, 141, 70


def _silence_stdout() -> None:
    """After the reader closed stdout: point fd 1 at /dev/null, so that the interpreter's
    final flush does not print "Exception ignored ... BrokenPipeError"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _report(exc: BaseException, out: TextIO, err: TextIO) -> int:
    """Turn whatever escaped a command into one line (or none) and an exit code."""
    found = leaves(exc)
    for leaf in found:
        if isinstance(leaf, SystemExit):  # argparse --help / --version
            code = leaf.code
            return code if isinstance(code, int) else (0 if code is None else UNREADABLE)
    for leaf in found:
        if isinstance(leaf, CliError):
            print(leaf, file=err)
            return leaf.code
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in found):
        return INTERRUPTED
    if all(isinstance(leaf, BrokenPipeError) for leaf in found):
        if out is sys.stdout:
            _silence_stdout()
        return PIPE_CLOSED
    leaf = next(x for x in found if not isinstance(x, BrokenPipeError))
    if os.environ.get("TRIO_AGENT_TRACEBACK"):
        import traceback

        traceback.print_exception(exc, file=err)
    else:
        what = str(leaf).splitlines()[0] if str(leaf) else ""
        print(
            f"trio-agent: internal error: {type(leaf).__name__}"
            f"{': ' + what if what else ''} (a bug; TRIO_AGENT_TRACEBACK=1 shows where)",
            file=err,
        )
    return INTERNAL


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_usage(err)
            print(
                "trio-agent: give a COMMAND; `trio-agent --help` lists them "
                "(try `trio-agent demo`)",
                file=err,
            )
            return UNREADABLE
        run: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.run
        return run(args, out, err)
    except BaseException as exc:  # the top: nothing escapes as a traceback
        return _report(exc, out, err)


if __name__ == "__main__":
    raise SystemExit(main())
