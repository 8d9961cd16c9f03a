"""``trio-agent repair FILE --write``: the store's cold-open repair on one file, for the CLI.

Output follows the CLI's conventions (trio_agent/cli.py): the closers appended, one JSON line
each, on stdout; notes and problems, one line each, on stderr; never a traceback. Exit codes:
0 repaired (or nothing to do), 1 the log breaks a rule inside committed data, 2 unreadable
input (missing file, foreign header, a committed line that is not JSON), 3 refused or failed:
the session is live (locked), or the repair could not be written.
"""

from __future__ import annotations

from typing import TextIO

import orjson
import trio

from ..log.codec import event_to_json
from .errors import (
    NotALogFile,
    SessionCorrupt,
    SessionLocked,
    SessionNotFound,
    UnsupportedFormat,
    WriteFailed,
)
from .jsonl import repair_file
from .recovery import DEFAULT_REAPER, ReaperArg, RepairReport

OK, BROKEN, UNREADABLE, REFUSED = 0, 1, 2, 3


def run_repair_file(
    path: str, out: TextIO, err: TextIO, *, reap_orphans: ReaperArg = DEFAULT_REAPER
) -> int:
    """Repair ``path`` in place (``trio.run``); print what was done; return the exit code."""
    try:
        report = trio.run(_repair, path, reap_orphans)
    except SessionNotFound:
        print(f"{path}: no such file", file=err)
        return UNREADABLE
    except UnsupportedFormat as exc:
        print(f"{path}:1: {exc.message.removeprefix('line 1: ')}", file=err)
        return UNREADABLE
    except SessionCorrupt as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else path
        if exc.seq is None and exc.rule == "I0":  # a committed line that is not JSON
            print(f"{where}: {exc.message} (file not modified)", file=err)
            return UNREADABLE
        seq = "?" if exc.seq is None else exc.seq
        rule = f"{exc.rule}: " if exc.rule else ""
        print(f"{where}: seq {seq}: {rule}{exc.message} (file not modified)", file=err)
        return BROKEN
    except SessionLocked as exc:
        print(f"{path}: refused: {exc}", file=err)
        return REFUSED
    except WriteFailed as exc:
        print(f"{path}: {exc} (the file holds a valid prefix; run repair again)", file=err)
        return REFUSED
    except NotALogFile as exc:
        print(str(exc), file=err)
        return UNREADABLE
    except OSError as exc:
        print(f"{path}: cannot repair: {exc.strerror or exc}", file=err)
        return REFUSED
    if report.torn_bytes:
        cut = f"{report.torn_bytes} bytes of torn tail"
        print(f"{path}: note: cut {cut} ({report.damage})", file=err)
    for call_id, what in report.stopped.items():
        print(f"{path}: note: call {call_id}: {what}", file=err)
    for event in report.closers:
        out.write(orjson.dumps(event_to_json(event)).decode() + "\n")
    if report.changed:
        print(
            f"{path}: repaired: {len(report.closers)} closing event(s) appended, "
            f"{report.events} events",
            file=err,
        )
    else:
        print(f"{path}: nothing to repair ({report.events} events, balanced)", file=err)
    return OK


async def _repair(path: str, reap_orphans: ReaperArg) -> RepairReport:
    return await repair_file(path, reap_orphans=reap_orphans)
