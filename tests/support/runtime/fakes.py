"""Controllable fakes for the runtime tests: every seam can be held at a known point.

Nothing here depends on timing: a fake *reaches* a point (sets a ``trio.Event`` the test
waits for) and then *waits* on a gate the test opens, so a cancel lands exactly where the
test says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from trio_agent.log.events import Event
from trio_agent.log.splice import SpliceKind, splice_kind
from trio_agent.models.base import ModelRequest, StepContext
from trio_agent.runtime import Agent, Hooks, Reject, TurnContext
from trio_agent.store import Session
from trio_agent.tools.base import ToolCall, ToolContext, ToolOutcome

# -- log shapes ------------------------------------------------------------------------------


def shape(events: Sequence[Event]) -> list[str]:
    """A compact, exact description of a log: one string per event."""
    out = []
    for e in events:
        d = e.data
        t = e.type
        if t == "turn/end":
            kind = d["reason"]["kind"]
            err = d["reason"].get("error")
            out.append(f"turn/end {kind}" + (f" {err['code']}" if err else ""))
        elif t == "agent/inbox/spliced":
            kind = splice_kind(d)
            if kind is SpliceKind.INSERT:
                out.append(f"insert {d['target']}")
            else:  # "drop ..." or "claim ..."
                out.append(f"{kind.value} {d['target']} {d['removedCount']}")
        elif t == "assistant/chunk":
            out.append(f"chunk {d['chunk']['type']}")
        elif t == "assistant/message":
            blocks = [b["type"] for b in d["message"]["content"]]
            tag = " interrupted" if d.get("interrupted") else ""
            out.append(f"assistant/message{tag} {'+'.join(blocks) or 'empty'}")
        elif t == "approval/decided":
            out.append(f"approval/decided {d['outcome']}")
        elif t == "tool/result":
            err = d.get("error")
            out.append(f"tool/result {d['callId']} {err['code'] if err else 'ok'}")
        elif t == "tool/call":
            out.append(f"tool/call {d['callId']}")
        else:
            out.append(t)
    return out


def turn_ends(events: Sequence[Event]) -> list[str]:
    return [e.data["reason"]["kind"] for e in events if e.type == "turn/end"]


def user_texts(events: Sequence[Event]) -> list[str]:
    return [e.data["message"]["text"] for e in events if e.type == "user/message"]


# -- model -----------------------------------------------------------------------------------


@attrs.define
class Wait:
    """A point in a fake stream: set ``reached``, then wait for ``gate``."""

    reached: trio.Event = attrs.Factory(trio.Event)
    gate: trio.Event = attrs.Factory(trio.Event)


def text(t: str) -> dict[str, Any]:
    return {"type": "text-delta", "text": t}


def call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool-call", "id": cid, "name": name, "arguments": arguments}


def finish(reason: str = "stop") -> dict[str, Any]:
    return {"type": "finish", "reason": reason}


class FakeModel:
    """Plays one list of items per call: chunk dicts are yielded, :class:`Wait` items block.
    An exception instance is raised. When the calls run out, it answers ``"ok"``."""

    def __init__(self, *calls: Sequence[Any]) -> None:
        self._calls = list(calls)
        self.requests: list[ModelRequest] = []
        self.contexts: list[StepContext] = []
        self.cancelled_at: list[int] = []

    async def stream(
        self, request: ModelRequest, ctx: StepContext
    ) -> AsyncIterator[Mapping[str, Any]]:
        self.requests.append(request)
        self.contexts.append(ctx)
        items = self._calls.pop(0) if self._calls else [text("ok"), finish()]
        for item in items:
            if isinstance(item, Wait):
                item.reached.set()
                await item.gate.wait()
            elif isinstance(item, BaseException):
                raise item
            else:
                await trio.lowlevel.checkpoint()
                yield item


# -- tools -----------------------------------------------------------------------------------


class GatedTool:
    """A tool whose body sets ``started[call_id]`` and waits on ``release`` (one gate per
    call id, created on demand). It records the order bodies started and stopped."""

    def __init__(self, name: str = "work", *, parallel: bool = True) -> None:
        self.name = name
        self.parallel = parallel
        self.started: dict[str, trio.Event] = {}
        self.release: dict[str, trio.Event] = {}
        self.log: list[str] = []
        self.contexts: list[ToolContext] = []
        self.fail_on_cancel = False
        self.raise_error: BaseException | None = None

    def gate(self, call_id: str) -> trio.Event:
        return self.release.setdefault(call_id, trio.Event())

    def reached(self, call_id: str) -> trio.Event:
        return self.started.setdefault(call_id, trio.Event())

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        self.contexts.append(ctx)
        self.log.append(f"start {call.id}")
        self.reached(call.id).set()
        try:
            await self.gate(call.id).wait()
        except BaseException:
            self.log.append(f"cancelled {call.id}")
            ctx.abort_detail("gated body saw the cancel")
            if self.fail_on_cancel:
                raise ValueError("broke while stopping") from None
            raise
        finally:
            self.log.append(f"stopped {call.id}")
        if self.raise_error is not None:
            raise self.raise_error
        ctx.output("stdout", f"out {call.id}")
        return ToolOutcome(content=f"done {call.id}")


class RecordingApprover:
    """Allows or refuses per call id; ``hold`` makes ``approve`` wait on a gate."""

    def __init__(self, refuse: Sequence[str] = (), *, hold: bool = False) -> None:
        self.refuse = set(refuse)
        self.hold = hold
        self.reached = trio.Event()
        self.gate = trio.Event()
        self.contexts: list[TurnContext] = []

    async def approve(self, call: ToolCall, ctx: TurnContext) -> bool:
        self.contexts.append(ctx)
        if self.hold:
            self.reached.set()
            await self.gate.wait()
        await trio.lowlevel.checkpoint()
        return call.id not in self.refuse


# -- hooks -----------------------------------------------------------------------------------


class SeamHooks(Hooks):
    """Hooks that can hold at ``pre_step``, ``assemble_prompt`` or ``turn_stopping``.

    ``hold`` names the seam and ``hold_step`` the step at which it holds (default: any).
    ``pre_step_result`` is what pre_step returns (a callable of the batch, or a value).
    """

    def __init__(self, hold: str | None = None, *, hold_step: int | None = None) -> None:
        self.hold = hold
        self.hold_step = hold_step
        self.reached = trio.Event()
        self.gate = trio.Event()
        self.contexts: dict[str, list[TurnContext]] = {
            "pre_step": [],
            "assemble_prompt": [],
            "turn_stopping": [],
        }
        self.pre_step_result: Any = None
        self.on_turn_stopping: Any = None

    async def _maybe_hold(self, seam: str, ctx: TurnContext) -> None:
        self.contexts[seam].append(ctx)
        if self.hold == seam and (self.hold_step is None or self.hold_step == ctx.step):
            self.reached.set()
            await self.gate.wait()

    async def pre_step(
        self, ctx: TurnContext, messages: Sequence[Mapping[str, Any]]
    ) -> Sequence[Mapping[str, Any]] | Reject | None:
        await self._maybe_hold("pre_step", ctx)
        result = self.pre_step_result
        decided: Sequence[Mapping[str, Any]] | Reject | None
        decided = result(ctx, messages) if callable(result) else result
        return decided

    async def assemble_prompt(self, ctx: TurnContext) -> str:
        await self._maybe_hold("assemble_prompt", ctx)
        return "system prompt"

    async def turn_stopping(self, ctx: TurnContext) -> None:
        await self._maybe_hold("turn_stopping", ctx)
        if self.on_turn_stopping is not None:
            self.on_turn_stopping(ctx)


def steering_once(agent: Callable[[], Agent], text: str) -> SeamHooks:
    """Hooks that, the first time a turn would stop, steer ``text`` into it (and never again).

    ``agent`` is called only then, so it may name an agent opened after the hooks are made:
    ``steering_once(lambda: agent, "continue")`` before ``open_agent(..., hooks=hooks)``.
    """
    hooks = SeamHooks()
    steered = False

    def steer_once(ctx: TurnContext) -> None:
        nonlocal steered
        if not steered:
            steered = True
            agent().steer(text)

    hooks.on_turn_stopping = steer_once
    return hooks


# -- session ---------------------------------------------------------------------------------


class GatedSession(Session):
    """An in-memory session whose ``flush`` can be held or made to fail.

    ``flushes`` records ``len(events)`` at each flush call, so a test can tell what was in the
    log when the loop asked for durability.
    """

    def __init__(self) -> None:
        super().__init__("gated")
        self.flushes: list[int] = []
        self.hold_at: int | None = None  # hold the n-th flush (0-based)
        self.fail_at: set[int] = set()
        self.reached = trio.Event()
        self.gate = trio.Event()

    async def flush(self) -> None:
        n = len(self.flushes)
        self.flushes.append(len(self.events))
        if n == self.hold_at:
            self.reached.set()
            await self.gate.wait()
        if n in self.fail_at:
            await trio.lowlevel.checkpoint()
            raise OSError(5, "injected write failure")
        await super().flush()
