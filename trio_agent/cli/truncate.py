"""``trio-agent truncate``: what truncating the open turn would throw away (spec/recovery.md)."""

from __future__ import annotations

import argparse
from typing import TextIO

import orjson

from ..log import TruncateFold
from .errors import OK
from .inputs import note_tail, refuse_live, scan_live


def cmd_truncate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    truncation = TruncateFold()  # holds the open turn's lines only
    scan, live = scan_live(
        args.file,
        strict=False,
        sink=truncation.feed_fields,
        sink_types=TruncateFold.TYPES,
        line_sink=truncation.feed_line,
    )
    refuse_live(args.file, scan, live)
    note_tail(args.file, scan, err)
    report = truncation.report(scan.count)
    out.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    return OK
