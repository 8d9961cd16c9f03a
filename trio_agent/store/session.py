"""``Session``: the in-memory log of one session, plus its binding to a durable writer.

``append`` is synchronous (no await, so a ``finally`` can always write ``turn/end``): it
assigns ``seq`` and ``time``, validates the event with the same
:class:`~trio_agent.log.LogChecker` that ``trio-agent check`` runs on files, records it,
hands its bytes to the writer and notifies observers. An event that breaks a rule raises
:class:`~trio_agent.log.LogViolation` and nothing is recorded. Reads never block.

A session made by :meth:`Session.in_memory` has no writer: same checks, same observers,
nothing durable. ``JsonlStore`` (in :mod:`trio_agent.store.jsonl`) makes durable ones.
"""

from __future__ import annotations

import contextlib
import logging
import time as _time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, overload, runtime_checkable

import orjson
import trio

from ..log.checker import LogChecker
from ..log.codec import EVENT_LINE, MAX_DEPTH, TYPE_JSON, too_deep
from ..log.consumed import ConsumedWork, fold_consumed_work
from ..log.data_predicates import DATA_PREDICATES, why_invalid
from ..log.envelope import Event
from ..log.errors import LogViolation
from ..log.inbox import InboxProjection
from ..log.lines import EventLines, as_event_lines
from .errors import ReentrantAppend, SessionClosed, SessionFenced

__all__ = ["Clock", "Observer", "Session", "Sink", "wall_clock_ms"]

_log = logging.getLogger("trio_agent.store")

#: Returns the current time in integer milliseconds (the ``time`` of an event).
Clock = Callable[[], int]
#: Called synchronously with each appended event, after it is recorded.
Observer = Callable[[Event], None]


def wall_clock_ms() -> int:
    """The default clock: Unix time in milliseconds."""
    return _time.time_ns() // 1_000_000


class Sink(Protocol):
    """What a :class:`Session` hands its events to (the write-behind writer of a store).

    ``admit`` may refuse an event (raising) before anything is recorded; ``submit`` takes the
    encoded line of an event that is already recorded and must not raise.
    """

    def admit(self, type_: str, nbytes: int) -> None: ...

    def submit(self, line: bytes) -> None: ...

    async def flush(self) -> None: ...

    async def wait_writable(self) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Checkpointing(Protocol):
    """A sink that records cold-open checkpoints (spec/persistence.md §5.1): the session
    calls :meth:`balanced` right after it submitted a ``turn/end``, with its checker."""

    def balanced(self, checker: LogChecker, line: bytes) -> None: ...


@runtime_checkable
class Leased(Protocol):
    """A sink that can lose its session for good (the database store's fenced writer)."""

    @property
    def lost(self) -> SessionFenced | None: ...

    async def wait_lost(self) -> SessionFenced: ...


class _EventsView(Sequence[Event]):
    """A read-only, live view of the session's events (no copy; decoded when read)."""

    __slots__ = ("_events",)

    def __init__(self, events: EventLines) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        return self._events[index]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __reversed__(self) -> Iterator[Event]:
        return reversed(self._events)

    def __eq__(self, other: object) -> bool:
        return self._events == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self._events)} events>"


_NOT_NOTIFYING: Final = -1


class Session:
    """One session's log in memory, bound to a writer (or to none, see :meth:`in_memory`).

    Stable API: :attr:`id`, :attr:`events`, :attr:`checker`, :meth:`append`,
    :meth:`subscribe`, :meth:`flush`, :meth:`aclose`, :attr:`closed`, plus the read-only
    projections :attr:`open_turn`, :attr:`open_step`, :attr:`next_seq`, :attr:`inbox` and
    :meth:`fold_consumed_work`.

    Observers run synchronously inside ``append``, after the event is recorded and handed to
    the writer, in subscription order. An observer that raises is logged (logger
    ``trio_agent.store``) and does not affect the append or the other observers. An observer
    must not append: a nested ``append`` raises :class:`~trio_agent.store.ReentrantAppend`
    (otherwise observers would see events in different orders); schedule it from a task.

    A durable session belongs to the trio thread running its store: call ``append`` there.
    """

    def __init__(
        self,
        id: str,
        *,
        sink: Sink | None = None,
        clock: Clock | None = None,
        events: Sequence[Event] = (),
        checker: LogChecker | None = None,
    ) -> None:
        """Build a session seeded with ``events`` (already durable, never re-written).

        If ``checker`` is given it must already have been fed exactly ``events`` (the store's
        cold open does this to avoid checking a large log twice); otherwise the events are
        checked here and a :class:`~trio_agent.log.LogViolation` is raised if they are bad.
        """
        self._id = id
        self._sink = sink
        self._clock: Clock = clock if clock is not None else wall_clock_ms
        # The log is kept as its encoded lines (spec/persistence.md §2 Memory): a long session
        # holds about its file's size, not the several times more that decoded events take.
        self._events = as_event_lines(events)
        if checker is None:
            checker = LogChecker()
            checker.feed_all(self._events)
        elif checker.next_seq != len(self._events):
            raise ValueError("the checker was not fed exactly the seed events")
        self._checker = checker
        self._view = _EventsView(self._events)
        self._observers: list[Observer] = []
        self._notifying = _NOT_NOTIFYING
        self._closed = False
        self._last_time = checker.last_time
        self._balanced = sink.balanced if isinstance(sink, Checkpointing) else None

    @classmethod
    def in_memory(
        cls, id: str = "memory", *, clock: Clock | None = None, events: Sequence[Event] = ()
    ) -> Session:
        """A session with no durable backend: same checker and observers, nothing on disk."""
        return cls(id, clock=clock, events=events)

    # -- reads (never block) -------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def events(self) -> Sequence[Event]:
        """Every event of the log, in seq order (a live read-only view, not a copy)."""
        return self._view

    @property
    def checker(self) -> LogChecker:
        """The checker every append goes through. Read it; never feed it."""
        return self._checker

    @property
    def open_turn(self) -> int | None:
        return self._checker.open_turn

    @property
    def open_step(self) -> int | None:
        return self._checker.open_step

    @property
    def next_seq(self) -> int:
        return self._checker.next_seq

    @property
    def inbox(self) -> InboxProjection:
        """The inbox projection after the last event (read-only use)."""
        return self._checker.inbox

    @property
    def durable(self) -> bool:
        """True when a writer makes the events durable (False for :meth:`in_memory`)."""
        return self._sink is not None

    @property
    def closed(self) -> bool:
        return self._closed

    def fold_consumed_work(self) -> ConsumedWork:
        return fold_consumed_work(self._events)

    # -- append ---------------------------------------------------------------------------------

    def append(self, type: str, data: Mapping[str, Any]) -> Event:
        """Validate, record and hand over one event; return it. Synchronous.

        Raises :class:`~trio_agent.log.LogViolation` for an event that breaks a rule (``I0``
        for data that is not valid JSON of that type), :class:`SessionClosed`,
        :class:`ReentrantAppend` from an observer, or
        :class:`~trio_agent.store.PendingLimitExceeded` when the writer's hard memory bound
        refuses it. In every one of these cases nothing is recorded.

        The recorded event holds a copy of ``data`` as it will read back from disk, so later
        changes to the caller's object do not reach the log.
        """
        if self._closed:
            raise SessionClosed(self._id)
        if self._notifying != _NOT_NOTIFYING:
            raise ReentrantAppend(self._id, type, self._notifying)
        seq = self._checker.next_seq
        valid = DATA_PREDICATES.get(type)
        if valid is None:
            raise LogViolation("I0", seq, f"unknown event type {type!r}")
        try:
            raw = orjson.dumps(data)
        except TypeError as exc:
            raise LogViolation("I0", seq, f"data is not JSON ({exc})") from None
        if too_deep(raw, MAX_DEPTH - 1):  # the line's own object is the level above data
            raise LogViolation("I0", seq, f"data nests deeper than a line may ({MAX_DEPTH} levels)")
        copy = orjson.loads(raw)
        if not valid(copy):
            raise LogViolation("I0", seq, why_invalid(type, copy))
        now = self._clock()
        if now < self._last_time:  # keep event times non-decreasing if the clock steps back
            now = self._last_time
        event = Event(seq, now, type, copy)
        line = EVENT_LINE % (seq, now, TYPE_JSON[type], raw)
        sink = self._sink
        if sink is not None:
            sink.admit(type, len(line))
        self._checker.feed(event)  # raises LogViolation and changes nothing on a bad event
        self._events.append_line(line)
        self._last_time = now
        if sink is not None:
            sink.submit(line)
            if type == "turn/end" and self._balanced is not None:
                self._balanced(self._checker, line)
        if self._observers:
            self._notify(event)
        return event

    def _notify(self, event: Event) -> None:
        self._notifying = event.seq
        try:
            for observer in tuple(self._observers):
                try:
                    observer(event)
                except Exception:
                    _log.exception(
                        "session %r: observer %r failed on seq %d", self._id, observer, event.seq
                    )
        finally:
            self._notifying = _NOT_NOTIFYING

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after every later append; returns the unsubscribe function."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._observers.remove(observer)

        return unsubscribe

    # -- durability -----------------------------------------------------------------------------

    async def flush(self) -> None:
        """Return once every event appended so far (and while waiting) is durable.

        Raises :class:`~trio_agent.store.WriteFailed` (an ``OSError``) with the first write
        error; the events stay queued in order and a later flush retries them. For an
        in-memory session this is a checkpoint and nothing else.
        """
        if self._sink is None:
            await trio.lowlevel.checkpoint()
            return
        await self._sink.flush()

    async def wait_writable(self) -> None:
        """Backpressure for producers that can wait: return when the writer's queue is below
        its soft bound (at once for an in-memory session)."""
        if self._sink is None:
            await trio.lowlevel.checkpoint()
            return
        await self._sink.wait_writable()

    @property
    def lost(self) -> SessionFenced | None:
        """Why this session can no longer be written, if it cannot: another owner took its
        lease over (spec/persistence.md §10.3). Always ``None`` for a file or in-memory one."""
        sink = self._sink
        return sink.lost if isinstance(sink, Leased) else None

    async def wait_lost(self) -> SessionFenced:
        """Return the :class:`~trio_agent.store.SessionFenced` once this session's writer has
        lost its lease to another owner; never returns for a session that cannot lose it."""
        sink = self._sink
        if not isinstance(sink, Leased):
            await trio.sleep_forever()
        return await sink.wait_lost()

    async def aclose(self) -> None:
        """Flush, then release the session (its lock, for a durable one). Idempotent.

        The session is closed even if the final flush fails; that error is raised and the
        events it could not write are lost, exactly as if the process had died: the file is
        a valid prefix and the next ``open`` repairs it.
        """
        if self._closed:
            return
        self._closed = True
        if self._sink is not None:
            await self._sink.aclose()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("durable" if self._sink is not None else "memory")
        n = len(self._events)
        return f"<Session {self._id!r} {state} events={n} open_turn={self.open_turn}>"
