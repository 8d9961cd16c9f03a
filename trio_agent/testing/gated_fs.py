"""The harness's disk: real file operations whose writer batches wait at a gate.

A :class:`~trio_agent.testing.world.World` hands a :class:`GatedFileOps` to its
:class:`~trio_agent.store.JsonlStore` (the store's ``file_ops`` seam). Every batch of the
writer then parks, in its worker thread, before its first byte, until the trio side releases
it from :meth:`~trio_agent.testing.world.World.settle`, when every trio task is blocked. So
the file never changes while trio code runs, and which events a batch holds does not depend
on thread timing. The gate can also refuse a batch (``ENOSPC``), call back right after a
batch's bytes are written (a crash between write and fsync), and report each batch that
finished, with how many events it held (the journal's ``write`` entries).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable

from ..store import FileOps

__all__ = ["GatedFileOps"]


class GatedFileOps(FileOps):
    """Real ``write``/``fsync``/``ftruncate`` whose writer batches wait at a gate.

    Until :attr:`armed` (set once the session is live, so create and cold open are not
    gated), everything passes. Once armed, the first ``write`` of each batch parks its worker
    thread until the trio side calls :meth:`release` (one batch per call) or opens the gate
    for good (:meth:`open_all`, for teardown). :attr:`fail_next` makes that many batches fail
    with ``ENOSPC`` before they write a byte. All methods but :meth:`release`,
    :meth:`open_all` and the properties run in the writer's worker thread.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.armed = False
        self._passthrough = False
        self._in_batch = False
        self._parked = False
        self._parked_data = b""
        self._park_generation = 0  # counts parked batches
        self._released = 0  # the last generation the trio side let through
        self._version = 0
        self.fail_next = 0
        self.batches = 0
        #: Called in the worker thread right after a batch's bytes are written (server crash).
        self.after_write: Callable[[], None] | None = None
        #: Called in the worker thread when a batch finished: ``(events, ok)``, written and
        #: synced, or refused (spec/harness.md §Journal entries, ``write``).
        self.on_batch: Callable[[int, bool], None] | None = None
        self._batch_lines = 0

    # -- trio side ---------------------------------------------------------------------------

    @property
    def parked(self) -> bool:
        """A batch waits at the gate (its worker thread is blocked)."""
        return self._parked

    @property
    def parked_will_write(self) -> bool:
        """A batch is parked and will write its bytes once released (no injected failure is
        due for it: that one would refuse it before a byte is written)."""
        return self._parked and not self.fail_next

    @property
    def parked_data(self) -> bytes:
        """The bytes the parked batch is about to write."""
        return self._parked_data

    @property
    def version(self) -> int:
        return self._version

    @property
    def busy(self) -> bool:
        """A batch is between its first write and its fsync (or failure), in its thread."""
        return self._in_batch

    def release(self) -> None:
        """Let the parked batch through. Idempotent: releasing the same parked batch twice
        (the trio side looked again before its thread woke) lets no later batch through."""
        with self._cond:
            if self._parked:
                self._released = self._park_generation
                self._cond.notify_all()

    def open_all(self) -> None:
        """Never gate again (teardown of a world: its writes no longer matter)."""
        with self._cond:
            self._passthrough = True
            self._cond.notify_all()

    def wait_change(self, version: int, timeout: float) -> None:
        """Block (in a thread) until the gate's state changed from ``version``."""
        with self._cond:
            self._cond.wait_for(lambda: self._version != version, timeout)

    # -- worker-thread side ------------------------------------------------------------------

    def _bump(self) -> None:
        self._version += 1
        self._cond.notify_all()

    def write(self, fd: int, data: bytes | memoryview) -> int:
        refused: int | None = None  # the events of a batch refused here
        with self._cond:
            if self.armed and not self._in_batch:
                self._in_batch = True
                self._batch_lines = 0
                if not self._passthrough:
                    self._park_generation += 1
                    generation = self._park_generation
                    self._parked = True
                    self._parked_data = bytes(data)
                    self._bump()
                    while self._released < generation and not self._passthrough:
                        self._cond.wait()
                    self._parked = False
                    self._bump()
                    if self.fail_next > 0:
                        self.fail_next -= 1
                        self._in_batch = False
                        self._bump()
                        # The writer hands a batch to one write call (write_all repeats it
                        # only for a short write), so its first data is the whole batch.
                        refused = self._parked_data.count(b"\n")
        if refused is not None:
            self._report(refused, ok=False)
            raise OSError(errno.ENOSPC, "injected by the harness: no space left")
        written = os.write(fd, data)
        if self._in_batch:
            self._batch_lines += bytes(data[:written]).count(b"\n")
        return written

    def _report(self, events: int, *, ok: bool) -> None:
        if self.on_batch is not None and not self._passthrough:
            self.on_batch(events, ok)

    def point(self, name: str) -> None:
        if name == "batch:written" and self.after_write is not None:
            self.after_write()
        elif name == "batch:synced":
            with self._cond:
                synced = self._batch_lines if self._in_batch else None
            if synced is None:
                return
            # Reported while the batch still counts as busy, so the entry comes before anything
            # the finished batch lets happen (a flush returning) and no trio code runs beside it.
            self._report(synced, ok=True)
            with self._cond:
                self._in_batch = False
                self.batches += 1
                self._bump()
