"""The harness seams: where a world's agent waits for, or reports to, the harness.

Each is built from one of the runtime's own extension points (a model, hooks, an approver,
tools), and each calls :meth:`SeamHost.at_seam` where a deferred cancel may land:

* :class:`PlanModel`: the real :class:`~trio_agent.models.ScriptedModel` playing the plan,
  with its open streams tracked and a seam at every chunk read;
* :class:`SeamHooks`: default hook behaviour, every hook a seam and a checkpoint;
* :class:`GateApprover`: allows every call, except ``{"ask": true}`` calls, which wait at a
  :class:`Gate` for the harness's ``approval`` decision;
* :class:`JobTool` (``job``): writes one line, then waits at a :class:`Gate` for ``tool``;
* :class:`WatchedSleep`: the real :class:`~trio_agent.tools.builtin.SleepTool`, its body
  reported while it runs.

The host they report to is a :class:`~trio_agent.testing.world.World` (:class:`SeamHost`
names what they use of it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, cast

import trio

from ..models.base import ModelRequest, StepContext
from ..models.scripted import ScriptedModel
from ..runtime import CancelCause, Hooks, Reject, TurnContext
from ..tools.base import ToolCall, ToolContext, ToolOutcome
from ..tools.builtin import SleepTool
from .plan import CHUNK_DELAY, plan_entry

__all__ = [
    "Gate",
    "GateApprover",
    "JobTool",
    "PlanModel",
    "SeamHooks",
    "SeamHost",
    "WatchedSleep",
    "cancel_cause",
]


class SeamHost(Protocol):
    """What the seams use of their world."""

    @property
    def streams(self) -> set[tuple[int, int]]: ...
    @property
    def jobs(self) -> list[Gate]: ...
    @property
    def approvals(self) -> list[Gate]: ...
    def at_seam(self) -> None: ...
    def emit(self, entry: dict[str, Any]) -> None: ...
    def reach(self, point: str) -> None: ...
    def body_started(self, turn: int, call_id: str) -> None: ...
    def body_stopped(self, call_id: str) -> None: ...


class Gate:
    """A seam waiting for the harness: ``decision`` is set, then ``event``."""

    __slots__ = ("call_id", "decision", "event", "turn")

    def __init__(self, turn: int, call_id: str) -> None:
        self.turn = turn
        self.call_id = call_id
        self.decision = ""
        self.event = trio.Event()


class PlanModel:
    """The real :class:`ScriptedModel` playing ``plan_entry(turn, step)``, wrapped so the world
    knows which streams are open and can land a deferred cancel at each chunk read."""

    def __init__(self, world: SeamHost, plan: Sequence[str]) -> None:
        self._world = world
        self._plan = list(plan)

    def stream(self, request: ModelRequest, ctx: StepContext) -> AsyncIterator[Mapping[str, Any]]:
        return self._stream(request, ctx)

    async def _stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]:
        entry = plan_entry(self._plan, request.turn, request.step)
        inner = cast(
            AsyncGenerator[Mapping[str, Any], None],
            ScriptedModel([entry], chunk_delay=CHUNK_DELAY).stream(request, ctx),
        )
        key = (request.turn, request.step)
        self._world.streams.add(key)
        try:
            async with contextlib.aclosing(inner):
                while True:
                    self._world.at_seam()
                    try:
                        chunk = await inner.__anext__()
                    except StopAsyncIteration:
                        return
                    yield chunk
        finally:
            self._world.streams.discard(key)


class SeamHooks(Hooks):
    """Default behaviour, but every hook is a seam (deferred cancels land here) and a
    checkpoint, so a cancel issued at the seam is delivered inside the hook."""

    def __init__(self, world: SeamHost) -> None:
        self._world = world

    async def pre_step(
        self, ctx: TurnContext, messages: Sequence[Mapping[str, Any]]
    ) -> Sequence[Mapping[str, Any]] | Reject | None:
        self._entered("pre_step", ctx)
        await trio.lowlevel.checkpoint()
        return None

    async def assemble_prompt(self, ctx: TurnContext) -> str:
        self._entered("assemble_prompt", ctx)
        await trio.lowlevel.checkpoint()
        return "harness"

    async def turn_stopping(self, ctx: TurnContext) -> None:
        self._entered("turn_stopping", ctx)
        await trio.lowlevel.checkpoint()

    def _entered(self, name: str, ctx: TurnContext) -> None:
        """Journal the hook (K10 is checked from it), then act as a seam."""
        self._world.emit({"k": "hook", "name": name, "turn": ctx.turn, "step": ctx.step})
        self._world.at_seam()


class GateApprover:
    """Allows every call at once, except calls with ``{"ask": true}``, which wait for the
    harness (``approval`` request)."""

    def __init__(self, world: SeamHost) -> None:
        self._world = world

    async def approve(self, call: ToolCall, ctx: TurnContext) -> bool:
        world = self._world
        world.at_seam()
        if not call.arguments.get("ask"):
            await trio.lowlevel.checkpoint()
            return True
        gate = Gate(ctx.turn, call.id)
        world.approvals.append(gate)
        try:
            world.reach("approval:waiting")
            await gate.event.wait()
        finally:
            if gate in world.approvals:
                world.approvals.remove(gate)
        return gate.decision == "allow"


class JobTool:
    """``job``: writes one line, then waits until the harness finishes or fails it."""

    name = "job"
    parallel = False

    def __init__(self, world: SeamHost) -> None:
        self._world = world

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        world = self._world
        gate = Gate(ctx.turn, call.id)
        world.body_started(ctx.turn, call.id)
        world.jobs.append(gate)
        try:
            ctx.output("stdout", f"job {call.id} started\n")
            await gate.event.wait()
        finally:
            if gate in world.jobs:
                world.jobs.remove(gate)
            world.body_stopped(call.id)
        if gate.decision == "fail":
            raise RuntimeError(f"job {call.id} failed")
        return ToolOutcome(content=f"job {call.id} done")


class WatchedSleep:
    """The real :class:`SleepTool`, with the world told when its body runs."""

    name = "sleep"
    parallel = True

    def __init__(self, world: SeamHost) -> None:
        self._world = world
        self._inner = SleepTool()

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        self._world.body_started(ctx.turn, call.id)
        try:
            return await self._inner.run(call, ctx)
        finally:
            self._world.body_stopped(call.id)


def cancel_cause(name: str) -> CancelCause:
    if name == "user":
        return CancelCause.user()
    if name == "parent":
        return CancelCause.parent()
    raise ValueError(f"unknown cancel cause {name!r} (user or parent)")
