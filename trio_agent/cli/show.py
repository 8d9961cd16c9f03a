"""``trio-agent show``: a log as a readable timeline, or as JSON Lines with ``--json``
(spec/cli.md). The renderer and the JSON records are imported only when used."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from typing import TextIO

from ..log import (
    Event,
    Header,
    HeaderError,
    LogViolation,
    TornTail,
    UnreadableLineError,
    decode_header,
    event_to_json,
    repair_closers,
)
from .errors import OK, CliError
from .inputs import events_of, live_words, one_input, stream_log


def json_line(out: TextIO, record: object) -> None:
    from . import records

    out.write(records.dumps(record) + "\n")


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
        from ..log.render import render_timeline

        for line in render_timeline(
            header, events, closers, tail, color=color, count=count, full=full
        ):
            out.write(line + "\n")
        return
    from .records import ShowEvent, ShowHeader, ShowTornTail

    json_line(
        out, ShowHeader(session=header.id, created_at=header.created_at, events=count, live=live)
    )
    for event in events:
        json_line(out, ShowEvent("event", event_to_json(event)))
    for event in closers:
        json_line(out, ShowEvent("closer", event_to_json(event)))
    if tail is not None:
        json_line(out, ShowTornTail(line=tail.line, bytes=tail.size, reason=tail.reason))


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The timeline; a log that breaks a rule is shown up to the offending line, which is
    marked with the rule, and the command exits 1 (2 for a line that is not JSON).

    Two passes over the file: the scan (counts, closers, the tail), then the rendering, which
    decodes the accepted lines again one at a time (memory does not grow with the log)."""
    path, read = one_input(args)
    color = args.color
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    color = color and not args.json
    shape = {"json": bool(args.json), "color": bool(color), "full": bool(args.full)}
    with read() as (f, probe):
        live = probe()
        try:
            scan = stream_log(path, f, strict=False)
        except CliError as exc:
            if exc.line is None or exc.line < 2:
                raise
            count = exc.line - 2
            try:
                f.seek(0)
                header = decode_header(f.readline()[:-1])
                events = events_of(f, count)
                _show_events(
                    out, header, events, (), None, count=count, live=live is not None, **shape
                )
                raw = f.readline().removesuffix(b"\n")
            except (HeaderError, UnreadableLineError, LogViolation, OSError):
                raise exc from None
            what = exc.what if exc.what is not None else str(exc)
            if args.json:
                from .records import ShowViolation

                text = raw.decode("utf-8", "replace")
                violation = ShowViolation(
                    line=exc.line,
                    rule=exc.rule,
                    seq=exc.seq,
                    message=what,
                    exit=exc.code,
                    text=text,
                )
                json_line(out, violation)
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
                f"{live_words(path, scan, live)}; a live session is never repaired, "
                "so no closers are shown",
                file=err,
            )
        f.seek(0)
        f.readline()  # the header, already decoded by the scan
        _show_events(
            out,
            scan.header,
            events_of(f, scan.count),
            closers,
            scan.tail,
            count=scan.count,
            live=live is not None,
            **shape,
        )
    return OK
