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
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ..failures import leaves
from .errors import INTERNAL, INTERRUPTED, OUTPUT_FAILED, PIPE_CLOSED, UNREADABLE, CliError
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


class OutputFailed(OSError):
    """Writing the process's stdout failed (not a closed pipe: that stays a
    :class:`BrokenPipeError`)."""


class _StdoutFile(io.RawIOBase):
    """File descriptor 1, whose write errors say that they are stdout's (:class:`OutputFailed`):
    an ``OSError`` escaping a command is otherwise as likely a bug as a full disk under
    ``trio-agent show FILE > out``."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return os.isatty(1)

    def write(self, data: Any) -> int:
        try:
            return os.write(1, data)
        except (BrokenPipeError, BlockingIOError):
            raise
        except OSError as exc:
            raise OutputFailed(exc.errno, exc.strerror) from None


def _guarded_stdout() -> TextIO:
    """A text stream on fd 1 like ``sys.stdout`` (its encoding, errors and buffering), over
    :class:`_StdoutFile`. Installed as ``sys.stdout`` too, for what prints there (argparse's
    help), so that one buffer holds everything bound for fd 1."""
    stream = sys.stdout
    guarded = io.TextIOWrapper(
        io.BufferedWriter(_StdoutFile()),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=bool(stream.line_buffering),
    )
    sys.stdout = guarded
    return guarded


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
    failed = next((leaf for leaf in found if isinstance(leaf, OutputFailed)), None)
    if failed is not None:
        _silence_stdout()  # what is still buffered goes nowhere, and the exit stays quiet
        print(f"trio-agent: cannot write stdout: {failed.strerror}", file=err)
        return OUTPUT_FAILED
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
    if out is None:
        # The process's own stdout (not a test's stream): its write errors are told apart.
        out = _guarded_stdout() if sys.stdout is sys.__stdout__ else sys.stdout
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
        code = run(args, out, err)
    except BaseException as exc:  # the top: nothing escapes as a traceback
        code = _report(exc, out, err)
    if code in (PIPE_CLOSED, OUTPUT_FAILED):
        return code  # stdout is pointed at /dev/null already
    try:
        out.flush()  # here, where a failure is reported, not in the interpreter's exit
    except BaseException as exc:
        return _report(exc, out, err)
    return code
