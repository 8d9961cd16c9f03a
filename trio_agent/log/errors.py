"""Errors raised by the pure log core. Each names what is wrong and where."""

from __future__ import annotations


class LogError(Exception):
    """Base class of every error raised by :mod:`trio_agent.log`."""


class HeaderError(LogError):
    """The first line (line 1) is missing, not JSON, or not a version-1 session header."""

    line = 1


class UnreadableLineError(LogError):
    """A complete line is not JSON at all (the file is unreadable, not merely invalid)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class LogViolation(LogError):
    """An event breaks invariant ``rule`` (spec/invariants.md).

    ``seq`` is the seq as written on the event when it could be read (else ``None``);
    ``line`` is filled in by whoever knows the file position.
    """

    def __init__(self, rule: str, seq: int | None, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.seq = seq
        self.message = message
        self.line = line

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        seq = "?" if self.seq is None else str(self.seq)
        return f"{where}seq {seq}: {self.rule}: {self.message}"


class SchemaError(ValueError):
    """An event's ``data`` does not have its type's shape (rule I0); ``path`` names the
    offending field, e.g. ``data.reason.kind``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
