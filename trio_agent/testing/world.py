"""One incarnation of the real runtime on a real JSONL session, moved only by the harness.

A :class:`World` is what lives between a cold open and a crash (or a graceful shutdown): a
:class:`~trio_agent.store.JsonlStore` session, an agent from
:func:`~trio_agent.runtime.open_agent` with the real :class:`~trio_agent.models.ScriptedModel`
and :class:`~trio_agent.tools.builtin.SleepTool` (one at a time: :meth:`World.renew`, the
``new_agent`` request, leaves it and opens another on the same open session, K24), and a few
harness seams built from the runtime's own extension points. Nothing in it moves unless the
harness moves it:

* **virtual time** (``trio.testing.MockClock(rate=0)``, no autojump): the model's chunk delays,
  the sleep tool and the writer's batching window only elapse on :meth:`advance`;
* **gates**: the ``job`` tool's body and the approver wait for a harness decision (the seams
  of :mod:`~trio_agent.testing.seams`);
* **disk I/O**: every batch of the writer waits, in its worker thread, at a gate in
  :class:`~trio_agent.testing.gated_fs.GatedFileOps` that only :meth:`World.settle` opens,
  when every trio task is blocked.
  So the file never changes while trio code runs, reading it is always race-free, and which
  events a batch holds does not depend on thread timing.

:meth:`World.settle` (run after every request) loops: wait until all tasks are blocked; open
the I/O gate for a parked batch and wait for its thread to report back; repeat until nothing is
runnable, no batch is parked and no worker thread is out. That is the quiescent point where the
state machine checks its invariants. Together with FIFO scheduling
(:mod:`~trio_agent.testing.scheduling`, installed by the adapters) this makes a world
deterministic: the same requests give the same journal, whatever the threads' timing.

**Traps** (``arm``): a crash or a cancel at a named point (:data:`~.protocol.POINTS`). Points
are detected by a session observer ("just after event X was appended"), a runtime listener
(``turn/start:before``), a seam (``tool:running``, ``approval:waiting``), the I/O gate
(``flush``) or the return of the flush after a ``tool/call`` (``tool/call:flushed``). A crash
snapshots the file bytes on the spot (they cannot be in flight). A cancel at an event point is
not issued from the observer (``cancel`` may append splices, and observers must not append):
it is recorded and issued synchronously at the next harness seam the turn enters (hook, model
read, approver, tool body) or, if the turn reaches none first, at the next quiescent point of
:meth:`settle` -- for a flush in flight, while its batch still waits at the gate. The
``…:observer`` points are the exception: their cancel is issued inside the observer, where no
seam could land it (after the ``finish`` chunk, after ``assistant/message``, after
``turn/end``); one that must clear a non-empty inbox has its clear refused there (K5), which
:meth:`cancel` journals as the cancel's ``error``.

Everything the world observes is reported in order through ``emit`` as *journal entries*
(spec/harness.md §Journal entries): appended events, runtime events, the harness's own actions and
fired traps. The reference model replays them.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Final

import trio
import trio.testing

from ..log.codec import event_to_json
from ..log.events import Event
from ..log.splice import SpliceKind, splice_kind
from ..runtime import (
    Agent,
    AgentError,
    InboxDropped,
    RuntimeEvent,
    StatusChanged,
    TurnEnded,
    TurnPrevented,
    TurnStarted,
    open_agent,
)
from ..store import JsonlStore, Session
from .gated_fs import GatedFileOps
from .protocol import OBSERVER_POINTS
from .seams import Gate, GateApprover, JobTool, PlanModel, SeamHooks, WatchedSleep, cancel_cause

__all__ = ["SESSION_ID", "World", "session_root"]

#: The id of the one session a world runs (its file is ``<root>/s/session.jsonl``).
SESSION_ID: Final = "s"
#: The writer's batching window (virtual seconds).
WINDOW: Final = 0.02
#: Points whose cancel trap is issued where the point is reached, not at the next seam.
_CANCEL_AT_ONCE: Final = (
    "turn/start:before",
    "tool:running",
    "approval:waiting",
    "flush",
    "tool/call:flushed",
    *OBSERVER_POINTS,
)
#: Longest real time :meth:`World.settle` waits for a worker thread before looking again.
_POLL: Final = 0.002
#: How long (real seconds) a winding-down world must have been blocked before its virtual
#: time jumps (:meth:`World.teardown`). Not 0: a world waiting for a worker thread (the
#: writer's fsync) with no virtual deadline ahead is blocked too, and a zero threshold made
#: the run loop poll without sleeping until the thread was back, hundreds of times a world.
_TEARDOWN_JUMP: Final = 0.0005


def _nothing() -> None:
    """What :meth:`World.settle` runs in a thread to let another thread's result in."""


Emit = Callable[[dict[str, Any]], None]


async def _no_flush() -> None:
    raise RuntimeError("no session is open")


def session_root(log_path: str | os.PathLike[str]) -> Path:
    """The store root whose session ``SESSION_ID`` lives at ``log_path``."""
    path = Path(log_path)
    if path.name != "session.jsonl" or path.parent.name != SESSION_ID:
        raise ValueError(f"the log must be <root>/{SESSION_ID}/session.jsonl, got {path}")
    return path.parent.parent


class World:
    """One incarnation (see the module docstring). Built and driven by a
    :class:`~trio_agent.testing.host.WorldHost`."""

    def __init__(
        self,
        *,
        log_path: str,
        create: bool,
        plan: Sequence[str],
        emit: Emit,
        on_crash: Callable[[World, bool], None],
    ) -> None:
        self.log_path = Path(log_path)
        self.root = session_root(log_path)
        self.create = create
        self.plan = list(plan)
        self._emit_to = emit
        self._on_crash = on_crash
        self.ops = GatedFileOps()
        self.ops.on_batch = self._batch_done
        self.session: Session | None = None
        self.agent: Agent | None = None
        self.scope = trio.CancelScope()
        self.stop = trio.Event()
        #: ``new_agent``: the agent is being left for a new one; a new one is installed.
        self.renewing = False
        self.renewed = False
        self.second: str | None = None
        self.done = trio.Event()
        self.dead = False
        self.closed_ok = False
        self.failure: str | None = None
        self.violations: list[str] = []
        self.trap: dict[str, Any] | None = None
        self.pending_cancel: dict[str, Any] | None = None
        self.jobs: list[Gate] = []
        self.approvals: list[Gate] = []
        self.bodies: dict[str, int] = {}  # running tool bodies: call id -> turn
        self.streams: set[tuple[int, int]] = set()
        self._chunked: set[tuple[int, int]] = set()
        self._call_seq: dict[str, int] = {}
        self.acked = 0
        self._checkpoint_at: int | None = None
        self._checkpoint_failed = False
        self.snapshot: bytes | None = None
        self._poll_limiter = trio.CapacityLimiter(1)
        self._flush: Callable[[], Awaitable[None]] = _no_flush
        self._t0 = 0.0

    # -- journal -------------------------------------------------------------------------------

    def emit(self, entry: dict[str, Any]) -> None:
        if not self.dead:
            self._emit_to(entry)

    def _batch_done(self, events: int, ok: bool) -> None:
        """A writer batch finished (called in the writer's thread while every trio task is
        blocked in :meth:`settle`): the journal's ``write`` entry."""
        self.emit({"k": "write", "events": events, "ok": ok})

    def violation(self, text: str) -> None:
        if not self.dead:
            self.violations.append(text)
            self.emit({"k": "violation", "text": text})

    # -- lifecycle -----------------------------------------------------------------------------

    def _clock(self) -> int:
        """Event ``time``: virtual milliseconds since this world started (every world starts
        at 0, whichever adapter hosts it and however long earlier worlds ran)."""
        return round((trio.current_time() - self._t0) * 1000)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the session (create or cold open), run the agent until :attr:`stop`, close."""
        started = False
        self._t0 = trio.current_time()
        try:
            with self.scope:
                store = JsonlStore(
                    self.root,
                    clock=self._clock,
                    window=WINDOW,
                    file_ops=self.ops,
                    reap_orphans=None,
                )
                async with store:
                    if self.create:
                        session = await store.create(SESSION_ID)
                    else:
                        session = await store.open(SESSION_ID)
                    self.session = session
                    self.acked = len(session.events)
                    self.emit(
                        {
                            "k": "opened",
                            "created": self.create,
                            "events": [event_to_json(e) for e in session.events],
                        }
                    )
                    session.subscribe(self._observe)
                    self._watch_dispatch_flush(session)
                    self.ops.armed = True
                    while True:
                        async with self._open_agent(session) as agent:
                            self.agent = agent
                            agent.subscribe(self._on_runtime)
                            self.renewed = True
                            if not started:
                                started = True
                                task_status.started()
                            await self.stop.wait()
                            if not self.renewing:
                                self.emit({"k": "act", "op": "shutdown", "phase": "begin"})
                                break
                            second = self.second = await self._second_agent(session)
                            self.emit(
                                {"k": "act", "op": "new_agent", "phase": "begin", "second": second}
                            )
                        # K24: the agent left; the session is still the caller's, flushed and
                        # open, and a new agent runs on it.
                        self.renewing = False
                        self.stop = trio.Event()
                        self.emit(
                            {
                                "k": "act",
                                "op": "new_agent",
                                "phase": "end",
                                "closed": session.closed,
                            }
                        )
                if not self.dead:
                    self.acked = len(session.events)
                    self.closed_ok = True
        except Exception as exc:
            if not started:
                raise
            if not self.dead:
                # The one failure a group stands for: the report names the rule it broke.
                leaf: BaseException = exc
                while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                    leaf = leaf.exceptions[0]
                self.failure = f"{type(leaf).__name__}: {leaf}"
                self.emit({"k": "failure", "text": self.failure})
        finally:
            self.done.set()

    def _open_agent(self, session: Session) -> AbstractAsyncContextManager[Agent]:
        return open_agent(
            session,
            model=PlanModel(self, self.plan),
            tools=[WatchedSleep(self), JobTool(self)],
            approver=GateApprover(self),
            hooks=SeamHooks(self),
        )

    async def _second_agent(self, session: Session) -> str | None:
        """Open a second agent on ``session`` while this world's agent still runs on it: K24
        refuses it (``RuntimeError``; ``ValueError`` when a turn is open). The refusal as one
        line, or ``None`` if the second agent opened (it is left at once)."""
        try:
            async with self._open_agent(session):
                pass
        except (RuntimeError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def renew(self) -> None:
        """Leave the running agent and open a new one on the same session (``new_agent``)."""
        self.renewing = True
        self.renewed = False
        self.stop.set()

    async def teardown(self) -> None:
        """Discard this world (after a crash): its file no longer matters, so let every
        write through, cancel everything, and wait until it is gone.

        A port's bug may keep work alive through a cancel (a tool body the turn's cancel
        does not reach, say); the driver has already reported that, and the teardown must
        not hang on it: every waiting job and approval is answered, and while the world
        winds down virtual time runs whenever everything has been blocked for
        :data:`_TEARDOWN_JUMP` (its sleeps, the shutdown's bound), then stands still again
        for the next world."""
        self.dead = True
        self.ops.open_all()
        self.scope.cancel()
        for gate in (*self.jobs, *self.approvals):
            gate.decision = gate.decision or "fail"
            gate.event.set()
        clock = trio.lowlevel.current_clock()
        if not isinstance(clock, trio.testing.MockClock):
            await self.done.wait()
            return
        still = clock.autojump_threshold
        clock.autojump_threshold = _TEARDOWN_JUMP
        try:
            await self.done.wait()
        finally:
            clock.autojump_threshold = still

    # -- settling ------------------------------------------------------------------------------

    async def settle(self) -> None:
        """Run the world until it is quiescent (see the module docstring)."""
        limiter = trio.to_thread.current_default_thread_limiter()
        spins = 0
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if self.dead:
                return
            if self.ops.parked:
                if self.trap is not None and self.trap["point"] == "flush":
                    self.reach("flush")
                    continue
                if self.pending_cancel is not None:
                    self.at_seam()  # a deferred cancel lands while the flush is in flight
                    continue
                version = self.ops.version
                self.ops.release()
                await self._thread_progress(version)
                continue
            if limiter.borrowed_tokens:
                if self.ops.busy or spins > 1000:
                    await self._thread_progress(self.ops.version)
                else:
                    # The thread is done; its result is on its way into the run loop. It
                    # needs the GIL to post it, which checkpoints in a loop would hold for
                    # the interpreter's whole switch interval: a trip through a thread of
                    # our own lets the run loop block in epoll instead, the GIL released.
                    spins += 1
                    await trio.to_thread.run_sync(_nothing, limiter=self._poll_limiter)
                continue
            spins = 0
            if self.pending_cancel is not None:
                self.at_seam()
                continue
            return

    async def _thread_progress(self, version: int) -> None:
        await trio.to_thread.run_sync(
            self.ops.wait_change, version, _POLL, limiter=self._poll_limiter
        )

    # -- traps ---------------------------------------------------------------------------------

    def arm(self, point: str, action: Mapping[str, Any]) -> None:
        self.trap = {"point": point, "action": dict(action)}

    def reach(self, point: str) -> None:
        """A named point is reached: fire the armed trap if it waits for this point."""
        trap = self.trap
        if trap is None or trap["point"] != point or self.dead:
            return
        self.trap = None
        action = trap["action"]
        events = len(self.session.events) if self.session is not None else 0
        self.emit({"k": "fire", "point": point, "action": action, "events": events})
        if action["kind"] == "crash":
            self.crash(after_write=bool(action.get("after_write")) and point == "flush")
        elif action["kind"] == "disk":
            # The next batches fail: at tool/call:after the dispatch flush's (K17), at
            # turn/end:after the checkpoint's (K13), at flush the batch about to be written.
            self.ops.fail_next += int(action["fail"])
        elif point in _CANCEL_AT_ONCE:
            # A runtime listener, a seam, the quiescent I/O gate or the dispatch flush's return:
            # cancelling here is allowed. Inside an observer too: a clear refused there is
            # K5's half-done cancel, which cancel() journals.
            self.cancel(action["cause"], bool(action["keep_inbox"]), where=point)
        else:
            # Inside a session observer: cancel() appends, so it waits for the next seam.
            self.pending_cancel = {**action, "point": point}

    def at_seam(self) -> None:
        """Called at every harness seam: issue a deferred cancel here."""
        pending = self.pending_cancel
        if pending is not None and not self.dead:
            self.pending_cancel = None
            self.cancel(pending["cause"], bool(pending["keep_inbox"]), where=pending["point"])

    def crash(self, *, after_write: bool = False) -> None:
        """Crash now: freeze the durable bytes (plus, with ``after_write``, the parked batch as
        if its write had completed) and stop reporting anything."""
        if self.dead:
            return
        data = self.log_path.read_bytes()
        if after_write and self.ops.parked_will_write:
            data += self.ops.parked_data
        self.snapshot = data
        self.dead = True
        self._on_crash(self, after_write)

    # -- actions -------------------------------------------------------------------------------

    def cancel(self, cause: str, keep_inbox: bool, *, where: str) -> bool:
        agent = self._require_agent()
        controller = agent.controller
        turn = controller.turn if controller is not None else None
        self.emit(
            {
                "k": "act",
                "op": "cancel",
                "phase": "begin",
                "cause": cause,
                "keep_inbox": keep_inbox,
                "where": where,
            }
        )
        live = controller is not None and not controller.cancel_called
        try:
            hit = agent.cancel(cancel_cause(cause), keep_inbox=keep_inbox)
        except Exception as exc:
            # K5: clearing the inbox from inside a session observer is refused (an observer
            # may not append); the live controller is cancelled all the same, and the error
            # propagates -- to here, which journals it. Whether this call cancelled the
            # controller is read from the controller itself, as the call never returned.
            hit = live and controller is not None and controller.cancel_called
            self.emit(
                {
                    "k": "act",
                    "op": "cancel",
                    "phase": "end",
                    "hit": hit,
                    "turn": turn,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
            return hit
        self.emit({"k": "act", "op": "cancel", "phase": "end", "hit": hit, "turn": turn})
        return hit

    def send(self, op: str, text: str) -> str:
        agent = self._require_agent()
        self.emit({"k": "act", "op": op, "phase": "begin", "text": text})
        message_id: str = getattr(agent, op)(text)
        self.emit({"k": "act", "op": op, "phase": "end", "id": message_id})
        return message_id

    def decide(self, kind: str, decision: str) -> str:
        gates = self.jobs if kind == "tool" else self.approvals
        if not gates:
            raise RuntimeError(f"no {kind} is waiting for a decision")
        gate = gates.pop(0)
        gate.decision = decision
        gate.event.set()
        self.emit(
            {"k": "act", "op": kind, "phase": "end", "call": gate.call_id, "decision": decision}
        )
        return gate.call_id

    async def flush_task(self) -> None:
        """A harness flush, run as a background task (its batch waits for settle)."""
        session = self.session
        assert session is not None
        # A flush makes durable what was appended before it began; events appended while it
        # is in flight (a held cancel's turn unwinding) are not covered by it.
        covered = len(session.events)
        try:
            await self._flush()
        except OSError as exc:
            self.emit({"k": "act", "op": "flush", "phase": "end", "ok": False, "error": str(exc)})
            return
        if not self.dead:
            self.acked = max(self.acked, covered)
            self.emit({"k": "act", "op": "flush", "phase": "end", "ok": True})

    def _require_agent(self) -> Agent:
        if self.agent is None or self.agent.closed:
            raise RuntimeError("no agent is running")
        return self.agent

    # -- observing -----------------------------------------------------------------------------

    def body_started(self, turn: int, call_id: str) -> None:
        self.bodies[call_id] = turn
        seq = self._call_seq.get(call_id)
        if seq is not None:
            self.acked = max(self.acked, seq + 1)  # its tool/call flush returned (K17)
        self.at_seam()
        self.reach("tool:running")

    def body_stopped(self, call_id: str) -> None:
        self.bodies.pop(call_id, None)

    def _watch_dispatch_flush(self, session: Session) -> None:
        """Reach ``tool/call:flushed`` where the flush after a ``tool/call`` (K17) has written
        the marker and returns, before the runtime resumes: a cancel there lands inside the
        flush's await, after its write. The session's ``flush`` is wrapped on this instance
        (the runtime awaits ``session.flush()``); the harness's own ``flush`` request keeps
        the original."""
        flush = self._flush = session.flush
        calls = self._call_seq

        async def flush_then_reach() -> None:
            dispatch = len(session.events) - 1 in calls.values()  # the last event: a tool/call
            await flush()
            if dispatch:
                self.reach("tool/call:flushed")

        session.flush = flush_then_reach  # type: ignore[method-assign]

    def _observe(self, event: Event) -> None:
        if self.dead:
            return
        self.emit({"k": "event", "event": event_to_json(event)})
        kind = event.type
        data = event.data
        if kind == "turn/start":
            self.reach("turn/start:after")
        elif kind == "agent/inbox/spliced":
            if splice_kind(data) is SpliceKind.CLAIM:
                self.reach("claim:after")
        elif kind == "step/start":
            self.reach("step/start:after")
        elif kind == "assistant/chunk":
            key = (data["turn"], data["step"])
            if data["chunk"]["type"] == "text-delta" and key not in self._chunked:
                self._chunked.add(key)
                self.reach("stream:mid")
            elif data["chunk"]["type"] == "finish":
                self.reach("finish:observer")
        elif kind == "assistant/message":
            self.reach("assistant/message:observer")
        elif kind == "tool/call":
            self._call_seq[data["callId"]] = event.seq
            self.reach("tool/call:after")
        elif kind == "tool/result":
            if data["callId"] in self.bodies:
                self.violation(
                    f"seq {event.seq}: tool/result of {data['callId']} while its body runs"
                )
        elif kind == "step/end":
            if (data["turn"], data["step"]) in self.streams:
                self.violation(f"seq {event.seq}: step/end while the step's model stream is open")
            self.reach("step/end:after")
        elif kind == "turn/end":
            turn = data["turn"]
            running = sorted(c for c, t in self.bodies.items() if t == turn)
            if running:
                self.violation(f"seq {event.seq}: turn/end of turn {turn} while {running} run")
            if any(t == turn for t, _ in self.streams):
                self.violation(f"seq {event.seq}: turn/end of turn {turn} with a model stream open")
            self.reach("turn/end:after")
            self.reach("turn/end:observer")

    def _on_runtime(self, event: RuntimeEvent) -> None:
        if self.dead:
            return
        session = self.session
        assert session is not None
        n = len(session.events)
        if isinstance(event, StatusChanged):
            self.emit({"k": "rt", "type": "status", "status": event.status})
            if event.status == "idle":
                self._checkpointed()
            else:
                self.reach("turn/start:before")
        elif isinstance(event, TurnStarted):
            self._checkpointed()
            self.emit({"k": "rt", "type": "turn-started", "turn": event.turn})
        elif isinstance(event, TurnEnded):
            outcome = event.outcome
            self._checkpoint_at = n
            self._checkpoint_failed = False
            self.emit(
                {
                    "k": "rt",
                    "type": "turn-ended",
                    "turn": outcome.turn,
                    "reason": outcome.reason,
                    "cause": None if outcome.cause is None else outcome.cause.kind,
                }
            )
        elif isinstance(event, TurnPrevented):
            self._checkpointed()
            self.emit(
                {"k": "rt", "type": "prevented", "cause": event.cause.kind, "parked": event.parked}
            )
        elif isinstance(event, InboxDropped):
            self.emit(
                {
                    "k": "rt",
                    "type": "dropped",
                    "target": event.target,
                    "ids": [m["id"] for m in event.messages],
                    "cause": event.cause.kind,
                }
            )
        elif isinstance(event, AgentError):
            self._checkpoint_failed = True
            self.emit({"k": "rt", "type": "agent-error", "message": event.message})

    def _checkpointed(self) -> None:
        """The flush after the last ``turn/end`` returned (K13), unless it failed."""
        if self._checkpoint_at is not None and not self._checkpoint_failed:
            self.acked = max(self.acked, self._checkpoint_at)
        self._checkpoint_at = None

    # -- state ---------------------------------------------------------------------------------

    def where(self) -> str:
        """A label for the point the world is parked at (for coverage figures)."""
        agent = self.agent
        if agent is None or agent.closed:
            return "closed"
        if agent.status == "idle":
            return "idle"
        if self.approvals:
            return "approval:waiting"
        if self.bodies:
            return "tool:running"
        if self.streams:
            turn, step = max(self.streams)
            return "stream:mid" if (turn, step) in self._chunked else "stream:before-chunk"
        return "running"

    def state(self) -> dict[str, Any]:
        agent = self.agent
        session = self.session
        controller = agent.controller if agent is not None else None
        inbox = session.inbox if session is not None else None
        return {
            "alive": not self.done.is_set(),
            "closed_ok": self.closed_ok,
            "status": "closed" if agent is None or agent.closed else agent.status,
            "controller": None
            if controller is None
            else {"turn": controller.turn, "cancelled": controller.cancel_called},
            "where": self.where(),
            "jobs": len(self.jobs),
            "approvals": len(self.approvals),
            "inbox": {
                "next-turn": [m["id"] for m in inbox.next_turn] if inbox else [],
                "next-step": [m["id"] for m in inbox.next_step] if inbox else [],
            },
            "events": len(session.events) if session is not None else 0,
            "acked": self.acked,
            "disk_failures": self.ops.fail_next,
            "armed": self.trap,
            "violations": list(self.violations),
            "failure": self.failure,
        }
