"""The write-behind writer of one live session (spec/persistence.md §Write path).

``append`` hands each encoded line to :meth:`Writer.submit` (synchronous). The writer task,
which lives in the store's nursery under a shield (never inside a turn's cancel scope), turns
the queue into batches: the first pending event arms a fixed window (later events do not extend
it); when it expires, every pending line becomes one ``O_APPEND`` write loop and one ``fsync``,
done in a worker thread. :meth:`Writer.flush` writes at once, including lines that arrive while
it waits, and raises the first write error of its own attempts.

A batch that fails (write or fsync) goes back to the front of the queue, in order; before the
next attempt the file is cut back to the last length known durable, so a retry can neither
duplicate nor leave a gap. Background retries back off from one window up to a second; a flush
(or ``wait_writable``) retries at once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Final

import trio

from .errors import PendingLimitExceeded, SessionClosed, WriteFailed
from .fileops import FileOps, write_all

_log = logging.getLogger("trio_agent.store")

#: Default batching window, in seconds.
DEFAULT_WINDOW: Final = 0.020
#: Default soft bound on bytes not yet durable: above it the writer stops waiting for the
#: window and ``wait_writable`` blocks.
DEFAULT_SOFT_LIMIT: Final = 4 << 20
#: Default hard bound: above it only closing events are admitted.
DEFAULT_HARD_LIMIT: Final = 64 << 20
#: Largest batch handed to one write loop (bounds the copy made by ``join``).
MAX_BATCH_BYTES: Final = 8 << 20

#: Longest pause between two background retries of a failing batch, in seconds.
RETRY_MAX: Final = 1.0

#: Event types admitted even above the hard bound. They end or settle work already started
#: (a turn's finally must always be able to book ``turn/end``); streaming output, new turns,
#: steps, input and dispatches are refused there.
ALWAYS_ADMITTED: Final = frozenset(
    {
        "turn/end",
        "step/end",
        "tool/result",
        "assistant/message",
        "approval/decided",
        "tool/spawned",
        "agent/inbox/spliced",
    }
)


class Writer:
    """The :class:`~trio_agent.store.session.Sink` of a durable session: queue, batches, lock.

    It owns the file descriptor (opened ``O_RDWR | O_APPEND``) and with it the ``flock`` that
    makes the session live; :meth:`aclose` releases both.
    """

    def __init__(
        self,
        session_id: str,
        fd: int,
        durable_length: int,
        *,
        ops: FileOps,
        window: float = DEFAULT_WINDOW,
        soft_limit: int = DEFAULT_SOFT_LIMIT,
        hard_limit: int = DEFAULT_HARD_LIMIT,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        if window < 0:
            raise ValueError("the batching window must be >= 0 seconds")
        if not 0 < soft_limit <= hard_limit:
            raise ValueError("need 0 < soft_limit <= hard_limit")
        self._id = session_id
        self._fd = fd
        self._ops = ops
        self._window = window
        self._soft = soft_limit
        self._hard = hard_limit
        self._on_close = on_close
        self._durable_length = durable_length
        self._queue: list[bytes] = []  # not yet durable, oldest first (not the batch in flight)
        self._pending_bytes = 0  # bytes of the queue and of the batch in flight
        self._deadline: float | None = None  # when the pending prefix's window expires
        self._arm_at = 0.0  # the deadline admit() computed for the next submit()
        self._paused = False  # the last attempt failed: no retry before a window or a flush
        self._dirty = False  # the file may hold bytes past the durable length
        self._writing = False
        self._closing = False
        self._started = 0  # batches started
        self._failure: tuple[int, OSError] | None = None  # (batch number, error), last failure
        self._written_events = 0
        self._flushers = 0  # flush / wait_writable calls waiting: write at once
        self._failed_in_row = 0
        self._batches_ok = 0
        self._wake = trio.Event()
        self._progress = trio.Event()
        self._stopped = trio.Event()
        self._closed = False

    # -- figures, for tests and benchmarks -----------------------------------------------------

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def pending_events(self) -> int:
        return len(self._queue)

    @property
    def durable_length(self) -> int:
        """File length known durable (everything up to the last acknowledged batch)."""
        return self._durable_length

    @property
    def batches(self) -> int:
        """Batches written and synced successfully."""
        return self._batches_ok

    # -- Sink -----------------------------------------------------------------------------------

    def admit(self, type_: str, nbytes: int) -> None:
        if self._closing:
            raise SessionClosed(self._id)
        if self._pending_bytes + nbytes > self._hard and type_ not in ALWAYS_ADMITTED:
            raise PendingLimitExceeded(self._id, type_, self._pending_bytes, self._hard)
        if self._deadline is None:
            # Read the clock here, where raising still records nothing: outside the trio
            # thread that owns the store this raises RuntimeError (append is trio-only).
            self._arm_at = trio.current_time() + self._window

    def submit(self, line: bytes) -> None:
        self._queue.append(line)
        self._pending_bytes += len(line)
        if self._deadline is None:
            self._deadline = self._arm_at
            self._wake.set()
        elif self._pending_bytes >= self._soft and not self._paused:
            self._wake.set()

    async def flush(self) -> None:
        if self._closed:
            raise SessionClosed(self._id)
        await self._drain(lambda: not self._queue and not self._writing)

    async def wait_writable(self) -> None:
        if self._closed:
            raise SessionClosed(self._id)
        await self._drain(lambda: self._pending_bytes < self._soft)

    async def aclose(self) -> None:
        if self._closed:
            return
        try:
            with trio.CancelScope(shield=True):
                await self.flush()
        except WriteFailed as exc:
            # The last attempt: nothing retries after a close, so say what really happens.
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            raise WriteFailed(self._id, cause, exc.queued, closing=True) from cause
        finally:
            self._closing = True
            self._wake.set()
            with trio.CancelScope(shield=True):
                await self._stopped.wait()
            self._closed = True
            self._progress.set()  # wake any other flush still waiting, so it can see the close
            try:
                if self._on_close is not None:
                    self._on_close()
            finally:
                self._release()

    def _release(self) -> None:
        """Give up what makes the session live (here: close the fd, which drops the flock)."""
        os.close(self._fd)  # releases the flock: the session is cold from here on

    # -- the writer task ------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The drain loop. Shielded: it ends only when :meth:`aclose` says so."""
        with trio.CancelScope(shield=True):
            task_status.started()
            try:
                while not self._closing:
                    if self._queue and self._due():
                        await self._write_batch()
                        continue
                    self._wake = trio.Event()
                    if self._queue and self._deadline is not None:
                        with trio.move_on_at(self._deadline):
                            await self._wake.wait()
                    else:
                        await self._wake.wait()
            finally:
                self._stopped.set()

    def _due(self) -> bool:
        expired = self._deadline is not None and trio.current_time() >= self._deadline
        if self._paused:
            return expired
        return expired or self._pending_bytes >= self._soft or self._flushers > 0

    async def _drain(self, done: Callable[[], bool]) -> None:
        """Make the writer write now until ``done()``; raise the first failure of an attempt
        made after this call began (an earlier background failure is retried once)."""
        start = self._started
        self._flushers += 1
        try:
            while True:
                failure = self._failure
                if failure is not None and failure[0] > start:
                    raise WriteFailed(self._id, failure[1], len(self._queue)) from failure[1]
                if done():
                    break
                if self._stopped.is_set():  # closed while we waited: nothing will write now
                    raise SessionClosed(self._id)
                if self._paused and not self._writing:
                    self._paused = False  # a failure from before this call: retry it now
                self._wake.set()
                await self._progress.wait()
        finally:
            self._flushers -= 1
        await trio.lowlevel.checkpoint()

    async def _write_batch(self) -> None:
        self._deadline = None  # lines arriving during this write arm their own window
        self._paused = False
        cut, size = 0, 0
        for line in self._queue:
            if cut and size + len(line) > MAX_BATCH_BYTES:
                break
            size += len(line)
            cut += 1
        batch = self._queue[:cut]
        del self._queue[:cut]
        if self._queue:  # lines left by the batch cap are already due
            self._deadline = trio.current_time()
        self._started += 1
        number = self._started
        self._writing = True
        try:
            await trio.to_thread.run_sync(self._write_blocking, b"".join(batch))
        except OSError as exc:
            self._queue[0:0] = batch
            self._paused = True
            self._failure = (number, exc)
            self._failed_in_row += 1
            if self._failed_in_row == 1 and self._retryable(exc):
                _log.warning(
                    "session %r: write failed (%s); %d event(s) stay queued and will be retried",
                    self._id,
                    exc,
                    len(self._queue),
                )
            # Background retry, backing off from one window up to RETRY_MAX seconds.
            delay = min(max(self._window, 0.005) * 2 ** min(self._failed_in_row - 1, 16), RETRY_MAX)
            self._deadline = trio.current_time() + delay
        else:
            self._pending_bytes -= size
            self._written_events += cut
            self._batches_ok += 1
            self._failure = None
            self._failed_in_row = 0
        finally:
            self._writing = False
            self._progress.set()
            self._progress = trio.Event()

    def _retryable(self, exc: OSError) -> bool:
        """Whether a failed attempt is worth the "will be retried" warning (a subclass may
        know that nothing will ever be written again)."""
        return True

    def _write_blocking(self, data: bytes) -> None:
        """One attempt, in a worker thread: cut back if needed, write everything, fsync."""
        ops, fd = self._ops, self._fd
        if self._dirty:
            ops.truncate(fd, self._durable_length)
            self._dirty = False
        self._dirty = True
        write_all(ops, fd, data)
        ops.point("batch:written")
        ops.fsync(fd)
        self._dirty = False
        self._durable_length += len(data)
        ops.point("batch:synced")
