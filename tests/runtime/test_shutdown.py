"""Leaving ``open_agent``: graceful shutdown keeps queued work, makes everything durable, and
leaves the session to its owner (spec/cancel.md K22-K24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from support.runtime.fakes import (
    FakeModel,
    GatedTool,
    Wait,
    call,
    finish,
    shape,
    text,
    turn_ends,
    user_texts,
)

from trio_agent.log import check_events, fold_consumed_work
from trio_agent.models import ScriptedModel
from trio_agent.runtime import CancelCause, RuntimeEvent, TurnEnded, TurnPrevented, open_agent
from trio_agent.store import Session
from trio_agent.store.jsonl import JsonlStore
from trio_agent.tools.base import ToolOutcome


def disk_types(path: Path) -> list[str]:
    lines = path.read_bytes().splitlines()
    return [json.loads(line)["type"] for line in lines[1:]]


async def test_shutdown_mid_turn_keeps_queued_work_and_reopening_finds_it_parked(
    tmp_path: Path,
) -> None:
    tool = GatedTool()
    model = FakeModel([call("c1", "work"), finish("tool-calls")])
    seen: list[RuntimeEvent] = []
    async with JsonlStore(tmp_path) as store:
        session = await store.create("s1")
        async with open_agent(session, model=model, tools=[tool]) as agent:
            agent.subscribe(seen.append)
            agent.followup("run the long tool")
            await tool.reached("c1").wait()
            agent.followup("queued 1")
            agent.steer("queued 2")
            agent.inject("queued 3")
        # Leaving the block: the turn ended aborted (cause disposed), queued work kept, and
        # everything is on disk already, before the store closes the session.
        assert not session.closed
        on_disk = disk_types(store.path_of("s1"))
        assert on_disk == [e.type for e in session.events]
        assert on_disk[-1] == "turn/end"
    assert shape(session.events)[-4:] == [
        "insert next-step",
        "tool/result c1 ABORTED",
        "step/end",
        "turn/end aborted",
    ]
    (ended,) = [e for e in seen if isinstance(e, TurnEnded)]
    assert ended.outcome.cause == CancelCause.disposed()
    assert fold_consumed_work(session.events).dropped_unrun is False

    async with JsonlStore(tmp_path) as store:
        reopened = await store.open("s1")
        check_events(reopened.events)
        assert reopened.open_turn is None
        assert [m["text"] for m in reopened.inbox.next_turn] == ["queued 1"]
        assert [m["text"] for m in reopened.inbox.next_step] == ["queued 2", "queued 3"]
        before = len(reopened.events)
        async with open_agent(reopened, model=ScriptedModel()) as agent:
            await trio.testing.wait_all_tasks_blocked()
            assert agent.status == "idle"  # parked: nothing runs until a wake
            assert len(reopened.events) == before
            agent.followup("new")
            await agent.wait_idle()
        after = reopened.events[before:]
    # The parked items run first, in FIFO order: next-step items join the first claim.
    assert user_texts(after) == ["queued 2", "queued 3", "queued 1", "new"]
    assert turn_ends(after) == ["completed", "completed"]


async def test_tool_call_is_on_disk_before_the_body_runs(tmp_path: Path) -> None:
    # K17 against a real JsonlStore: the body reads the file and finds its own tool/call.
    seen_on_disk: list[list[str]] = []

    class Probe:
        name = "probe"
        parallel = True

        def __init__(self, path: Path) -> None:
            self.path = path

        async def run(self, call: Any, ctx: Any) -> Any:
            seen_on_disk.append(disk_types(self.path))
            await trio.lowlevel.checkpoint()
            return ToolOutcome("ok")

    async with JsonlStore(tmp_path) as store:
        session = await store.create("s1")
        model = FakeModel([call("c1", "probe"), finish("tool-calls")])
        async with open_agent(session, model=model, tools=[Probe(store.path_of("s1"))]) as agent:
            agent.followup("go")
            await agent.wait_idle()
            # K13: once the agent reports idle, turn/end is on disk.
            assert disk_types(store.path_of("s1"))[-1] == "turn/end"
    assert seen_on_disk[0][-1] == "tool/call"


async def test_shutdown_while_idle_writes_nothing() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.inject("staged")
    assert shape(session.events) == ["insert next-step"]


async def test_shutdown_before_the_woken_turn_starts_parks_it() -> None:
    session = Session.in_memory()
    seen: list[RuntimeEvent] = []
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.subscribe(seen.append)
        agent.followup("go")
    assert shape(session.events) == ["insert next-turn"]
    assert [e for e in seen if isinstance(e, TurnPrevented)] == [
        TurnPrevented(CancelCause.disposed(), 1)
    ]


async def test_wakes_during_shutdown_are_parked() -> None:
    # K22: once shutdown began, no wake starts or latches a run.
    session = Session.in_memory()
    hold = Wait()
    model = FakeModel([text("x"), hold, finish()])
    async with open_agent(session, model=model) as agent:

        def on(ev: RuntimeEvent) -> None:
            if isinstance(ev, TurnEnded):
                agent.followup("sent while shutting down")

        agent.subscribe(on)
        agent.followup("first")
        await hold.reached.wait()
    assert turn_ends(session.events) == ["aborted"]
    assert [m["text"] for m in session.inbox.next_turn] == ["sent while shutting down"]
    assert len(model.requests) == 1


async def test_an_exception_in_the_block_propagates_unwrapped_after_shutdown() -> None:
    session = Session.in_memory()
    tool = GatedTool()
    model = FakeModel([call("c1", "work"), finish("tool-calls")])
    with pytest.raises(KeyError, match="user code"):
        async with open_agent(session, model=model, tools=[tool]) as agent:
            agent.followup("go")
            await tool.reached("c1").wait()
            raise KeyError("user code")
    assert turn_ends(session.events) == ["aborted"]
    assert agent.closed


async def test_shutdown_tears_down_a_turn_that_ignores_the_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A tool that shields itself cannot hold shutdown forever: after shutdown_timeout the
    # agent's nursery is cancelled; the turn still ends aborted with a written turn/end.
    class Stubborn:
        name = "stubborn"
        parallel = True

        async def run(self, call: Any, ctx: Any) -> Any:
            with trio.CancelScope(shield=True):
                await trio.sleep(100)
            await trio.sleep_forever()

    session = Session.in_memory()
    model = FakeModel([call("c1", "stubborn"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[Stubborn()], shutdown_timeout=5) as agent:
        agent.followup("go")
        await trio.testing.wait_all_tasks_blocked()
    assert shape(session.events)[-3:] == ["tool/result c1 ABORTED", "step/end", "turn/end aborted"]
    assert agent.last_outcome is not None and agent.last_outcome.cause == CancelCause.disposed()


async def test_the_session_is_not_closed_and_can_host_a_new_agent() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.followup("one")
        await agent.wait_idle()
    assert not session.closed
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.followup("two")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["completed", "completed"]
    assert [e.data["turn"] for e in session.events if e.type == "turn/start"] == [1, 2]


async def test_one_agent_per_session_and_no_open_turn() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()):
        with pytest.raises(RuntimeError, match="already has an agent"):
            async with open_agent(session, model=ScriptedModel()):
                pass  # pragma: no cover
    session.append("turn/start", {"turn": 1})
    with pytest.raises(ValueError, match="turn 1 open"):
        async with open_agent(session, model=ScriptedModel()):
            pass  # pragma: no cover
    closed = Session.in_memory()
    await closed.aclose()
    with pytest.raises(ValueError, match="closed"):
        async with open_agent(closed, model=ScriptedModel()):
            pass  # pragma: no cover


async def test_after_close_inbox_calls_fail_and_cancel_is_a_no_op() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        agent.followup("late")
    assert agent.cancel(CancelCause.user()) is False
    assert [ev async for ev in agent.events()] == []
    assert len(session.events) == 0


async def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools"):
        async with open_agent(
            Session.in_memory(), model=ScriptedModel(), tools=[GatedTool(), GatedTool()]
        ):
            pass  # pragma: no cover
