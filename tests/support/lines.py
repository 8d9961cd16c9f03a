"""Reading a child process's output a line at a time from a pipe's file descriptor.

A read waits for the line (the verdict is what it says); the hang guard only ends a wait for
a child that hung, as :class:`TimeoutError`. End of file before a full line is :class:`EOFError`.
"""

from __future__ import annotations

import os
import select

from support.polling import HANG_GUARD


class LineReader:
    """Complete lines of the pipe ``fd``, decoded, without their newline."""

    def __init__(self, fd: int, *, what: str = "the child", guard: float = HANG_GUARD) -> None:
        self._fd = fd
        self._buf = b""
        self.what = what
        self.guard = guard

    def line(self) -> str:
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._fd], [], [], self.guard)
            if not ready:
                raise TimeoutError(f"{self.what} wrote no line within the {self.guard:g} s guard")
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise EOFError(f"{self.what} closed its output; partial line {self._buf!r}")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    def words(self) -> list[str]:
        """The next line split on single spaces (the child scripts' message format)."""
        return self.line().split(" ")

    def until(self, needle: str) -> list[str]:
        """Lines up to and including the first one containing ``needle``."""
        seen: list[str] = []
        while True:
            try:
                seen.append(self.line())
            except (TimeoutError, EOFError) as exc:
                raise type(exc)(f"no {needle!r} in {seen}: {exc}") from None
            if needle in seen[-1]:
                return seen

    def rest(self) -> str:
        """Everything up to end of file (the child has exited or closed the pipe)."""
        parts = [self._buf]
        self._buf = b""
        while chunk := os.read(self._fd, 65536):
            parts.append(chunk)
        return b"".join(parts).decode()
