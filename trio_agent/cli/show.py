"""``trio-agent show``: a log as a readable timeline, or as JSON Lines with ``--json``
(spec/cli.md). The renderers and the JSON records are imported only when used.

The timeline takes one pass over the file: the scan hands each line it accepts to the
renderer (:class:`~trio_agent.log.render_fast.TimelineLines`, held equal to the readable
:func:`~trio_agent.log.render.render_timeline` by tests/log/test_render_fast.py), whose
lines are spilled (:class:`_Spill`) until the scan has the count the first line shows, then
copied out after it. ``--json``, and the timeline when the spill cannot be written, take two
passes: the scan, then the events decoded again one at a time. Memory does not grow with the
log either way."""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO

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
from .inputs import Reader, events_of, live_words, one_input, stream_log

if TYPE_CHECKING:
    from ..log.render_fast import TimelineLines


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


class _SpillFailed(Exception):
    """The spill could not be written (no room in the temporary directory)."""


class _Spill:
    """The timeline's lines while the scan runs, before the count its first line shows is
    known: held in memory up to :data:`_IN_MEMORY` bytes, then in an unnamed temporary file
    (gone when closed). Encoded as ``out`` encodes, so the copy is byte for byte what writing
    the lines to ``out`` would have written."""

    _IN_MEMORY = 1 << 16

    def __init__(self, out: TextIO) -> None:
        self._out = out
        # A text stream over a binary one (stdout, a file) takes the spill's bytes as they
        # are; another (a StringIO) takes text.
        self._binary: IO[bytes] | None = getattr(out, "buffer", None)
        self._encoding = out.encoding or "utf-8"
        self._errors = out.errors or "strict"
        mode = "w+b" if self._binary is not None else "w+"
        encoding = None if self._binary is not None else "utf-8"
        # closed by __exit__: the spill lives as long as the command's with block
        self._file: IO[Any] = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            self._IN_MEMORY, mode, encoding=encoding, newline=None if encoding is None else ""
        )

    def __enter__(self) -> _Spill:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._file.close()

    def write(self, lines: list[str]) -> None:
        """Append ``lines``, each followed by a newline."""
        text = "\n".join(lines) + "\n"
        try:
            if self._binary is not None:
                self._file.write(text.encode(self._encoding, self._errors))
            else:
                self._file.write(text)
        except OSError as exc:  # not the log's read error: the scan would word it as one
            raise _SpillFailed(str(exc)) from None

    def copy_after(self, first: str) -> None:
        """Write ``first`` and a newline to ``out``, then everything spilled."""
        self._out.write(first + "\n")
        self._file.seek(0)
        if self._binary is not None:
            self._out.flush()
            shutil.copyfileobj(self._file, self._binary, 1 << 20)
        else:
            shutil.copyfileobj(self._file, self._out, 1 << 20)


#: Bytes of lines read at a time for the one-pass timeline (whole lines, about this many).
_READ = 1 << 16


def _read_rendering(
    f: BinaryIO, accepted: list[object], timeline: TimelineLines
) -> Iterator[list[bytes]]:
    """``f``'s lines in batches, cut as iterating ``f`` cuts them; before each batch is read,
    what the scan accepted from the last one (``accepted``, its ``item_sink``'s list)
    go to ``timeline``. A list append per line and a loop per batch cost less than a call
    per line."""
    while True:
        timeline.lines(accepted)
        accepted.clear()
        batch = f.readlines(_READ)
        if not batch:
            return
        yield batch


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The timeline; a log that breaks a rule is shown up to the offending line, which is
    marked with the rule, and the command exits 1 (2 for a line that is not JSON)."""
    path, read = one_input(args)
    color = args.color
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    color = color and not args.json
    if not args.json:
        try:
            with _Spill(out) as spill:
                return _show(args, path, read, out, err, color=color, spill=spill)
        except _SpillFailed:  # nothing was written yet; the two passes need no spill
            pass
    return _show(args, path, read, out, err, color=color, spill=None)


def _show(
    args: argparse.Namespace,
    path: str,
    read: Reader,
    out: TextIO,
    err: TextIO,
    *,
    color: bool,
    spill: _Spill | None,
) -> int:
    """``show`` in one pass through ``spill`` (the timeline), or in two without it."""
    shape = {"json": bool(args.json), "color": color, "full": bool(args.full)}
    timeline = None
    accepted: list[object] = []  # what the scan accepted (envelopes, lines), not rendered yet
    if spill is not None:
        from ..log.render_fast import TimelineLines, timeline_header

        timeline = TimelineLines(spill.write, color=color, full=bool(args.full))
    with read() as (f, probe):
        live = probe()
        try:
            if timeline is None:
                scan = stream_log(path, f, strict=False)
            else:
                batches = _read_rendering(f, accepted, timeline)
                scan = stream_log(
                    path,
                    f,
                    strict=False,
                    item_sink=accepted.append,
                    lines=itertools.chain.from_iterable(batches),
                )
        except CliError as exc:
            if exc.line is None or exc.line < 2:
                raise
            count = exc.line - 2
            try:
                f.seek(0)
                header = decode_header(f.readline()[:-1])
                if spill is None or timeline is None:
                    events = events_of(f, count)
                    _show_events(
                        out, header, events, (), None, count=count, live=live is not None, **shape
                    )
                else:
                    timeline.lines(accepted)
                    timeline.finish()
                    spill.copy_after(timeline_header(header, count))
                    for _ in itertools.islice(f, count):  # up to the offending line
                        pass
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
                from ..log.render import visible

                long = len(raw) > 120 and not args.full
                shown = visible((raw[:120] if long else raw).decode("utf-8", "replace"))
                shown += "..." if long else ""
                mark = f"line {exc.line}: {str(exc).removeprefix(f'{path}:{exc.line}: ')}"
                red, reset = ("\x1b[31m", "\x1b[0m") if color else ("", "")
                out.write(f"{red}!! {mark}{reset}\n   {shown}\n")
            out.flush()
            raise
        live = live or probe()
        closers = repair_closers(scan.checker) if live is None else []
        if spill is not None and timeline is not None:
            timeline.lines(accepted)
            timeline.finish(closers, scan.tail)  # the last write to the spill
        if live is not None:  # a live session is never given synthetic boundaries
            print(
                f"{live_words(path, scan, live)}; a live session is never repaired, "
                "so no closers are shown",
                file=err,
            )
        if spill is not None and timeline is not None:
            spill.copy_after(timeline_header(scan.header, scan.count))
            return OK
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
