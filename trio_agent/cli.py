"""``trio-agent``: the command line (also ``python -m trio_agent``).

File commands run the pure core (:mod:`trio_agent.log`) on a log file. Exit codes:
0 ok, 1 the log breaks a rule (or ``--balanced`` found an open turn), 2 unreadable input
(missing file; missing, malformed or foreign header; a complete line that is not JSON);
``repair --write`` adds 3: refused or failed (the session is live, or the write failed).
Every problem is one line on stderr, ``FILE:LINE: seq N: I<k>: <what>``; never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

import orjson

from . import conform
from .log import (
    Event,
    HeaderError,
    LogViolation,
    Scan,
    UnreadableLineError,
    closers_for,
    decode_event,
    decode_header,
    event_to_json,
    fold_consumed_work,
    scan_log,
    split_log,
    truncate_open_turn,
)
from .log.render import render_timeline
from .testing import command as harness_command

OK, BROKEN, UNREADABLE = 0, 1, 2


class CliError(Exception):
    """One line for stderr and an exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise CliError(f"{path}: no such file", UNREADABLE) from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, not a log file", UNREADABLE) from None
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror}", UNREADABLE) from None


def _scan(path: str, *, strict: bool) -> Scan:
    """Read and check ``path``; map every core error to a one-line :class:`CliError`."""
    data = _read(path)
    try:
        return scan_log(data, strict=strict)
    except HeaderError as exc:
        raise CliError(f"{path}:1: {exc}", UNREADABLE) from None
    except UnreadableLineError as exc:
        raise CliError(f"{path}:{exc.line}: {exc.message}", UNREADABLE) from None
    except LogViolation as exc:
        seq = "?" if exc.seq is None else exc.seq
        raise CliError(f"{path}:{exc.line}: seq {seq}: {exc.rule}: {exc.message}", BROKEN) from None


def _scan_noting_tail(path: str, err: TextIO, *, strict: bool) -> Scan:
    """:func:`_scan`, plus the one-line note on stderr when a torn tail was ignored."""
    scan = _scan(path, strict=strict)
    if scan.tail is not None:
        t = scan.tail
        print(f"{path}:{t.line}: note: torn tail ignored ({t.size} bytes): {t.reason}", file=err)
    return scan


def _decode_slice(path: str) -> list[Event]:
    """The events of a slice file (a header, then events of a longer log): every complete
    line decoded (I0 applies), no other rule checked; a torn tail is ignored."""
    split = split_log(_read(path))
    if split.header is None:
        raise CliError(f"{path}:1: the header line is missing or incomplete", UNREADABLE)
    try:
        decode_header(split.header)
        return [decode_event(line, line_no) for line_no, line in split.lines]
    except HeaderError as exc:
        raise CliError(f"{path}:1: {exc}", UNREADABLE) from None
    except UnreadableLineError as exc:
        raise CliError(f"{path}:{exc.line}: {exc.message}", UNREADABLE) from None
    except LogViolation as exc:
        seq = "?" if exc.seq is None else exc.seq
        raise CliError(f"{path}:{exc.line}: seq {seq}: {exc.rule}: {exc.message}", BROKEN) from None


# -- commands -----------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    worst = OK
    for path in args.files:
        try:
            scan = _scan_noting_tail(path, err, strict=True)
        except CliError as exc:
            print(exc, file=err)
            worst = max(worst, exc.code)
            continue
        turn = scan.checker.open_turn
        if turn is not None and args.balanced:
            line = len(scan.events) + 2  # where its turn/end would go (spec/cli.md)
            print(
                f"{path}:{line}: turn {turn} is open (--balanced requires every turn ended)",
                file=err,
            )
            worst = max(worst, BROKEN)
            continue
        if turn is not None:
            print(
                f"{path}: note: turn {turn} is open (a valid prefix of a live or crashed session)",
                file=err,
            )
        print(f"{path}: ok ({len(scan.events)} events, {scan.checker.last_turn} turns)", file=out)
    return worst


def cmd_repair(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.write and args.stopped:
        raise CliError(
            "repair: --stopped only describes a dry run; --write stops groups itself", UNREADABLE
        )
    if args.write:
        from .store.repair_cli import run_repair_file  # the trio layer, only when writing

        return run_repair_file(args.file, out, err)
    scan = _scan_noting_tail(args.file, err, strict=False)
    stopped = {call_id: "stopped" for call_id in args.stopped}
    for event in closers_for(scan.checker, scan.last_time, stopped):
        out.write(orjson.dumps(event_to_json(event)).decode() + "\n")
    return OK


def cmd_fold(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.suffix:  # a slice of a longer log: decoded, not checked (spec/cli.md)
        events = _decode_slice(args.file)
    else:
        events = _scan_noting_tail(args.file, err, strict=False).events
    work = fold_consumed_work(events)
    out.write(
        orjson.dumps({"end_seq": work.end_seq, "dropped_unrun": work.dropped_unrun}).decode() + "\n"
    )
    return OK


def cmd_truncate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    scan = _scan_noting_tail(args.file, err, strict=False)
    report = truncate_open_turn(scan.events)
    out.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    return OK


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    scan = _scan(args.file, strict=False)
    closers = closers_for(scan.checker, scan.last_time)
    color = args.color
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    for line in render_timeline(scan.header, scan.events, closers, scan.tail, color=color):
        out.write(line + "\n")
    return OK


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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's own usage errors: one line, exit 2 (same as unreadable input).
        raise CliError(f"{self.prog}: {message}", UNREADABLE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trio-agent", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("check", help="check log files against spec/invariants.md")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--balanced", action="store_true", help="an open last turn is an error")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("repair", help="print the closers a cold open would append")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--write", action="store_true", help="append them durably (cold sessions only)")
    p.add_argument(
        "--stopped",
        action="append",
        default=[],
        metavar="CALL_ID",
        help="a call whose process group recovery stopped (R5; repeatable)",
    )
    p.set_defaults(run=cmd_repair)

    p = sub.add_parser("fold", help="print fold_consumed_work of the log")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--suffix", action="store_true", help="FILE is a slice: decode, do not check")
    p.set_defaults(run=cmd_fold)

    p = sub.add_parser("truncate", help="report what truncating the open turn would throw away")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(run=cmd_truncate)

    p = sub.add_parser("show", help="print a readable timeline")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--color", action=argparse.BooleanOptionalAction, default=None)
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("demo", help="walk through Esc, kill -9 then restart, and truncate")
    p.add_argument("scenario", nargs="?", default="all", choices=["esc", "kill", "truncate", "all"])
    p.add_argument("--step", action="store_true", help="wait for Enter between steps")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser("run", help="an interactive agent: each line runs in bash; Ctrl-C cancels")
    p.add_argument("--root", default="sessions", help="store directory (default: ./sessions)")
    p.add_argument("--session", default="default", help="session id (created if missing)")
    p.set_defaults(run=cmd_run)

    conform.add_parser(sub)
    harness_command.add_parser(sub)

    p = sub.add_parser("serve", help="serve the demo web page")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.set_defaults(run=cmd_serve)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
        run: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.run
        return run(args, out, err)
    except CliError as exc:
        print(exc, file=err)
        return exc.code
    except BrokenPipeError:  # `trio-agent show big.jsonl | head`
        return OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
