"""The file operations the store performs, as one replaceable object (the fault-injection seam).

Production code uses :class:`FileOps` itself: real ``write``, real ``fsync``, real
``ftruncate``. Tests pass a subclass that fails (``ENOSPC``, ``EIO``), writes short, or kills
the process at a named :meth:`FileOps.point`, and the store must still never lose, duplicate
or reorder an acknowledged event.

Every method may be called from a worker thread (``trio.to_thread.run_sync``), never two at once
for one file.
"""

from __future__ import annotations

import os


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


def read_all(fd: int) -> bytes:
    """Read a whole file from offset 0 without moving the descriptor's offset."""
    size = os.fstat(fd).st_size
    parts: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, max(size - offset, 1 << 16), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)  # no copy for one read
