"""The batching policy of the write-behind writer, without I/O (spec/persistence.md §Write path).

:class:`WritePolicy` decides everything the :class:`~trio_agent.store.writer.Writer` does not
need trio or a file for: what is admitted, which lines form the next batch, when that batch
is due, what a failed attempt does to the queue and to the next deadline (back-off), and which
failure a flush must report. It reads no clock (every method that needs the time takes
``now``) and it never blocks; the writer's task and worker thread drive it:

* ``admits`` / ``arm`` / ``submit``: one append. The first pending line arms a fixed window
  (later lines do not extend it); ``submit`` says whether the writer task must wake.
* ``due`` / ``timer``: whether to write now, and until when to sleep otherwise.
* ``take`` → (the attempt) → ``succeeded`` or ``failed``: one batch. A failed batch goes back
  to the front of the queue, in order, and the next background attempt backs off from one
  window up to :data:`RETRY_MAX`; a flush retries at once (``retry_now``). An attempt that
  ends with neither (the writer task dies of an error that is not a write failure) is
  ``abandoned``: its lines go back too, and no flush can count them durable.
* ``begin_drain`` / ``error_since`` / ``end_drain``: a flush raises the first failure of an
  attempt started after it began; an earlier background failure is retried, not reported.
"""

from __future__ import annotations

from typing import Final

import attrs

#: Largest batch handed to one write loop (bounds the copy made by ``join``).
MAX_BATCH_BYTES: Final = 8 << 20

#: Longest pause between two background retries of a failing batch, in seconds.
RETRY_MAX: Final = 1.0

#: Shortest base of the retry back-off, in seconds (a zero window still backs off).
RETRY_MIN: Final = 0.005

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


@attrs.frozen
class Batch:
    """One attempt: its number (1, 2, ...), its lines (oldest first) and their size."""

    number: int
    lines: list[bytes]
    size: int

    @property
    def data(self) -> bytes:
        return b"".join(self.lines)


class WritePolicy:
    """The queue of lines not yet durable and every decision about writing them."""

    def __init__(
        self,
        *,
        window: float,
        soft_limit: int,
        hard_limit: int,
        max_batch: int = MAX_BATCH_BYTES,
        retry_max: float = RETRY_MAX,
    ) -> None:
        if window < 0:
            raise ValueError("the batching window must be >= 0 seconds")
        if not 0 < soft_limit <= hard_limit:
            raise ValueError("need 0 < soft_limit <= hard_limit")
        self.window = window
        self.soft_limit = soft_limit
        self.hard_limit = hard_limit
        self.max_batch = max_batch
        self.retry_max = retry_max
        self.queue: list[bytes] = []  # not yet durable, oldest first (not the batch in flight)
        self.pending_bytes = 0  # bytes of the queue and of the batch in flight
        self.deadline: float | None = None  # when the pending prefix's window expires
        self._arm_at = 0.0  # the deadline arm() computed for the next submit()
        self.paused = False  # the last attempt failed: no retry before its deadline or a flush
        self.writing = False  # a batch is in flight
        self.closing = False
        self.started = 0  # batches started
        self.failure: tuple[int, OSError] | None = None  # (batch number, error), last failure
        self.failed_in_row = 0
        self.batches_ok = 0
        self.flushers = 0  # flush / wait_writable calls waiting: write at once

    # -- one append -----------------------------------------------------------------------------

    def admits(self, type_: str, nbytes: int) -> bool:
        """Whether a line of ``nbytes`` of event ``type_`` fits under the hard bound."""
        return self.pending_bytes + nbytes <= self.hard_limit or type_ in ALWAYS_ADMITTED

    def arm(self, now: float) -> None:
        """Compute the window the next :meth:`submit` starts when it starts one (that is,
        while :attr:`deadline` is None; the writer calls this only then)."""
        self._arm_at = now + self.window

    def submit(self, line: bytes) -> bool:
        """Queue ``line``; return True if the writer task must wake to look at the queue."""
        self.queue.append(line)
        self.pending_bytes += len(line)
        if self.deadline is None:
            self.deadline = self._arm_at
            return True
        return self.pending_bytes >= self.soft_limit and not self.paused

    # -- when -----------------------------------------------------------------------------------

    def due(self, now: float) -> bool:
        """Whether the queue is to be written now: it holds lines and its window (or
        back-off) expired, or, unless the last attempt failed, too much is pending or a flush
        waits."""
        if not self.queue:
            return False
        expired = self.deadline is not None and now >= self.deadline
        if self.paused:
            return expired
        return expired or self.pending_bytes >= self.soft_limit or self.flushers > 0

    @property
    def timer(self) -> float | None:
        """When to look again if nothing wakes the writer (None: only a wake-up)."""
        return self.deadline if self.queue else None

    # -- one batch ------------------------------------------------------------------------------

    def take(self, now: float) -> Batch:
        """Start an attempt: the oldest lines up to :attr:`max_batch` bytes (at least one)."""
        self.deadline = None  # lines arriving during this write arm their own window
        self.paused = False
        cut, size = 0, 0
        for line in self.queue:
            if cut and size + len(line) > self.max_batch:
                break
            size += len(line)
            cut += 1
        lines = self.queue[:cut]
        del self.queue[:cut]
        if self.queue:  # lines left by the batch cap are already due
            self.deadline = now
        self.started += 1
        self.writing = True
        return Batch(self.started, lines, size)

    def succeeded(self, batch: Batch) -> None:
        """The attempt is durable: its bytes are no longer pending."""
        self.writing = False
        self.pending_bytes -= batch.size
        self.batches_ok += 1
        self.failure = None
        self.failed_in_row = 0

    def failed(self, batch: Batch, error: OSError, now: float) -> None:
        """The attempt failed: its lines go back to the front, in order, and the next
        background attempt waits :meth:`backoff` (a flush retries at once)."""
        self.writing = False
        self.queue[0:0] = batch.lines
        self.paused = True
        self.failure = (batch.number, error)
        self.failed_in_row += 1
        self.deadline = now + self.backoff()

    def abandoned(self, batch: Batch) -> None:
        """The attempt ended with no answer (the writer itself died, not the write): its
        lines go back to the front, in order, so no flush counts them durable. Nothing
        retries them; the writer is gone."""
        self.writing = False
        self.queue[0:0] = batch.lines

    def backoff(self) -> float:
        """The pause before the next background retry: one window, doubling per failure in a
        row, at most :attr:`retry_max`."""
        base = max(self.window, RETRY_MIN)
        doublings = min(self.failed_in_row - 1, 16)
        return min(base * 2.0**doublings, self.retry_max)

    @property
    def first_failure(self) -> bool:
        """True right after the first failure of a row (the one worth a warning)."""
        return self.failed_in_row == 1

    # -- flush acknowledgement ------------------------------------------------------------------

    def begin_drain(self) -> int:
        """A flush begins: write at once until it ends. Returns its mark for
        :meth:`error_since`."""
        self.flushers += 1
        return self.started

    def end_drain(self) -> None:
        self.flushers -= 1

    def error_since(self, mark: int) -> OSError | None:
        """The failure a flush begun at ``mark`` reports: only an attempt started after it."""
        failure = self.failure
        if failure is not None and failure[0] > mark:
            return failure[1]
        return None

    def retry_now(self) -> None:
        """A flush waits: a failure from before it is retried without waiting for back-off."""
        if self.paused and not self.writing:
            self.paused = False

    @property
    def flushed(self) -> bool:
        """Everything submitted is durable (nothing queued, nothing in flight)."""
        return not self.queue and not self.writing

    def close(self) -> None:
        """No more admissions; the writer task stops once its attempt in flight ended."""
        self.closing = True

    @property
    def writable(self) -> bool:
        """Pending bytes are under the soft bound."""
        return self.pending_bytes < self.soft_limit


#: Least bytes of log between two cold-open checkpoints (spec/persistence.md §5.1).
CHECKPOINT_EVERY: Final = 2 << 20
#: And at least this many times the last checkpoint's own size, so that recording them never
#: costs more than a quarter of the bytes the log itself takes.
CHECKPOINT_SPACING: Final = 4


@attrs.define
class CheckpointCadence:
    """When a writer records a cold-open checkpoint (spec/persistence.md §5.1), without I/O.

    A checkpoint is due at a balanced point (just after a ``turn/end``) whose end lies at
    least ``every`` bytes, and at least :data:`CHECKPOINT_SPACING` times the last
    checkpoint's size, past the last one: a cold open then reads at most that much more
    than the turn in progress, and the checkpoints' writes stay a fraction of the log's.
    """

    every: int = CHECKPOINT_EVERY
    #: The end of the prefix the last checkpoint describes (0: none yet).
    last: int = 0
    #: The size in bytes of the last checkpoint recorded (0: none, or not known).
    last_size: int = 0

    def due(self, offset: int) -> bool:
        """Whether a balanced point ending at byte ``offset`` should be recorded."""
        return offset - self.last >= max(self.every, CHECKPOINT_SPACING * self.last_size)

    def taken(self, offset: int) -> None:
        """A checkpoint of the prefix ending at ``offset`` is on its way to disk."""
        self.last = offset

    def recorded(self, size: int) -> None:
        """The last checkpoint taken is on disk and takes ``size`` bytes."""
        self.last_size = size
