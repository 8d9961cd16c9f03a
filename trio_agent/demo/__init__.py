"""The demo. For now: a bundled crashed log walked through completion versus truncation.

The log in ``crashed.jsonl`` stops where a worker was killed with ``kill -9``: the model had
streamed its text and asked for ``make test``; the tool was dispatched and had printed four
lines; a follow-up message was queued. The walkthrough shows, with a caption per step, what
crash recovery by completion appends and what the truncating alternative would throw away.
"""

from __future__ import annotations

import argparse
from importlib import resources
from typing import TextIO

from ..log import closers_for, fold_consumed_work, scan_log, truncate_open_turn
from ..log.render import describe, render_timeline

WIDTH = 96


def _caption(out: TextIO, title: str, text: str) -> None:
    out.write("\n" + f"── {title} ".ljust(WIDTH, "─") + "\n")
    words, line = text.split(), ""
    for word in words:
        if len(line) + len(word) + 1 > WIDTH - 2:
            out.write("  " + line + "\n")
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        out.write("  " + line + "\n")


def _pause(args: argparse.Namespace) -> None:
    if args.step:
        input("  [Enter] next step ")


def walkthrough(out: TextIO, args: argparse.Namespace) -> None:
    data = resources.files(__package__).joinpath("crashed.jsonl").read_bytes()
    scan = scan_log(data, strict=True)
    events = scan.events
    _caption(
        out,
        "1. The log after kill -9",
        "The worker died mid-tool. The durable log ends inside turn 1, step 1: the model's "
        "text, its bash call, the dispatch marker (tool/call), the spawned process group and "
        "four lines of output are on disk. No tool/result, no step/end, no turn/end.",
    )
    for line in render_timeline(scan.header, events):
        out.write("  " + line + "\n")
    _pause(args)

    closers = closers_for(scan.checker, scan.last_time)
    _caption(
        out,
        "2. Completion (what trio_agent does on a cold open)",
        "Recovery appends closers and deletes nothing. The call has a durable tool/call, so "
        "its outcome is unknown: the placeholder says TOOL_OUTCOME_UNKNOWN and tells the model "
        "not to retry blindly. Then step/end closes the step before turn/end{interrupted} "
        "closes the turn. Every chunk and every line of tool output stays in the log.",
    )
    for event in closers:
        out.write(f"  + [{event.seq}] {describe(event)}\n")
    work = fold_consumed_work(events + closers)
    out.write(
        f"  fold_consumed_work: the accounting turn/end is seq {work.end_seq}; "
        f"dropped_unrun={str(work.dropped_unrun).lower()}; the queued follow-up stays queued.\n"
    )
    _pause(args)

    report = truncate_open_turn(events)
    _caption(
        out,
        "3. Truncation, for contrast (never written to a real log)",
        "The truncating strategy cuts the open turn away as if it never ran. The process "
        "may have changed the world, but the log forgets it was ever started.",
    )
    out.write(f"  kept {len(report.kept)} event(s); dropped {len(report.dropped)}:\n")
    for kind, count in report.dropped_by_type.items():
        out.write(f"    - {count} x {kind}\n")
    out.write(f"  streamed text lost: {report.streamed_chars} characters\n")
    out.write(f"  tool output lost: {report.tool_output_bytes} bytes\n")
    out.write(f"  dispatched calls the log forgets: {', '.join(report.dispatched_calls)}\n")
    out.write(f"  claimed messages silently re-queued: {report.reclaimed_messages}\n")


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.scenario == "esc":
        print(
            "trio-agent demo: the Esc scenario needs the live runtime demo (not built yet); "
            "try 'kill', 'truncate' or 'all'",
            file=err,
        )
        return 2
    walkthrough(out, args)
    return 0


def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    print("trio-agent serve: the web demo is not built yet", file=err)
    return 2
