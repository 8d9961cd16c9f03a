"""The types of every command's numeric options, so that each command words a bad number
the same way (spec/cli.md §trio-agent's own codes): argparse prints the message as
``trio-agent COMMAND: argument --OPTION: <message> (see ...)``, exit 2."""

from __future__ import annotations

import argparse
import math
from typing import Final

__all__ = ["MAX_PORT", "count", "integer", "port", "seconds"]

#: The largest TCP port number.
MAX_PORT: Final = 65535


def integer(text: str) -> int:
    """Any whole number (``harness --seed``)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def count(text: str) -> int:
    """A whole number of at least 1: how many (``--jobs``, ``--examples``), or a size in
    bytes (``--max-output``, ``--max-line``)."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port number, 0 (any free port) to :data:`MAX_PORT`; the socket layer would
    otherwise take 99999 modulo 65536 and listen somewhere else."""
    value = integer(text)
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"not a port number (0 to {MAX_PORT}): {text!r}")
    return value
