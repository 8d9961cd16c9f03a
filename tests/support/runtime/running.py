"""``running_turn``: the opening most cancel tests share, an agent whose first turn is running
and held at a known point (the model has streamed "x" and hangs, or a tool call has started)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import attrs

from support.runtime.fakes import FakeModel, GatedTool, Wait, call, finish, text
from trio_agent.runtime import Agent, RuntimeEvent, open_agent
from trio_agent.store import Session


def hanging() -> tuple[FakeModel, Wait]:
    """A model whose first call streams "x" and hangs; later calls answer "ok"."""
    hold = Wait()
    return FakeModel([text("x"), hold, finish()]), hold


def record(agent: Agent) -> list[RuntimeEvent]:
    """Every runtime event the agent emits from now on, in order."""
    seen: list[RuntimeEvent] = []
    agent.subscribe(seen.append)
    return seen


@attrs.define
class Running:
    session: Session
    agent: Agent
    model: FakeModel
    #: The runtime events since before the first followup.
    seen: list[RuntimeEvent]
    #: Where the model hangs (``tool`` is None), or the tool whose call ``c1`` has started.
    hold: Wait | None
    tool: GatedTool | None


@contextlib.asynccontextmanager
async def running_turn(*followups: str, tool: GatedTool | None = None) -> AsyncIterator[Running]:
    """An agent over an in-memory session, its runtime events recorded, sent ``followups``
    (default ``"first"``) and held inside turn 1: the model hangs after streaming "x", or,
    given ``tool``, the model calls it (``c1``) and the call has started. Leaving the block
    leaves ``open_agent`` (disposal)."""
    session = Session.in_memory()
    hold: Wait | None = None
    if tool is None:
        model, hold = hanging()
    else:
        model = FakeModel([call("c1", tool.name), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[tool] if tool else []) as agent:
        seen = record(agent)
        for message in followups or ("first",):
            agent.followup(message)
        await (hold.reached if hold is not None else tool.reached("c1")).wait()  # type: ignore[union-attr]
        yield Running(session, agent, model, seen, hold, tool)
