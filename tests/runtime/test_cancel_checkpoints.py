"""Where a cancel lands → the exact log and the runtime outcome (spec/cancel.md §Where a
cancel lands → resulting log).

Each case holds one seam of a turn with a fake, cancels with a ``user`` cause there, and
checks the whole log (types, reasons, result codes) and the outcome the runtime reports.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
import trio.testing
from support.runtime.fakes import (
    FakeModel,
    GatedSession,
    GatedTool,
    RecordingApprover,
    SeamHooks,
    Wait,
    call,
    finish,
    shape,
    text,
)

from trio_agent.log import check_events, fold_consumed_work
from trio_agent.models import ScriptedModel
from trio_agent.runtime import (
    CancelCause,
    RuntimeEvent,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnPrevented,
    open_agent,
)
from trio_agent.store import Session

CLAIMED = ["insert next-turn", "turn/start", "claim next-turn 1"]
ENTERED = [*CLAIMED, "step/start", "user/message"]
ABORTED = ["step/end", "turn/end aborted"]


@attrs.define
class Case:
    model: Any
    reached: trio.Event
    tools: list[Any] = attrs.Factory(list)
    approver: Any = None
    hooks: Any = None
    session: Session = attrs.Factory(Session.in_memory)


async def cancel_at(case: Case) -> tuple[Session, Any, list[RuntimeEvent], CancelCause]:
    cause = CancelCause.user()
    async with open_agent(
        case.session, model=case.model, tools=case.tools, approver=case.approver, hooks=case.hooks
    ) as agent:
        seen: list[RuntimeEvent] = []
        agent.subscribe(seen.append)
        agent.followup("go")
        await case.reached.wait()
        assert agent.cancel(cause) is True
        await agent.wait_idle()
    check_events(case.session.events)
    return case.session, agent, seen, cause


def assert_aborted(
    session: Session, agent: Any, seen: list[RuntimeEvent], cause: CancelCause
) -> None:
    end = session.events[-1]
    assert end.type == "turn/end"
    assert end.data == {"turn": 1, "reason": {"kind": "aborted"}}  # no cause in the log
    assert agent.last_outcome == TurnOutcome(1, "aborted", cause, None)
    assert agent.last_outcome.cause is cause
    ended = [e for e in seen if isinstance(e, TurnEnded)]
    assert len(ended) == 1 and ended[0].outcome.cause is cause
    assert [e.status for e in seen if isinstance(e, StatusChanged)] == ["running", "idle"]


def case_pre_step() -> tuple[Case, list[str]]:
    hooks = SeamHooks("pre_step")
    return Case(ScriptedModel(), hooks.reached, hooks=hooks), [*CLAIMED, "turn/end aborted"]


def case_prompt_assembly() -> tuple[Case, list[str]]:
    hooks = SeamHooks("assemble_prompt")
    return Case(ScriptedModel(), hooks.reached, hooks=hooks), [*ENTERED, *ABORTED]


def case_model_request() -> tuple[Case, list[str]]:
    hold = Wait()
    return Case(FakeModel([hold, text("never")]), hold.reached), [*ENTERED, *ABORTED]


def case_between_chunks() -> tuple[Case, list[str]]:
    hold = Wait()
    model = FakeModel([text("partial "), text("answer"), hold, text("never")])
    return Case(model, hold.reached), [
        *ENTERED,
        "chunk text-delta",
        "chunk text-delta",
        "assistant/message interrupted text",
        *ABORTED,
    ]


def case_only_whitespace_streamed() -> tuple[Case, list[str]]:
    hold = Wait()
    model = FakeModel([text("  \n"), hold])
    return Case(model, hold.reached), [*ENTERED, "chunk text-delta", *ABORTED]


def case_half_streamed_tool_call() -> tuple[Case, list[str]]:
    # completed text then a tool call, cancelled before finish: text kept, call dropped.
    hold = Wait()
    model = FakeModel([text("let me look"), call("c1", "work"), hold, finish("tool-calls")])
    return Case(model, hold.reached, tools=[GatedTool()]), [
        *ENTERED,
        "chunk text-delta",
        "chunk tool-call",
        "assistant/message interrupted text",
        *ABORTED,
    ]


def case_only_tool_call_streamed() -> tuple[Case, list[str]]:
    # nothing visible streamed: no assistant/message at all.
    hold = Wait()
    model = FakeModel([call("c1", "work"), hold, finish("tool-calls")])
    return Case(model, hold.reached, tools=[GatedTool()]), [*ENTERED, "chunk tool-call", *ABORTED]


TOOLS_ASKED = [
    *ENTERED,
    "chunk tool-call",
    "chunk tool-call",
    "chunk finish",
    "assistant/message tool-call+tool-call",
]


def two_calls() -> FakeModel:
    return FakeModel([call("c1", "work"), call("c2", "work"), finish("tool-calls")])


def case_in_approval() -> tuple[Case, list[str]]:
    approver = RecordingApprover(hold=True)
    return Case(two_calls(), approver.reached, tools=[GatedTool()], approver=approver), [
        *TOOLS_ASKED,
        "approval/asked",
        "approval/decided cancelled",
        "tool/result c1 ABORTED_BEFORE_DISPATCH",
        "tool/result c2 ABORTED_BEFORE_DISPATCH",
        *ABORTED,
    ]


def case_in_dispatch_flush() -> tuple[Case, list[str]]:
    session = GatedSession()
    session.hold_at = 0  # the flush that makes tool/call durable before the body
    return Case(two_calls(), session.reached, tools=[GatedTool()], session=session), [
        *TOOLS_ASKED,
        "tool/call c1",
        "tool/result c1 ABORTED",
        "tool/result c2 ABORTED_BEFORE_DISPATCH",
        *ABORTED,
    ]


def case_mid_tool() -> tuple[Case, list[str]]:
    tool = GatedTool()
    return Case(two_calls(), tool.reached("c2"), tools=[tool]), [
        *TOOLS_ASKED,
        "tool/call c1",
        "tool/call c2",
        "tool/result c1 ABORTED",
        "tool/result c2 ABORTED",
        *ABORTED,
    ]


def case_mid_tool_before_exclusive_call() -> tuple[Case, list[str]]:
    # an exclusive call after a cancelled parallel group never runs.
    tool = GatedTool()
    solo = GatedTool("solo", parallel=False)
    model = FakeModel([call("c1", "work"), call("c2", "solo"), finish("tool-calls")])
    return Case(model, tool.reached("c1"), tools=[tool, solo]), [
        *ENTERED,
        "chunk tool-call",
        "chunk tool-call",
        "chunk finish",
        "assistant/message tool-call+tool-call",
        "tool/call c1",
        "tool/result c1 ABORTED",
        "tool/result c2 ABORTED_BEFORE_DISPATCH",
        *ABORTED,
    ]


def case_turn_stopping() -> tuple[Case, list[str]]:
    hooks = SeamHooks("turn_stopping")
    model = ScriptedModel([{"text": "answer"}])
    return Case(model, hooks.reached, hooks=hooks), [
        *ENTERED,
        "chunk text-delta",
        "chunk finish",
        "assistant/message text",
        *ABORTED,
    ]


def case_pre_step_of_second_step() -> tuple[Case, list[str]]:
    hooks = SeamHooks("pre_step", hold_step=2)
    tool = GatedTool()
    tool.gate("c1").set()
    model = FakeModel([call("c1", "work"), finish("tool-calls")])
    return Case(model, hooks.reached, tools=[tool], hooks=hooks), [
        *ENTERED,
        "chunk tool-call",
        "chunk finish",
        "assistant/message tool-call",
        "tool/call c1",
        "tool/output",
        "tool/result c1 ok",
        "step/end",
        "turn/end aborted",
    ]


CASES = {
    "pre-step": case_pre_step,
    "prompt-assembly": case_prompt_assembly,
    "model-request": case_model_request,
    "between-chunks": case_between_chunks,
    "only-whitespace": case_only_whitespace_streamed,
    "half-tool-call": case_half_streamed_tool_call,
    "only-tool-call": case_only_tool_call_streamed,
    "approval": case_in_approval,
    "dispatch-flush": case_in_dispatch_flush,
    "mid-tool": case_mid_tool,
    "before-exclusive": case_mid_tool_before_exclusive_call,
    "turn-stopping": case_turn_stopping,
    "second-pre-step": case_pre_step_of_second_step,
}


@pytest.mark.parametrize("name", list(CASES))
async def test_cancel_lands_at(name: str) -> None:
    case, expected = CASES[name]()
    session, agent, seen, cause = await cancel_at(case)
    assert shape(session.events) == expected
    assert_aborted(session, agent, seen, cause)
    # The claimed item was consumed by an accounting turn, nothing was dropped unrun.
    assert fold_consumed_work(session.events).dropped_unrun is False


async def test_interrupted_message_keeps_exactly_the_visible_prefix() -> None:
    case, _ = case_between_chunks()
    session, *_ = await cancel_at(case)
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["interrupted"] is True
    assert message.data["message"]["content"] == [{"type": "text", "text": "partial answer"}]


async def test_a_running_body_has_fully_stopped_before_its_result() -> None:
    tool = GatedTool()
    case = Case(two_calls(), tool.reached("c2"), tools=[tool])
    log_at_result: list[tuple[str, list[str]]] = []
    case.session.subscribe(
        lambda e: (
            log_at_result.append((e.data["callId"], list(tool.log)))
            if e.type == "tool/result"
            else None
        )
    )
    await cancel_at(case)
    assert [cid for cid, _ in log_at_result] == ["c1", "c2"]
    for cid, snapshot in log_at_result:
        assert f"stopped {cid}" in snapshot  # each result only after its own body stopped
    result = next(e for e in case.session.events if e.type == "tool/result")
    assert "gated body saw the cancel" in result.data["content"]


async def test_cancel_before_turn_start_writes_no_turn() -> None:
    # K2: the waking send does not claim; a cancel in the same tick finds the new
    # controller already live, so no turn starts and the message is dropped.
    session = Session.in_memory()
    model = ScriptedModel()
    async with open_agent(session, model=model) as agent:
        seen: list[RuntimeEvent] = []
        agent.subscribe(seen.append)
        agent.followup("go")
        assert agent.status == "running" and agent.controller is not None
        cause = CancelCause.user()
        assert agent.cancel(cause) is True
        await agent.wait_idle()
    assert shape(session.events) == ["insert next-turn", "drop next-turn 1"]
    assert model.calls == 0
    prevented = [e for e in seen if isinstance(e, TurnPrevented)]
    assert prevented == [TurnPrevented(cause, 0)] and prevented[0].cause is cause
    assert not any(isinstance(e, TurnEnded) for e in seen)
    assert fold_consumed_work(session.events).dropped_unrun is True


async def test_keep_inbox_cancel_before_turn_start_parks_the_message() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        seen: list[RuntimeEvent] = []
        agent.subscribe(seen.append)
        agent.followup("go")
        agent.cancel(CancelCause.user(), keep_inbox=True)
        await agent.wait_idle()
        assert shape(session.events) == ["insert next-turn"]
        assert next(e for e in seen if isinstance(e, TurnPrevented)).parked == 1
        await trio.testing.wait_all_tasks_blocked()
        assert agent.status == "idle"  # parked: nothing runs it until the next wake
        agent.followup("later")
        await agent.wait_idle()
    # The parked message runs first, then the new one, each its own turn.
    assert [e.data["message"]["text"] for e in session.events if e.type == "user/message"] == [
        "go",
        "later",
    ]
    assert fold_consumed_work(session.events).dropped_unrun is False


@pytest.mark.parametrize("keep_inbox", [False, True])
async def test_cancel_during_the_flush_after_turn_end(keep_inbox: bool) -> None:
    session = GatedSession()
    session.hold_at = 0  # the checkpoint flush after turn 1's turn/end
    async with open_agent(session, model=ScriptedModel()) as agent:
        seen: list[RuntimeEvent] = []
        agent.subscribe(seen.append)
        agent.followup("one")
        agent.followup("two")
        await session.reached.wait()
        cause = CancelCause.user()
        agent.cancel(cause, keep_inbox=keep_inbox)
        session.gate.set()
        await agent.wait_idle()
        log = shape(session.events)
    head = [
        "insert next-turn",
        "insert next-turn",
        "turn/start",
        "claim next-turn 1",
        "step/start",
        "user/message",
        "chunk text-delta",
        "chunk finish",
        "assistant/message text",
        "step/end",
        "turn/end completed",
    ]
    # The finished turn is untouched; the cancel stops the next one from starting.
    assert log == (head if keep_inbox else [*head, "drop next-turn 1"])
    assert agent.last_outcome == TurnOutcome(1, "completed", None, None)
    assert [e for e in seen if isinstance(e, TurnPrevented)] == [
        TurnPrevented(cause, 1 if keep_inbox else 0)
    ]
    assert fold_consumed_work(session.events).dropped_unrun is (not keep_inbox)


async def test_cancel_observed_after_the_last_chunk_still_interrupts() -> None:
    # Kept from DSH: a cancel that lands after the stream's last chunk (here from
    # an observer of the finish chunk) finalizes the prefix as interrupted, calls dropped.
    session = Session.in_memory()
    model = FakeModel([text("all "), text("done"), call("c1", "work"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[GatedTool()]) as agent:

        def on_event(e: Any) -> None:
            if e.type == "assistant/chunk" and e.data["chunk"]["type"] == "finish":
                agent.cancel(CancelCause.user(), keep_inbox=True)

        session.subscribe(on_event)
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events)[-5:] == [
        "chunk tool-call",
        "chunk finish",
        "assistant/message interrupted text",
        "step/end",
        "turn/end aborted",
    ]


async def test_cancel_from_the_assistant_message_observer_skips_every_call() -> None:
    # Adapted: cancelled right after the message that requested the calls,
    # no call is dispatched and each gets ABORTED_BEFORE_DISPATCH without a tool/call.
    session = Session.in_memory()
    tool = GatedTool()
    model = two_calls()
    async with open_agent(session, model=model, tools=[tool]) as agent:

        def on_event(e: Any) -> None:
            if e.type == "assistant/message":
                agent.cancel(CancelCause.user())  # the inbox is empty, so no append happens

        unsubscribe = session.subscribe(on_event)
        agent.followup("go")
        await agent.wait_idle()
        unsubscribe()
        assert shape(session.events)[-5:] == [
            "assistant/message tool-call+tool-call",
            "tool/result c1 ABORTED_BEFORE_DISPATCH",
            "tool/result c2 ABORTED_BEFORE_DISPATCH",
            "step/end",
            "turn/end aborted",
        ]
        assert tool.log == []
        # The next turn's request carries the skipped results to the model.
        agent.followup("again")
        await agent.wait_idle()
    tool_messages = [m for m in model.requests[1].messages if m["role"] == "tool"]
    assert [(m["callId"], m["code"]) for m in tool_messages] == [
        ("c1", "ABORTED_BEFORE_DISPATCH"),
        ("c2", "ABORTED_BEFORE_DISPATCH"),
    ]


async def test_cancel_from_a_step_start_observer() -> None:
    # no chunk streams, the step is balanced, the turn ends aborted.
    session = Session.in_memory()
    model = ScriptedModel()
    async with open_agent(session, model=model) as agent:

        def on_event(e: Any) -> None:
            if e.type == "step/start":
                agent.cancel(CancelCause.user())

        session.subscribe(on_event)
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events) == [*ENTERED, *ABORTED]
    assert model.calls == 0
