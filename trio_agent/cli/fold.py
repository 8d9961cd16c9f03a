"""``trio-agent fold``: how far the log's work was consumed (spec/consumed-work.md)."""

from __future__ import annotations

import argparse
from typing import TextIO

import orjson

from ..log import (
    FOLD_TYPES,
    ConsumedFold,
    ConsumedWork,
    HeaderError,
    LogViolation,
    UnreadableLineError,
    decode_event,
    decode_header,
)
from .errors import BROKEN, OK, UNREADABLE, CliError
from .inputs import note_tail, open_log, scan_live


def _fold_slice(path: str) -> ConsumedWork:
    """The fold of a slice file (a header, then events of a longer log): every complete line
    decoded (I0 applies), no other rule checked; a torn tail is ignored. Streamed."""
    fold = ConsumedFold()
    with open_log(path) as (f, _probe):
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


def cmd_fold(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.suffix:  # a slice of a longer log: decoded, not checked (spec/cli.md)
        work = _fold_slice(args.file)
    else:
        # Read like repair (spec/cli.md): the kept events stream into the fold (C5: the fold
        # itself validates nothing); only the four types it looks at are handed over.
        fold = ConsumedFold()
        scan, _ = scan_live(args.file, strict=False, sink=fold.feed_fields, sink_types=FOLD_TYPES)
        note_tail(args.file, scan, err)
        work = fold.result
    out.write(
        orjson.dumps({"end_seq": work.end_seq, "dropped_unrun": work.dropped_unrun}).decode() + "\n"
    )
    return OK
