"""``trio-agent``: the command line (also ``python -m trio_agent``).

One module per command (``check``, ``repair``, ``fold``, ``truncate``, ``show``,
``sessions``, ``run``, ``demo`` (with ``serve``), ``conform``, ``harness``), with the shared
pieces beside them: :mod:`.errors` (exit codes, stated once), :mod:`.inputs` (opening a log
or a stored session, liveness) and :mod:`.parser` (the options, and the lazy table of which
module runs which command). This module is the top: :func:`main` parses, runs the command,
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
from .errors import INTERNAL, INTERRUPTED, PIPE_CLOSED, UNREADABLE, CliError
from .parser import COMMANDS, build_parser

__all__ = ["main"]


def _silence_stdout() -> None:
    """After the reader closed stdout: point fd 1 at /dev/null, so that the interpreter's
    final flush does not print "Exception ignored ... BrokenPipeError"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _report(exc: BaseException, out: TextIO, err: TextIO) -> int:
    """Turn whatever escaped a command into one line (or none) and an exit code."""
    found = leaves(exc)
    for leaf in found:
        if isinstance(leaf, SystemExit):  # argparse --help / --version
            code = leaf.code
            return code if isinstance(code, int) else (0 if code is None else UNREADABLE)
    for leaf in found:
        if isinstance(leaf, CliError):
            print(leaf, file=err)
            return leaf.code
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in found):
        return INTERRUPTED
    if all(isinstance(leaf, BrokenPipeError) for leaf in found):
        if out is sys.stdout:
            _silence_stdout()
        return PIPE_CLOSED
    leaf = next(x for x in found if not isinstance(x, BrokenPipeError))
    if os.environ.get("TRIO_AGENT_TRACEBACK"):
        import traceback

        traceback.print_exception(exc, file=err)
    else:
        what = str(leaf).splitlines()[0] if str(leaf) else ""
        print(
            f"trio-agent: internal error: {type(leaf).__name__}"
            f"{': ' + what if what else ''} (a bug; TRIO_AGENT_TRACEBACK=1 shows where)",
            file=err,
        )
    return INTERNAL


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
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
        return run(args, out, err)
    except BaseException as exc:  # the top: nothing escapes as a traceback
        return _report(exc, out, err)
