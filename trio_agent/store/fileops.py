"""The file operations the store performs, as one replaceable object (the fault-injection seam).

Production code uses :class:`FileOps` itself: real ``write``, real ``fsync``, real
``ftruncate``. Tests pass a subclass that fails (``ENOSPC``, ``EIO``), writes short, or kills
the process at a named :meth:`FileOps.point`, and the store must still never lose, duplicate
or reorder an acknowledged event.

Every method may be called from a worker thread (``trio.to_thread.run_sync``), never two at once
for one file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO


class FileOps:
    """Blocking primitives on an open file descriptor."""

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """Write some of ``data``; return how many bytes were written (may be short)."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """Make everything written to ``fd`` durable."""
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        """Cut the file to ``length`` bytes."""
        os.ftruncate(fd, length)

    def point(self, name: str) -> None:
        """A named moment of the write or repair path; does nothing here.

        Names: ``batch:written`` (a batch's bytes are written, not yet synced),
        ``batch:synced``, ``repair:scanned`` (a cold open has read and classified the file and
        changed nothing yet), ``repair:truncated`` (torn tail cut, not yet synced),
        ``repair:truncate-synced``, ``repair:closers-written``, ``repair:closers-synced``,
        ``create:linked`` (a new session's header is published).
        """


def write_all(ops: FileOps, fd: int, data: bytes) -> None:
    """Loop until every byte of ``data`` is written (a single ``write`` may be short)."""
    view = memoryview(data)
    while view:
        n = ops.write(fd, view)
        if n <= 0:  # pragma: no cover - os.write raises rather than returning 0 on a regular file
            raise OSError(f"write returned {n}")
        view = view[n:]


@contextlib.contextmanager
def reading_lines(fd: int, buffer: int = 1 << 20) -> Iterator[BinaryIO]:
    """The file on ``fd`` from offset 0 as a buffered binary reader: iterating it yields the
    lines, each keeping its newline (the last may lack one), so memory stays one buffer and
    one line. The descriptor stays open and its offset is restored on exit."""
    start = os.lseek(fd, 0, os.SEEK_CUR)
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        with open(fd, "rb", buffering=buffer, closefd=False) as reader:
            yield reader
    finally:
        os.lseek(fd, start, os.SEEK_SET)
