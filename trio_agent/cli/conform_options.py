"""What the parser needs of ``trio-agent conform``: its defaults, its options and its
declaration (:class:`~trio_agent.cli.program.ProgramCommand`).

The command's runner, :mod:`trio_agent.cli.conform` (subprocesses, the ``/proc`` census,
diffs), is imported only to run it, so that every other command starts without it.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Final

from . import numbers
from .program import ProgramCommand

__all__ = ["COMMAND", "CORES", "MAX_OUTPUT", "TIMEOUT", "add_parser"]

#: Default bound on one case (every command it runs), a safety net against a port that hangs.
TIMEOUT: Final = 30.0
#: Default bound on what one command may write, per stream (no vector's answer comes near).
MAX_OUTPUT: Final = 1 << 20


#: The default of ``--jobs``: this machine's core count.
CORES: Final = os.cpu_count() or 1


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run the cases whose id, folder or rule matches (repeatable): "
        "--only 'repair/*', --only truncate, --only I16",
    )
    p.add_argument("--list", action="store_true", help="list the selected cases; run nothing")
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failing case")
    p.add_argument(
        "--vectors", default=None, metavar="DIR", help="default: the vectors shipped in the package"
    )
    p.add_argument(
        "--jobs",
        type=numbers.count,
        default=CORES,
        metavar="N",
        help=f"run N cases at once (default: the core count, {CORES} here)",
    )
    p.add_argument(
        "--timeout",
        type=numbers.seconds,
        default=TIMEOUT,
        metavar="SECONDS",
        help=f"safety net: a case whose commands take longer fails (default {TIMEOUT:g})",
    )
    p.add_argument(
        "--max-output",
        type=numbers.count,
        default=MAX_OUTPUT,
        metavar="BYTES",
        help=f"a command writing more to stdout or stderr is killed (default {MAX_OUTPUT})",
    )
    p.add_argument(
        "--junit-xml", default=None, metavar="FILE", help="also write the results as JUnit XML"
    )


COMMAND: Final = ProgramCommand(
    name="conform",
    program="the port's",
    help="run every spec vector against a CLI implementing spec/cli.md",
    description="Run spec/vectors against CMD (spec/cli.md). Exit 0 when all pass.",
    options=_options,
    optional=True,
)


def add_parser(sub: Any) -> None:
    """Register ``conform`` on the CLI's subparsers (called from cli/parser.py)."""
    COMMAND.add_parser(sub)
