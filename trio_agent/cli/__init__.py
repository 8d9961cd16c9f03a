"""``trio-agent``: the command line (also ``python -m trio_agent``).

One module per command (``check``, ``repair``, ``fold``, ``truncate``, ``show``,
``sessions``, ``run``, ``demo`` (with ``serve``), ``conform``, ``harness``), with the shared
pieces beside them: :mod:`.errors` (exit codes, stated once), :mod:`.inputs` (opening a log
or a stored session, liveness) and :mod:`.parser` (the options, and the lazy table of which
module runs which command; ``conform``'s options are in :mod:`.conform_options`, beside
its heavy runner). This module is the top: :func:`main` parses, runs the command,
and turns whatever escapes it, exception groups included, into one line on stderr and an
exit code (spec/cli.md §Exit codes); never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from ..failures import leaves
from .errors import INTERNAL, INTERRUPTED, OUTPUT_FAILED, PIPE_CLOSED, UNREADABLE, CliError
from .parser import COMMANDS, build_parser
from .signals import Terminated
from .streams import OutputFailed, failure, guard_std_streams, say, silence

__all__ = ["main"]


def _report(exc: BaseException, out: TextIO, err: TextIO) -> int:
    """Turn whatever escaped a command into one line (or none) and an exit code."""
    found = leaves(exc)
    for leaf in found:
        if isinstance(leaf, SystemExit):  # argparse --help / --version
            code = leaf.code
            return code if isinstance(code, int) else (0 if code is None else UNREADABLE)
    for leaf in found:
        if isinstance(leaf, CliError):
            say(err, leaf.stderr_line)
            return leaf.code
    for leaf in found:
        if isinstance(leaf, Terminated):  # SIGTERM or SIGHUP, taken as a Ctrl-C
            return 128 + leaf.signum
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in found):
        return INTERRUPTED
    if all(isinstance(leaf, BrokenPipeError) for leaf in found):
        if out is sys.stdout:
            silence(out)
        return PIPE_CLOSED
    failed = next((leaf for leaf in found if isinstance(leaf, OutputFailed)), None)
    if failed is not None:
        if failed.stream == "stdout":
            silence(out)  # what is still buffered goes nowhere, and the exit stays quiet
        say(err, f"trio-agent: cannot write {failed.stream}: {failed.strerror}")
        return OUTPUT_FAILED
    leaf = next(x for x in found if not isinstance(x, BrokenPipeError))
    if os.environ.get("TRIO_AGENT_TRACEBACK"):
        import traceback

        say(err, "".join(traceback.format_exception(exc)).rstrip("\n"))
    else:
        what = str(leaf).splitlines()[0] if str(leaf) else ""
        say(
            err,
            f"trio-agent: internal error: {type(leaf).__name__}"
            f"{': ' + what if what else ''} (a bug; TRIO_AGENT_TRACEBACK=1 shows where)",
        )
    return INTERNAL


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    if out is None and err is None:  # the process's own streams: their failures are named
        out, err = guard_std_streams()
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        parser = build_parser()
        args = parser.parse_command_line(argv)
        if args.command is None:
            parser.print_usage(err)
            print(
                "trio-agent: give a COMMAND; `trio-agent --help` lists them "
                "(try `trio-agent demo`)",
                file=err,
            )
            return UNREADABLE
        module_name, function = COMMANDS[args.command]
        module = importlib.import_module(f"{__name__}.{module_name}")
        run: Callable[[argparse.Namespace, TextIO, TextIO], int] = getattr(module, function)
        code = run(args, out, err)
    except BaseException as exc:  # the top: nothing escapes as a traceback
        code = _report(exc, out, err)
    try:
        # Here, where a failure is reported, not in the interpreter's exit (a stream that
        # failed or was closed points at /dev/null by now, and takes this quietly).
        out.flush()
        err.flush()
    except BaseException as exc:
        return _report(exc, out, err)
    if code != OUTPUT_FAILED:
        for stream in (out, err):  # a failed write someone swallowed (argparse does)
            failed = failure(stream)
            if failed is not None:
                return _report(failed, out, err)
    return code
