"""The part of a store's ``async with`` both backends share: the nursery their writer tasks
run in, and the sessions they handed out, every one closed on the way out (drain, fsync,
unlock; spec/persistence.md §2, Close). Only how a session is opened differs between backends."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import trio

from .errors import StoreError
from .session import Clock, Session, Sink

if TYPE_CHECKING:
    from .recovery import ColdOpen

_log = logging.getLogger("trio_agent.store")


class SessionNursery:
    """Owned by one store for the life of its ``async with``; ``name`` and ``usage`` word the
    errors (``"JsonlStore"``, ``"async with JsonlStore(root) as store"``)."""

    def __init__(self, name: str, usage: str) -> None:
        self._name = name
        self._usage = usage
        self._nursery: trio.Nursery | None = None
        self._cm: contextlib.AbstractAsyncContextManager[trio.Nursery] | None = None
        self._exited = False
        #: Sessions handed out and not yet closed.
        self.sessions: set[Session] = set()

    def check_enter(self) -> None:
        """A store is entered once: its sessions' locks and leases belong to that one block."""
        if self._cm is not None or self._exited:
            raise StoreError(f"a {self._name} can be entered only once")

    async def enter(self) -> None:
        self.check_enter()
        self._cm = trio.open_nursery()
        self._nursery = await self._cm.__aenter__()

    async def exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close every session (shielded: leaving on a cancel still drains and unlocks), then
        the nursery. The first close failure is raised unless the body already raised."""
        assert self._cm is not None
        first: BaseException | None = None
        try:
            with trio.CancelScope(shield=True):
                for session in list(self.sessions):
                    try:
                        await session.aclose()
                    except Exception as close_exc:
                        _log.error("session %r: closing failed: %s", session.id, close_exc)
                        first = first or close_exc
        finally:
            self._exited = True
            self._nursery = None
            try:
                await self._cm.__aexit__(exc_type, exc, tb)
            except BaseExceptionGroup as group:
                # The nursery wraps the body's exception; hand the caller the original.
                if exc is not None and len(group.exceptions) == 1 and group.exceptions[0] is exc:
                    return
                raise
        if first is not None and exc is None:
            raise first

    def require_open(self) -> trio.Nursery:
        if self._nursery is None:
            raise StoreError(f"the store is not open: use `{self._usage}`")
        return self._nursery

    def seeded(self, session_id: str, sink: Sink, clock: Clock, cold: ColdOpen | None) -> Session:
        """The live session over ``sink``: empty for a new log, else seeded with what the cold
        open read and the checker it already fed (the log is never checked twice)."""
        if cold is None:
            return Session(session_id, sink=sink, clock=clock)
        return Session(session_id, sink=sink, clock=clock, events=cold.events, checker=cold.checker)

    async def start_writer(
        self,
        nursery: trio.Nursery,
        session: Session,
        run: Callable[..., Awaitable[Any]],
    ) -> None:
        """Count ``session`` as handed out and start its writer task (``run``, a
        ``nursery.start`` target); the caller undoes its own registration if this raises."""
        self.sessions.add(session)
        await nursery.start(run)


class StoreLifecycle:
    """The ``async with`` of a store, the same for both backends: entered once, it owns a
    :class:`SessionNursery` (``self._life``); leaving it closes every session handed out.
    A backend that must prepare something first (the database's tables) overrides
    :meth:`_prepare`, which runs before the nursery opens."""

    _life: SessionNursery

    async def _prepare(self) -> None:
        await trio.lowlevel.checkpoint()

    async def __aenter__(self) -> Self:
        self._life.check_enter()
        await self._prepare()
        await self._life.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Never swallows the body's exception: a store's ``async with`` only ever adds one.
        await self._life.exit(exc_type, exc, tb)

    def _require_open(self) -> trio.Nursery:
        return self._life.require_open()
