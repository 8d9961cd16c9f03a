"""The opening shared by the commands that test a program given after ``--``.

``trio-agent conform -- CMD...`` and ``trio-agent harness -- CMD...`` both take the program
under test as the rest of the command line, refuse a missing one, and turn every usage
problem into one line ``NAME: what is wrong`` and exit 2. A :class:`ProgramCommand` holds
that opening once; each command states only what differs: its name and help, its options,
and its body, which gets the program's argv and raises :class:`UsageError` for a usage
problem. The body is given to :meth:`ProgramCommand.main`, not held: the parser registers
the command without importing the module that runs it (``conform``'s is heavy).
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from typing import Any, TextIO

import attrs

from .errors import UNREADABLE
from .signals import terminated_as_interrupt

__all__ = ["USAGE", "Body", "ProgramCommand", "UsageError"]

#: What a command does with the program's argv and its options, writing to ``out``; returns
#: the exit code.
Body = Callable[[list[str], argparse.Namespace, TextIO], int]

#: The exit code of a usage problem: the command line's 2 (spec/cli.md §Exit codes).
USAGE = UNREADABLE


class UsageError(Exception):
    """A usage problem, in one line: printed as ``NAME: message``, exit 2."""


@attrs.frozen
class ProgramCommand:
    """A subcommand whose last argument is the program to test (see the module docstring)."""

    name: str
    #: Whose command comes after ``--``, for the error when it is missing (``the port's``).
    program: str
    help: str
    description: str
    #: Adds the command's own options to its parser.
    options: Callable[[argparse.ArgumentParser], None]
    #: The body may run without a program (``--list``) and checks for one itself.
    optional: bool = False

    def add_parser(self, sub: Any) -> argparse.ArgumentParser:
        """Register the command on the CLI's subparsers (the parser's ``COMMANDS`` table says
        which module's ``main`` runs it)."""
        p: argparse.ArgumentParser = sub.add_parser(
            self.name, help=self.help, description=self.description
        )
        self.options(p)
        p.add_argument(
            "cmd",
            nargs=argparse.REMAINDER,
            metavar="-- CMD...",
            help="the program to test, after --",
        )
        return p

    def main(self, args: argparse.Namespace, out: TextIO, err: TextIO, body: Body) -> int:
        """Take the program's argv from ``args.cmd`` and run ``body`` on it; a usage problem
        is one line on ``err`` and exit 2."""
        command = list(args.cmd)
        if command[:1] == ["--"]:
            command = command[1:]
        try:
            if not command and not self.optional:
                raise UsageError(
                    f"give {self.program} command after --, e.g. {self.name} -- ./my-port"
                )
            if command and not command[0]:  # exec would say "Permission denied" (the cwd)
                raise UsageError(
                    f"the program's name is empty: give {self.program} command after --, "
                    f"e.g. {self.name} -- ./my-port"
                )
            if command and "/" in command[0] and os.path.isdir(command[0]):
                # exec would say "Permission denied", which reads as a mode to change
                raise UsageError(f"cannot run {shlex.join(command)}: is a directory")
            with terminated_as_interrupt():  # the port's processes are stopped, not left
                return body(command, args, out)
        except UsageError as exc:
            print(f"{self.name}: {exc}", file=err)
            return USAGE
