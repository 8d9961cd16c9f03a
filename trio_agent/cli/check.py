"""``trio-agent check``: check log files against the rules of spec/invariants.md (spec/cli.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

import attrs

from ..log import LineScan
from ..log.render import visible
from .errors import BROKEN, OK, CliError, plural
from .inputs import inputs_of, note_tail, scan_live
from .show import json_line

if TYPE_CHECKING:
    from .records import CheckResult, TornTailJson


def _tail_json(scan: LineScan) -> TornTailJson | None:
    from .records import TornTailJson

    t = scan.tail
    return None if t is None else TornTailJson(t.line, t.size, t.reason)


def _failed_json(path: str, exc: CliError) -> CheckResult:
    """``check --json`` for a FILE that could not be checked (or broke a rule)."""
    from .records import CheckResult, json_text

    return CheckResult(
        path=json_text(path),
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
        message=json_text(exc.what if exc.what is not None else str(exc)),
    )


def _checked_json(path: str, scan: LineScan, live: bool) -> CheckResult:
    """``check --json`` for a FILE that passed the check."""
    from .records import CheckResult, json_text

    return CheckResult(
        path=json_text(path),
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
    for path, read in inputs_of(args, args.files):
        try:
            scan, live = scan_live(path, strict=True, read=read)
        except CliError as exc:
            print(exc.stderr_line, file=err)
            worst = max(worst, exc.code)
            if args.json:
                json_line(out, _failed_json(path, exc))
            continue
        note_tail(path, scan, err)
        # One line, whatever the name holds (spec/cli.md §stderr: errors and notes).
        shown = visible(path)
        if live is not None:
            print(
                f"{shown}: note: session {scan.header.id!r} is live ({live.locked()}); "
                "checked what it has written so far",
                file=err,
            )
        turn = scan.checker.open_turn
        if turn is not None and args.balanced:
            line = scan.count + 2  # where its turn/end would go (spec/cli.md)
            what = f"turn {turn} is open (--balanced requires every turn ended)"
            print(f"{shown}:{line}: {what}", file=err)
            worst = max(worst, BROKEN)
            if args.json:
                result = _checked_json(path, scan, live is not None)
                result = attrs.evolve(result, ok=False, exit=BROKEN, line=line, message=what)
                json_line(out, result)
            continue
        if turn is not None and live is None:
            print(
                f"{shown}: note: turn {turn} is open (a valid prefix of a live or crashed session)",
                file=err,
            )
        if args.json:
            json_line(out, _checked_json(path, scan, live is not None))
        else:
            events, turns = plural(scan.count, "event"), plural(scan.checker.last_turn, "turn")
            print(f"{shown}: ok ({events}, {turns})", file=out)
    return worst
