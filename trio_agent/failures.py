"""Exceptions as one line: the leaves of trio's exception groups, and their text.

trio wraps a task's exception in an exception group when it leaves a nursery (a
``BrokenPipeError`` from ``print``, a ``ModelError`` from a stream), so every place that
reports a failure in one line (the command line, the demo server, a turn's ``error``) first
finds what is inside. This module is that one finding, below every layer that reports.
"""

from __future__ import annotations

__all__ = ["exception_text", "innermost", "leaves"]


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``'s (nested) exception groups, in order; ``[exc]`` when it
    is not a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def innermost(exc: BaseException) -> BaseException:
    """``exc`` unwrapped while it is a group of exactly one: the one failure it stands for
    (a group of several stays a group)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def exception_text(exc: BaseException) -> str:
    """``"ValueError: boom"`` (or just the type when the exception has no text)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
