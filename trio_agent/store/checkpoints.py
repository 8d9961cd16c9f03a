"""A file log's cold-open checkpoint on disk (spec/persistence.md §5.1): finding and
verifying the sidecar beside the log, and recording a new one atomically.

The checkpoint itself (what it holds, its encoding, what refuses it) is the log core's, pure:
:mod:`trio_agent.log.checkpoint`. This module adds the I/O: the sidecar's path, the file's
identity, the two lines a checkpoint is verified against, and the write-rename-fsync that
makes a recorded checkpoint either the old one or the new one after any crash.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Final

import attrs

from ..log import checkpoint as ck
from .fileops import FileOps, write_all

__all__ = [
    "CHECKPOINT_SUFFIX",
    "Found",
    "file_identity",
    "find_checkpoint",
    "record_checkpoint",
    "remove_stale_temps",
    "sidecar_of",
]

#: The sidecar of ``<dir>/<name>`` is ``<dir>/<name>.checkpoint``.
CHECKPOINT_SUFFIX: Final = ".checkpoint"
#: A sidecar larger than this is not read (refused as ``torn``): it bounds a cold open's memory
#: against a file that is not ours. A real one holds the log's ids: about 30 bytes a call.
MAX_SIDECAR: Final = 256 << 20
#: How far back from a checkpoint's offset a cold open looks for the start of the last line.
MAX_LINE: Final = 64 << 20
_READ_FLAGS: Final = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def sidecar_of(log_path: str | os.PathLike[str]) -> Path:
    """Where the checkpoint of the log at ``log_path`` lives."""
    p = Path(log_path)
    return p.with_name(p.name + CHECKPOINT_SUFFIX)


def file_identity(fd: int) -> str:
    """The identity a checkpoint records of its log: ``"<device>:<inode>"``."""
    st = os.fstat(fd)
    return f"{st.st_dev}:{st.st_ino}"


@attrs.frozen
class Found:
    """What looking for a log's checkpoint found: the verified checkpoint, or why not."""

    checkpoint: ck.Checkpoint | None
    #: ``"used"`` with a checkpoint, else one of :data:`trio_agent.log.checkpoint.REASONS`.
    reason: str
    #: The refusal's words, for the caller's log ("" when used or missing).
    detail: str = ""


def _read_sidecar(path: Path) -> bytes:
    fd = os.open(path, _READ_FLAGS)
    try:
        chunks: list[bytes] = []
        total = 0
        while total <= MAX_SIDECAR and (data := os.read(fd, 1 << 20)):
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _first_line(fd: int) -> bytes:
    """The file's first line as stored (its newline kept when it has one)."""
    data = os.pread(fd, 1 << 16, 0)
    end = data.find(b"\n") + 1
    while end == 0 and len(data) < MAX_LINE:
        more = os.pread(fd, len(data), len(data))
        if not more:
            return data
        data += more
        end = data.find(b"\n", len(data) - len(more)) + 1
    return data[:end] if end else data


def _line_ending_at(fd: int, offset: int) -> bytes:
    """The line (newline kept) that ends at byte ``offset``; b"" when there is none."""
    size = 1 << 12
    while True:
        begin = max(0, offset - size)
        data = os.pread(fd, offset - begin, begin)
        if len(data) != offset - begin or not data.endswith(b"\n"):
            return b""
        cut = data.rfind(b"\n", 0, len(data) - 1) + 1
        if cut or begin == 0:
            return data[cut:]
        if size >= MAX_LINE:
            return b""
        size *= 4


def find_checkpoint(fd: int, log_path: str | os.PathLike[str]) -> Found:
    """Read and verify the checkpoint of the log open on ``fd`` (blocking). A checkpoint is
    used only if it describes the log as it is now (spec/persistence.md §5.1); every other
    outcome is a reason, and the caller scans the whole log."""
    try:
        data = _read_sidecar(sidecar_of(log_path))
    except FileNotFoundError:
        return Found(None, ck.MISSING)
    except OSError as exc:
        return Found(None, ck.UNREADABLE, exc.strerror or str(exc))
    try:
        if len(data) > MAX_SIDECAR:
            raise ck.CheckpointRefused(ck.TORN, f"larger than {MAX_SIDECAR} bytes")
        cp = ck.decode(data)
        ck.verify(
            cp,
            size=os.fstat(fd).st_size,
            header_line=_first_line(fd),
            last_line=_line_ending_at(fd, cp.offset),
            file_id=file_identity(fd),
        )
    except ck.CheckpointRefused as refused:
        return Found(None, refused.reason, refused.detail)
    except OSError as exc:
        return Found(None, ck.UNREADABLE, exc.strerror or str(exc))
    return Found(cp, "used")


def _temp_name(target: Path) -> str:
    return f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def remove_stale_temps(log_path: str | os.PathLike[str]) -> None:
    """Remove what a writer killed while recording left: temporary sidecars. Call it only
    under the session's exclusive lock (no live writer can be recording one)."""
    target = sidecar_of(log_path)
    stem = f".{target.name}."
    with contextlib.suppress(OSError), os.scandir(target.parent) as entries:
        for entry in entries:
            if entry.name.startswith(stem) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def record_checkpoint(ops: FileOps, log_path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the log's sidecar with ``data`` atomically and durably (blocking): a new file
    is written and synced, renamed over the old one, and the directory synced, so after a
    crash at any moment the sidecar is the old checkpoint or the new one, each whole.
    Raises ``OSError``; nothing but a temporary file (removed) is left then."""
    target = sidecar_of(log_path)
    tmp = target.with_name(_temp_name(target))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            write_all(ops, fd, data)
            ops.fsync(fd)
        finally:
            os.close(fd)
        ops.point("checkpoint:written")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    ops.point("checkpoint:renamed")
