"""The agent: inbox operations, the driver task, the per-turn controller and cancel.

``open_agent(session, model=..., tools=..., approver=..., hooks=...)`` runs one agent on a
session for the duration of an ``async with`` block (spec/cancel.md K1-K8, K21-K24):

* ``followup`` / ``steer`` / ``inject`` append durable inbox splices; the waking ones wake the
  driver. They never claim: the driver claims at the step boundary.
* Waking an idle agent creates the turn's :class:`TurnController` *at once*, in the waking
  call, and flips the status to ``running``; the driver task then starts the turn. A cancel in
  between (the same tick) therefore finds the controller and no turn starts.
* When a turn ends and work is pending, the next turn gets a new controller. The agent drops
  its reference to a turn's controller before that turn's ``turn/end`` is appended, so from
  then on ``cancel`` can no longer reach the finished turn.
* ``cancel(cause, keep_inbox=False)`` clears the inbox (durably, unless ``keep_inbox``), then
  cancels the live controller with ``cause`` (first cause wins). An idle cancel arms nothing.
* A session whose writer lost its lease to another owner (``SessionFenced``, database store)
  stops the run: the live turn is cancelled (cause ``disposed``), one ``AgentError`` names the
  new owner, no later run starts and the inbox calls raise that ``SessionFenced``.
* Leaving the block is a graceful shutdown: cancel with cause ``disposed`` keeping queued work,
  wait for the driver, flush. The session stays open: the caller owns it (K24).
"""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import trio

from ..cancel import CancelCause, require_cause
from ..log import build
from ..models.base import Model
from ..store.errors import SessionFenced
from ..tools.base import Tool
from .controller import TurnController
from .events import (
    AgentError,
    InboxDropped,
    RuntimeEvent,
    Status,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnPrevented,
)
from .hooks import Approver, Hooks
from .run_state import RunState, Target
from .turn import CLEANUP_BOUND, TurnRunner

if TYPE_CHECKING:
    from ..store import Session

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT", "Agent", "EventStream", "open_agent"]

_log = logging.getLogger("trio_agent.runtime")

#: How long (seconds) leaving ``open_agent`` waits for the cancelled turn before tearing down.
DEFAULT_SHUTDOWN_TIMEOUT: Final = 30.0

# Sessions that have an agent right now (at most one agent per session, K24).
_attached: weakref.WeakSet[Session] = weakref.WeakSet()


class EventStream:
    """``async for ev in agent.events()``: the runtime events emitted after the call.

    The buffer is unbounded and belongs to this iterator; the agent holds it weakly, so an
    abandoned iterator costs nothing. Iteration ends once the agent is closed and the buffer
    is drained.
    """

    def __init__(self) -> None:
        # A trio memory channel without a bound: ``_push`` is called from synchronous code
        # (the agent's emit) and must never block or drop; the agent holds this object only
        # weakly, so an abandoned iterator frees its buffer with it.
        self._send, self._receive = trio.open_memory_channel[RuntimeEvent](math.inf)

    def _push(self, event: RuntimeEvent) -> None:
        with contextlib.suppress(trio.ClosedResourceError):  # closed: later events are dropped
            self._send.send_nowait(event)

    def close(self) -> None:
        """Stop receiving; buffered events can still be read."""
        self._send.close()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> RuntimeEvent:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def get_nowait(self) -> RuntimeEvent | None:
        """The next buffered event, or ``None``."""
        try:
            return self._receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None


def _check_text(text: object) -> str:
    if type(text) is not str:
        raise TypeError(f"a message text must be a str, got {type(text).__name__}")
    return text


class Agent:
    """One agent on one session. Build it with :func:`open_agent`."""

    def __init__(
        self,
        session: Session,
        *,
        model: Model,
        tools: Iterable[Tool] = (),
        approver: Approver | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in by_name:
                raise ValueError(f"two tools are named {tool.name!r}")
            by_name[tool.name] = tool
        self._session = session
        self._runner = TurnRunner(session, model, by_name, approver, hooks or Hooks(), self._emit)
        #: Status, live controller, the run's latest controller, wake latch (K1-K8).
        self._state = RunState()
        self._closing = False
        self._closed = False
        self._wake = trio.Event()
        self._idle_lot = trio.lowlevel.ParkingLot()
        self._listeners: list[Callable[[RuntimeEvent], object]] = []
        self._streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
        #: The outcome of the last turn this agent ran.
        self.last_outcome: TurnOutcome | None = None
        #: Set once the session's lease was taken over by another owner: nothing more runs.
        self.lost: SessionFenced | None = None

    # -- reads ----------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @property
    def status(self) -> Status:
        """``"idle"`` or ``"running"`` (a woken agent is running before its turn starts)."""
        return self._state.status

    @property
    def controller(self) -> TurnController | None:
        """The live controller, if any. Holding on to it is harmless: once its turn has ended
        it is closed and ignores ``cancel``."""
        return self._state.controller

    @property
    def closed(self) -> bool:
        return self._closed

    # -- runtime events -------------------------------------------------------------------------

    def events(self) -> EventStream:
        """An async iterator of the runtime events emitted from now on."""
        stream = EventStream()
        if self._closed:
            stream.close()
        else:
            self._streams.add(stream)
        return stream

    def subscribe(self, listener: Callable[[RuntimeEvent], object]) -> Callable[[], None]:
        """Call ``listener(event)`` synchronously for each runtime event; returns the
        unsubscribe function. A listener may call ``followup``/``steer``/``cancel``; an
        exception it raises is logged (logger ``trio_agent.runtime``) and contained."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: RuntimeEvent) -> None:
        # Iterators first: a listener may cause further events (a cancel from a listener
        # emits InboxDropped), and iterators must still see them in the order they happened.
        for stream in tuple(self._streams):
            stream._push(event)
        for listener in tuple(self._listeners):
            try:
                listener(event)
            except Exception:
                _log.exception("runtime listener %r failed on %r", listener, event)

    # -- inbox operations -----------------------------------------------------------------------

    def followup(self, text: str) -> str:
        """Queue a next-turn message and wake the driver. Returns the message id."""
        after_abort = self._check_usable(text)
        message_id = self._insert("next-turn", text, "followup")
        self._wake_driver(after_abort)
        return message_id

    def steer(self, text: str) -> str:
        """Queue a next-step message and wake the driver. Sent while a cancelled turn is
        still unwinding, it becomes a next-turn message (its own turn, K8)."""
        after_abort = self._check_usable(text)
        message_id = self._insert(self._state.steer_target(after_abort), text, "steer")
        self._wake_driver(after_abort)
        return message_id

    def inject(self, text: str) -> str:
        """Queue a next-step message without waking anything (context for the next step)."""
        self._check_usable(text)
        return self._insert("next-step", text, "inject")

    def _check_usable(self, text: object) -> bool:
        """Validate an inbox call; return whether it lands after an abort (latch rule K8).

        Computed before the insertion, so a cancel made by an observer of the insertion
        cannot reclassify it."""
        _check_text(text)
        if self._closed:
            raise RuntimeError("the agent is closed")
        if self.lost is not None:
            raise self.lost  # the session is someone else's: nothing could be made durable
        return self._state.after_abort

    def _insert(self, target: Target, text: str, source: str) -> str:
        message = {"id": f"m-{uuid.uuid4().hex[:16]}", "text": text, "source": source}
        start = len(self._session.inbox.queues[target])
        self._session.append(*build.inbox_inserted(target, start, message))
        return message["id"]

    def _wake_driver(self, after_abort: bool) -> None:
        if self._closing or self.lost is not None:
            return  # shutting down: queued work stays parked for the next session (K22)
        if self._state.wake(after_abort):
            self._start_run()

    # -- cancel ---------------------------------------------------------------------------------

    def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> bool:
        """Clear the inbox (unless ``keep_inbox``), then cancel the live controller with
        ``cause``. Returns True if this call cancelled a controller (the first cause wins).

        ``cause`` must be a :class:`CancelCause` (else :class:`TypeError`). Idle, this only
        clears the inbox; it arms nothing for later work. After the agent is closed it does
        nothing.
        """
        require_cause(cause)
        if type(keep_inbox) is not bool:
            raise TypeError(f"keep_inbox must be a bool, got {keep_inbox!r}")
        if self._closed:
            return False
        try:
            if not keep_inbox:
                self._clear_inbox(cause)
                self._state.forget_latch()
        finally:
            # Even if the clear failed (e.g. refused from inside a session observer), the
            # live turn is still cancelled.
            hit = self._state.cancel(cause)
        return hit

    def _clear_inbox(self, cause: CancelCause) -> None:
        inbox = self._session.inbox
        target: Target
        for target in ("next-step", "next-turn"):
            queued = tuple(dict(m) for m in inbox.queues[target])
            if not queued:
                continue
            self._session.append(*build.inbox_cleared(target, len(queued)))
            self._emit(InboxDropped(target, queued, cause))

    # -- waiting --------------------------------------------------------------------------------

    async def wait_idle(self) -> None:
        """Return once the agent is idle, following any run that starts meanwhile."""
        await trio.lowlevel.checkpoint()
        while self._state.status != "idle":
            await self._idle_lot.park()

    # -- losing the session ---------------------------------------------------------------------

    async def _watch_lease(self) -> None:
        """Wait until the session's writer is fenced (never, for a file or in-memory session)."""
        self._lose(await self._session.wait_lost())

    def _lose(self, error: SessionFenced) -> None:
        """Another owner took the session over: stop the run, once (spec/cancel.md K13)."""
        if self.lost is not None:
            return
        self.lost = error
        self._state.forget_latch()
        self._emit(AgentError(f"the run stops: {error}", error))
        self._state.cancel(CancelCause.disposed())

    # -- the driver -----------------------------------------------------------------------------

    def _start_run(self) -> None:
        self._state.start()
        self._emit(StatusChanged("running"))
        self._wake.set()

    async def _drive(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                await self._run()
        finally:
            # Only reached when the agent's nursery is torn down or the loop failed: nobody
            # must wait for an idle that would never come.
            self._state.abandon()
            self._idle_lot.unpark_all()

    async def _run(self) -> None:
        state = self._state
        controller = state.controller
        while controller is not None:
            if controller.cancel_called:
                self._prevented(controller)
                break
            if self.lost is not None:
                break
            await self._runner.run(controller, state.handoff, self._ended)
            durable = await self._checkpoint()
            controller = state.controller  # the next turn's, unless the turn was aborted
            if controller is None or not durable:
                break
            if controller.cancel_called:
                self._prevented(controller)
                break
            if not self._session.inbox.has_pending:
                break
        self._go_idle()

    def _ended(self, outcome: TurnOutcome) -> None:
        self.last_outcome = outcome
        self._emit(TurnEnded(outcome))

    def _prevented(self, controller: TurnController) -> None:
        cause = self._state.prevent(controller)
        inbox = self._session.inbox
        parked = len(inbox.next_turn) + len(inbox.next_step)
        self._emit(TurnPrevented(cause, parked))

    async def _checkpoint(self) -> bool:
        """The flush after ``turn/end`` (K13): the turn is durable before the next claim or
        before the agent reports idle. A failure stops the run (queued work parks)."""
        try:
            with trio.move_on_after(CLEANUP_BOUND, shield=True) as scope:
                await self._session.flush()
        except SessionFenced as exc:
            self._lose(exc)
            return False
        except Exception as exc:
            self._emit(AgentError(f"flush after turn/end failed: {exc}", exc))
            return False
        if scope.cancelled_caught:
            self._emit(AgentError(f"flush after turn/end took longer than {CLEANUP_BOUND}s"))
            return False
        return True

    def _go_idle(self) -> None:
        replay = self._state.go_idle()
        self._emit(StatusChanged("idle"))
        self._idle_lot.unpark_all()
        if (
            replay
            and self._state.status == "idle"  # an idle listener may already have woken it
            and not self._closing
            and self._session.inbox.has_pending
        ):
            self._start_run()

    # -- shutdown -------------------------------------------------------------------------------

    def _begin_shutdown(self) -> None:
        self._closing = True
        self.cancel(CancelCause.disposed(), keep_inbox=True)

    def _finish_shutdown(self) -> None:
        self._closed = True
        self._state.stop()
        self._idle_lot.unpark_all()
        for stream in tuple(self._streams):
            stream.close()
        self._listeners.clear()

    def __repr__(self) -> str:
        return f"<Agent on {self._session!r} {self._state.status}>"


@asynccontextmanager
async def open_agent(
    session: Session,
    *,
    model: Model,
    tools: Iterable[Tool] = (),
    approver: Approver | None = None,
    hooks: Hooks | None = None,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
) -> AsyncIterator[Agent]:
    """Run an agent on ``session`` for the duration of the block.

    The session must be open, with no open turn, and have no other agent. It stays owned by
    the caller: leaving the block flushes it but does not close it (K24). Leaving the block
    cancels the running turn with cause ``disposed``, keeps queued work in the inbox, waits
    for the driver (at most ``shutdown_timeout`` seconds, then the turn is torn down) and
    flushes. An exception raised in the block propagates unwrapped.
    """
    if session.closed:
        raise ValueError(f"session {session.id!r} is closed")
    if session.open_turn is not None:
        raise ValueError(
            f"session {session.id!r} has turn {session.open_turn} open; "
            "open it through its store so the turn is repaired first"
        )
    if session in _attached:
        raise RuntimeError(f"session {session.id!r} already has an agent")
    agent = Agent(session, model=model, tools=tools, approver=approver, hooks=hooks)
    _attached.add(session)
    body_error: BaseException | None = None
    try:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent._drive)
                nursery.start_soon(agent._watch_lease)
                try:
                    yield agent
                except BaseException as exc:
                    body_error = exc
                    raise
                finally:
                    agent._begin_shutdown()
                    with trio.move_on_after(shutdown_timeout, shield=True):
                        await agent.wait_idle()
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if body_error is not None and list(group.exceptions) == [body_error]:
                raise body_error from None
            raise
        finally:
            if not session.closed:
                with trio.move_on_after(CLEANUP_BOUND, shield=True):
                    try:
                        await session.flush()
                    except Exception:
                        if body_error is None:
                            raise
                        _log.exception("final flush of session %r failed", session.id)
    finally:
        agent._finish_shutdown()
        _attached.discard(session)
