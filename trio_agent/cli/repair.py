"""``trio-agent repair``: print the closers a cold open would append, or with ``--write``
append them (spec/cli.md, spec/recovery.md). The writing half is :mod:`.repair_write`,
imported only when writing (it needs trio and the store)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ..log import (
    encode_event,
    repair_closers,
)
from .dsn import is_dsn
from .errors import OK, UNREADABLE, CliError
from .inputs import note_tail, one_input, refuse_live, scan_live


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
    path, read = one_input(args)
    scan, live = scan_live(path, strict=False, read=read)
    refuse_live(path, scan, live)
    if args.write:
        if args.store is not None and is_dsn(args.store):
            return _repair_stored(args.store, args.session, path, out, err, no_reap=args.no_reap)
        from .repair_write import reaper, run_repair_file  # the trio layer, only when writing

        return run_repair_file(path, out, err, reap_orphans=reaper(args.no_reap))
    note_tail(path, scan, err)
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
    from .repair_write import repair_session  # the trio layer, only when writing

    return repair_session(dsn, session_id, where, out, err, no_reap=no_reap)
