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

After the batch that makes a balanced prefix durable, at the cadence of
:class:`~trio_agent.store.write_policy.CheckpointCadence`, the writer records a cold-open
checkpoint of that prefix beside the log (spec/persistence.md §5.1): taken on the appending
thread when the ``turn/end`` is submitted, written in a worker thread once it is durable. A
checkpoint that cannot be written is logged and skipped: it only makes a later open longer.

Every one of those decisions is made by :class:`~trio_agent.store.write_policy.WritePolicy`
(pure, no clock, no I/O); this module only drives it: the writer task sleeps until the
policy's timer or a wake-up, runs the batch the policy takes in a worker thread and reports
the attempt's outcome back.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Final

import attrs
import orjson
import trio

from ..log import checkpoint as ck
from ..log.checker import LogChecker
from ..log.lines import EventLines
from .checkpoints import record_checkpoint
from .errors import PendingLimitExceeded, SessionClosed, WriteFailed
from .fileops import FileOps, write_all
from .write_policy import (
    ALWAYS_ADMITTED,
    MAX_BATCH_BYTES,
    RETRY_MAX,
    CheckpointCadence,
    WritePolicy,
)

__all__ = [
    "ALWAYS_ADMITTED",
    "DEFAULT_HARD_LIMIT",
    "DEFAULT_SOFT_LIMIT",
    "DEFAULT_WINDOW",
    "MAX_BATCH_BYTES",
    "RETRY_MAX",
    "CheckpointTarget",
    "Writer",
    "checkpoint_target",
]

#: A child of ``trio_agent.store``: a caller that reports write failures itself (``run``)
#: can leave out this one warning and keep the rest of the store's log.
_log = logging.getLogger("trio_agent.store.writer")

#: Default batching window, in seconds.
DEFAULT_WINDOW: Final = 0.020
#: Default soft bound on bytes not yet durable: above it the writer stops waiting for the
#: window and ``wait_writable`` blocks.
DEFAULT_SOFT_LIMIT: Final = 4 << 20
#: Default hard bound: above it only closing events are admitted.
DEFAULT_HARD_LIMIT: Final = 64 << 20


@attrs.frozen
class CheckpointTarget:
    """What a writer needs to record its log's checkpoints (spec/persistence.md §5.1)."""

    #: The log file, its checkpoint the sidecar beside it (the database store, which keeps
    #: it in a row, names the session here, for messages).
    log_path: str
    #: The log's first line as stored (a checkpoint holds its digest).
    header_line: bytes
    #: The log's identity (:func:`trio_agent.store.checkpoints.file_identity`); ``None``
    #: where rows have no identity beyond their session's (the database store).
    file_id: str | None
    #: When checkpoints are due; its ``last`` is the checkpoint the open resumed from.
    cadence: CheckpointCadence


def checkpoint_target(
    every: int | None,
    log_path: str,
    header_line: bytes,
    file_id: str | None,
    resumed_at: int | None,
) -> CheckpointTarget | None:
    """What a store's writer needs to record checkpoints every ``every`` bytes (``None``:
    none), counting from the checkpoint a cold open resumed at, if any."""
    if every is None:
        return None
    cadence = CheckpointCadence(every=every, last=resumed_at or 0)
    return CheckpointTarget(log_path, header_line, file_id, cadence)


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
        checkpoints: CheckpointTarget | None = None,
    ) -> None:
        self._id = session_id
        self._fd = fd
        self._ops = ops
        self._on_close = on_close
        #: What to write, when, and what a failure means: every decision without I/O.
        self._policy = WritePolicy(window=window, soft_limit=soft_limit, hard_limit=hard_limit)
        self._durable_length = durable_length
        self._dirty = False  # the file may hold bytes past the durable length
        self._wake = trio.Event()  # the policy has something new for the writer task
        self._progress = trio.Event()  # an attempt ended (flushes look at the policy again)
        self._stopped = trio.Event()
        self._closed = False
        self._checkpoints = checkpoints
        self._submitted_length = durable_length  # where the next submitted line will start
        self._checkpoint: ck.Checkpoint | None = None  # taken, not yet recorded

    # -- figures, for tests and benchmarks -----------------------------------------------------

    @property
    def pending_bytes(self) -> int:
        return self._policy.pending_bytes

    @property
    def pending_events(self) -> int:
        return len(self._policy.queue)

    @property
    def durable_length(self) -> int:
        """File length known durable (everything up to the last acknowledged batch)."""
        return self._durable_length

    @property
    def batches(self) -> int:
        """Batches written and synced successfully."""
        return self._policy.batches_ok

    # -- Sink -----------------------------------------------------------------------------------

    def admit(self, type_: str, nbytes: int) -> None:
        policy = self._policy
        if policy.closing:
            raise SessionClosed(self._id)
        if not policy.admits(type_, nbytes):
            raise PendingLimitExceeded(self._id, type_, policy.pending_bytes, policy.hard_limit)
        if policy.deadline is None:
            # Read the clock here, where raising still records nothing: outside the trio
            # thread that owns the store this raises RuntimeError (append is trio-only).
            policy.arm(trio.current_time())

    def submit(self, line: bytes) -> None:
        self._submitted_length += len(line)
        if self._policy.submit(line):
            self._wake.set()

    @property
    def checkpoint_due(self) -> bool:
        """Whether a balanced point ending where the submitted lines end would be recorded."""
        target = self._checkpoints
        return target is not None and target.cadence.due(self._submitted_length)

    def opened(self, checker: LogChecker, events: EventLines) -> None:
        """A cold open handed over ``events``, fed to ``checker``: a long log read in full is
        recorded at once (when it ends with a ``turn/end``). Not due when the open resumed
        at its end, so the prefix's last line is then never read."""
        if checker.open_turn is None and self.checkpoint_due:
            last = events.line(-1)
            if orjson.loads(last).get("type") == "turn/end":  # it may end outside a turn
                self.balanced(checker, last)

    def balanced(self, checker: LogChecker, line: bytes) -> None:
        """The session calls this right after submitting a ``turn/end`` (``line``), with the
        checker that accepted it: take a checkpoint if one is due. The checker's state is
        copied now, on the appending thread; the checkpoint is written once ``line`` is
        durable."""
        target = self._checkpoints
        if target is None or not self.checkpoint_due:
            return
        self._checkpoint = ck.take(
            checker,
            session=self._id,
            offset=self._submitted_length,
            header_line=target.header_line,
            last_line=line,
            file_id=target.file_id,
        )
        target.cadence.taken(self._submitted_length)
        if self._checkpoint.offset <= self._durable_length:  # already durable (a cold open's)
            self._wake.set()

    async def flush(self) -> None:
        if self._closed:
            raise SessionClosed(self._id)
        policy = self._policy
        await self._drain(lambda: policy.flushed)

    async def wait_writable(self) -> None:
        if self._closed:
            raise SessionClosed(self._id)
        policy = self._policy
        await self._drain(lambda: policy.writable)

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
            self._policy.close()
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
        policy = self._policy
        with trio.CancelScope(shield=True):
            task_status.started()
            try:
                while not policy.closing:
                    checkpoint = self._checkpoint
                    if checkpoint is not None and checkpoint.offset <= self._durable_length:
                        await self._record(checkpoint)
                        continue
                    if policy.due(trio.current_time()):
                        await self._write_batch()
                        continue
                    self._wake = trio.Event()
                    timer = policy.timer
                    if timer is not None:
                        with trio.move_on_at(timer):
                            await self._wake.wait()
                    else:
                        await self._wake.wait()
            finally:
                self._stopped.set()

    async def _record(self, checkpoint: ck.Checkpoint) -> None:
        """Write ``checkpoint`` beside the log (a worker thread). A failure is logged and
        dropped: the old checkpoint, or none, stays, and a cold open reads more."""
        self._checkpoint = None
        target = self._checkpoints
        assert target is not None
        try:
            size = await trio.to_thread.run_sync(self._store_checkpoint, checkpoint)
        except OSError as exc:
            _log.warning("session %r: checkpoint not recorded (%s)", self._id, exc)
        else:
            target.cadence.recorded(size)

    def _store_checkpoint(self, checkpoint: ck.Checkpoint) -> int:
        """Make ``checkpoint`` durable beside the log (a worker thread); its size in bytes.
        Here: the sidecar file (:func:`~trio_agent.store.checkpoints.record_checkpoint`)."""
        target = self._checkpoints
        assert target is not None
        data = ck.encode(checkpoint)
        record_checkpoint(self._ops, target.log_path, data)
        return len(data)

    async def _drain(self, done: Callable[[], bool]) -> None:
        """Make the writer write now until ``done()``; raise the first failure of an attempt
        made after this call began (an earlier background failure is retried once)."""
        policy = self._policy
        mark = policy.begin_drain()
        try:
            while True:
                error = policy.error_since(mark)
                if error is not None:
                    raise WriteFailed(self._id, error, len(policy.queue)) from error
                if done():
                    break
                if self._stopped.is_set():  # closed while we waited: nothing will write now
                    raise SessionClosed(self._id)
                policy.retry_now()
                self._wake.set()
                await self._progress.wait()
        finally:
            policy.end_drain()
        await trio.lowlevel.checkpoint()

    async def _write_batch(self) -> None:
        """One attempt of the batch the policy takes, in a worker thread."""
        policy = self._policy
        batch = policy.take(trio.current_time())
        try:
            await trio.to_thread.run_sync(self._write_blocking, batch.data)
        except OSError as exc:
            policy.failed(batch, exc, trio.current_time())
            if policy.first_failure and self._retryable(exc):
                _log.warning(
                    "session %r: write failed (%s); %d event(s) stay queued and will be retried",
                    self._id,
                    exc,
                    len(policy.queue),
                )
        except BaseException:
            # Not a write failure (a bug below us, MemoryError...): this task dies with the
            # store, and the batch was never acknowledged. Put it back so that a waiting
            # flush -- even a shielded one -- sees it pending and fails instead of succeeding.
            policy.abandoned(batch)
            raise
        else:
            policy.succeeded(batch)
        finally:
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
