"""The turn/step loop without cancellation: what a turn writes, in what order (spec/cancel.md)."""

from __future__ import annotations

from typing import Any

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
    steering_once,
    text,
    turn_ends,
    user_texts,
)

from trio_agent.log import check_events
from trio_agent.models import ScriptedModel
from trio_agent.runtime import (
    AllowAll,
    Reject,
    RuntimeEvent,
    StatusChanged,
    TurnEnded,
    new_message,
    open_agent,
)
from trio_agent.store import Session, SessionClosed
from trio_agent.tools.base import ToolCall, ToolContext, ToolOutcome
from trio_agent.tools.builtin import EchoTool, SleepTool


def recorder(agent: Any) -> list[RuntimeEvent]:
    seen: list[RuntimeEvent] = []
    agent.subscribe(seen.append)
    return seen


async def test_one_turn_writes_the_documented_sequence() -> None:
    session = Session.in_memory()
    model = ScriptedModel(
        [
            {
                "text": "Running the tests",
                "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}],
            },
            {"text": "All green."},
        ]
    )
    async with open_agent(session, model=model, tools=[EchoTool(), SleepTool()]) as agent:
        seen = recorder(agent)
        agent.followup("run the tests")
        await agent.wait_idle()
    assert shape(session.events) == [
        "insert next-turn",
        "turn/start",
        "claim next-turn 1",
        "step/start",
        "user/message",
        "chunk text-delta",
        "chunk text-delta",
        "chunk text-delta",
        "chunk tool-call",
        "chunk finish",
        "assistant/message text+tool-call",
        "tool/call call-1-1-1",
        "tool/output",
        "tool/result call-1-1-1 ok",
        "step/end",
        "step/start",
        "chunk text-delta",
        "chunk text-delta",
        "chunk finish",
        "assistant/message text",
        "step/end",
        "turn/end completed",
    ]
    assert check_events(session.events).balanced
    assert [type(e).__name__ for e in seen] == [
        "StatusChanged",
        "TurnStarted",
        "TurnEnded",
        "StatusChanged",
    ]
    assert seen[0] == StatusChanged("running") and seen[-1] == StatusChanged("idle")
    assert agent.last_outcome is not None and agent.last_outcome.reason == "completed"


async def test_n_followups_in_one_tick_are_n_turns_in_order_and_one_run() -> None:
    # one turn per followup, each with its one message, status running..idle once.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        seen = recorder(agent)
        for n in range(4):
            agent.followup(f"m{n}")
        await agent.wait_idle()
    assert user_texts(session.events) == ["m0", "m1", "m2", "m3"]
    assert turn_ends(session.events) == ["completed"] * 4
    statuses = [e.status for e in seen if isinstance(e, StatusChanged)]
    assert statuses == ["running", "idle"]


async def test_followup_sent_while_running_runs_as_the_next_turn() -> None:
    session = Session.in_memory()
    hold = Wait()
    model = FakeModel([text("a"), hold, finish()])
    async with open_agent(session, model=model) as agent:
        agent.followup("first")
        await hold.reached.wait()
        agent.followup("second")
        hold.gate.set()
        await agent.wait_idle()
    assert user_texts(session.events) == ["first", "second"]
    assert turn_ends(session.events) == ["completed", "completed"]


async def test_steer_during_a_turn_adds_a_step_to_that_turn() -> None:
    session = Session.in_memory()
    hold = Wait()
    model = FakeModel([text("a"), hold, finish()], [text("b"), finish()])
    async with open_agent(session, model=model) as agent:
        agent.followup("start")
        await hold.reached.wait()
        agent.steer("also this")
        hold.gate.set()
        await agent.wait_idle()
    assert turn_ends(session.events) == ["completed"]
    steps = [e.data["step"] for e in session.events if e.type == "step/start"]
    assert steps == [1, 2]
    assert shape(session.events)[-9:] == [
        "step/end",
        "claim next-step 1",
        "step/start",
        "user/message",
        "chunk text-delta",
        "chunk finish",
        "assistant/message text",
        "step/end",
        "turn/end completed",
    ]
    # the steer is entered into the second step of the same turn.
    entered = [
        (e.data["step"], e.data["message"]["text"])
        for e in session.events
        if e.type == "user/message"
    ]
    assert entered == [(1, "start"), (2, "also this")]


async def test_idle_steers_each_get_a_step_of_one_turn() -> None:
    # Adapted: both steers are claimed by the first step (claims take all next-step).
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.steer("one")
        agent.steer("two")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["completed"]
    assert shape(session.events)[:5] == [
        "insert next-step",
        "insert next-step",
        "turn/start",
        "claim next-step 2",
        "step/start",
    ]


async def test_idle_inject_does_not_wake_and_enters_the_next_turn_first() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.inject("context")
        await trio.testing.wait_all_tasks_blocked()
        assert agent.status == "idle"
        assert shape(session.events) == ["insert next-step"]
        agent.followup("prompt")
        await agent.wait_idle()
    # next-step items are claimed first, then the one next-turn item (K12).
    assert user_texts(session.events) == ["context", "prompt"]
    assert shape(session.events)[:5] == [
        "insert next-step",
        "insert next-turn",
        "turn/start",
        "claim next-step 1",
        "claim next-turn 1",
    ]


async def test_inbox_calls_validate_text() -> None:
    async with open_agent(Session.in_memory(), model=ScriptedModel()) as agent:
        for op in (agent.followup, agent.steer, agent.inject):
            with pytest.raises(TypeError):
                op(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="closed"):
        agent.followup("late")


async def test_parallel_results_commit_in_model_order_after_each_body() -> None:
    session = Session.in_memory()
    tool = GatedTool()
    model = FakeModel([call("c1", "work"), call("c2", "work"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[tool]) as agent:
        agent.followup("go")
        await tool.reached("c1").wait()
        await tool.reached("c2").wait()
        tool.gate("c2").set()  # the later call finishes first ...
        await trio.testing.wait_all_tasks_blocked()
        assert "tool/result" not in [e.type for e in session.events]  # ... and waits for c1
        tool.gate("c1").set()
        await agent.wait_idle()
    tools_part = [s for s in shape(session.events) if s.startswith("tool/")]
    assert tools_part == [
        "tool/call c1",
        "tool/call c2",
        "tool/output",
        "tool/output",
        "tool/result c1 ok",
        "tool/result c2 ok",
    ]
    assert tool.log == ["start c1", "start c2", "stopped c2", "stopped c1"]


async def test_a_non_parallel_call_runs_alone_in_model_order() -> None:
    session = Session.in_memory()
    par = GatedTool("par", parallel=True)
    solo = GatedTool("solo", parallel=False)
    for cid in ("p1", "s1", "p2"):
        par.gate(cid).set()
        solo.gate(cid).set()
    order: list[str] = []
    par.log = solo.log = order
    model = FakeModel(
        [call("p1", "par"), call("s1", "solo"), call("p2", "par"), finish("tool-calls")]
    )
    async with open_agent(session, model=model, tools=[par, solo]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert order == ["start p1", "stopped p1", "start s1", "stopped s1", "start p2", "stopped p2"]
    results = [s for s in shape(session.events) if s.startswith("tool/result")]
    assert results == ["tool/result p1 ok", "tool/result s1 ok", "tool/result p2 ok"]


async def test_unknown_tool_is_denied_without_dispatch() -> None:
    session = Session.in_memory()
    model = FakeModel([call("c1", "nope", x=1), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[EchoTool()]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert "tool/call c1" not in shape(session.events)
    assert "tool/result c1 DENIED" in shape(session.events)
    assert turn_ends(session.events) == ["completed"]


class _BadTool:
    name = "bad"
    parallel = True

    def __init__(self, result: Any) -> None:
        self.result = result

    async def run(self, call: ToolCall, ctx: ToolContext) -> Any:
        await trio.lowlevel.checkpoint()
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (ValueError("boom"), "TOOL_FAILED"),
        ("not an outcome", "TOOL_FAILED"),
        (ToolOutcome("x", is_error=True, error_code="DENIED"), "TOOL_FAILED"),
        (ToolOutcome("x", is_error=True, error_code="TOOL_FAILED"), "TOOL_FAILED"),
        (ToolOutcome("fine"), "ok"),
    ],
)
async def test_tool_failures_become_tool_failed_results(result: Any, code: str) -> None:
    session = Session.in_memory()
    model = FakeModel([call("c1", "bad"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[_BadTool(result)]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert f"tool/result c1 {code}" in shape(session.events)
    assert turn_ends(session.events) == ["completed"]


async def test_approval_brackets_allowed_and_rejected() -> None:
    session = Session.in_memory()
    approver = RecordingApprover(refuse=["c2"])
    model = FakeModel(
        [call("c1", "echo", text="a"), call("c2", "echo", text="b"), finish("tool-calls")]
    )
    async with open_agent(session, model=model, tools=[EchoTool()], approver=approver) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert [s for s in shape(session.events) if s.startswith(("approval", "tool/"))] == [
        "approval/asked",
        "approval/decided allowed",
        "tool/call c1",
        "approval/asked",
        "approval/decided rejected",
        "tool/output",
        "tool/result c1 ok",
        "tool/result c2 DENIED",
    ]
    assert [c.step for c in approver.contexts] == [1, 1]


async def test_an_approver_that_fails_refuses_the_call() -> None:
    class Broken:
        async def approve(self, call: ToolCall, ctx: Any) -> bool:
            raise RuntimeError("no approver today")

    session = Session.in_memory()
    model = FakeModel([call("c1", "echo", text="a"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[EchoTool()], approver=Broken()) as agent:
        agent.followup("go")
        await agent.wait_idle()
    results = [e for e in session.events if e.type == "tool/result"]
    assert results[0].data["error"] == {"code": "DENIED"}
    assert "approver failed" in results[0].data["content"]


async def test_allow_all_logs_the_bracket() -> None:
    session = Session.in_memory()
    model = FakeModel([call("c1", "echo", text="a"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[EchoTool()], approver=AllowAll()) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert "approval/decided allowed" in shape(session.events)


async def test_max_tokens_is_sticky_and_drops_tool_calls() -> None:
    # the cut-off step's tool calls never run; a steered continuation that completes
    # does not overwrite max-tokens; the next turn starts fresh.
    session = Session.in_memory()
    hooks = steering_once(lambda: agent, "continue")
    model = ScriptedModel(
        [
            {
                "text": "long",
                "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}],
                "finish": "max-tokens",
            },
            {"text": "rest"},
            {"text": "next turn"},
        ]
    )
    async with open_agent(session, model=model, tools=[EchoTool()], hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
        agent.followup("again")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["max-tokens", "completed"]
    assert not any(e.type == "tool/call" for e in session.events)
    first_message = next(e for e in session.events if e.type == "assistant/message")
    assert [b["type"] for b in first_message.data["message"]["content"]] == ["text"]


async def test_after_a_cut_off_step_a_tool_call_still_earns_its_follow_up() -> None:
    # K12: sticky max-tokens changes only the turn's reason. Step 1 is cut off (its call is
    # dropped), a steer continues the turn, step 2 calls a tool, and step 3 answers it.
    session = Session.in_memory()
    hooks = steering_once(lambda: agent, "continue")
    model = ScriptedModel(
        [
            {
                "text": "long",
                "tool_calls": [{"name": "echo", "arguments": {"text": "dropped"}}],
                "finish": "max-tokens",
            },
            {"tool_calls": [{"name": "echo", "arguments": {"text": "runs"}}]},
            {"text": "it said runs"},
        ]
    )
    async with open_agent(session, model=model, tools=[EchoTool()], hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["max-tokens"]
    calls = [e.data["arguments"] for e in session.events if e.type == "tool/call"]
    assert calls == [{"text": "runs"}]
    assert [e.data["step"] for e in session.events if e.type == "step/start"] == [1, 2, 3]


async def test_model_error_finish_ends_the_turn_error_keeping_the_visible_text() -> None:
    # K14: what the user saw before the provider failed is kept, as on a cancel.
    session = Session.in_memory()
    model = ScriptedModel(
        [{"text": "par", "error": {"code": "RATE_LIMITED", "message": "slow down"}}]
    )
    async with open_agent(session, model=model) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events)[-6:] == [
        "user/message",
        "chunk text-delta",
        "chunk finish",
        "assistant/message interrupted text",
        "step/end",
        "turn/end error RATE_LIMITED",
    ]
    end = session.events[-1].data
    assert end["reason"]["error"] == {"code": "RATE_LIMITED", "message": "slow down"}
    assert agent.last_outcome is not None and agent.last_outcome.error == end["reason"]["error"]
    message = session.events[-3].data
    assert message["message"]["content"] == [{"type": "text", "text": "par"}]


async def test_model_error_finish_without_text_writes_no_message() -> None:
    session = Session.in_memory()
    model = ScriptedModel([{"text": " ", "error": {"code": "RATE_LIMITED", "message": "x"}}])
    async with open_agent(session, model=model) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert "assistant/message" not in [e.type for e in session.events]
    assert shape(session.events)[-2:] == ["step/end", "turn/end error RATE_LIMITED"]


async def test_a_failing_turn_does_not_strand_queued_work() -> None:
    # Decision K21: only a cancel parks work; after error or blocked the driver goes on.
    session = Session.in_memory()
    hold = Wait()
    model = FakeModel([text("x"), hold, RuntimeError("model crashed")], [text("ok"), finish()])
    async with open_agent(session, model=model) as agent:
        agent.followup("first")
        await hold.reached.wait()
        agent.followup("second")
        hold.gate.set()
        await agent.wait_idle()
    assert turn_ends(session.events) == ["error", "completed"]
    end = next(e for e in session.events if e.type == "turn/end")
    assert end.data["reason"]["error"] == {
        "code": "UNKNOWN",
        "message": "RuntimeError: model crashed",
    }


async def test_bad_chunks_fail_the_turn_not_the_session() -> None:
    session = Session.in_memory()
    model = FakeModel([{"type": "tool-call", "id": "", "name": "x"}])
    async with open_agent(session, model=model) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["error"]
    assert session.events[-1].data["reason"]["error"]["code"] == "BAD_CHUNK"


async def test_a_chunk_that_is_not_json_fails_the_turn_not_the_session() -> None:
    session = Session.in_memory()
    model = FakeModel([{"type": "usage", "tokens": {1, 2}}], [text("fine"), finish()])
    async with open_agent(session, model=model) as agent:
        agent.followup("one")
        await agent.wait_idle()
        agent.followup("two")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["error", "completed"]
    assert (
        next(e for e in session.events if e.type == "turn/end").data["reason"]["error"]["code"]
        == "BAD_CHUNK"
    )


async def test_bad_tool_output_fails_the_call_not_the_session() -> None:
    class Noisy:
        name = "noisy"
        parallel = True

        async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
            await trio.lowlevel.checkpoint()
            ctx.output("stdout", 42)  # type: ignore[arg-type]
            return ToolOutcome("unreachable")  # pragma: no cover

    session = Session.in_memory()
    model = FakeModel([call("c1", "noisy"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[Noisy()]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert "tool/result c1 TOOL_FAILED" in shape(session.events)
    assert turn_ends(session.events) == ["completed"]


async def test_pre_step_reject_blocks_the_turn() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    hooks.pre_step_result = Reject("not today")
    async with open_agent(session, model=ScriptedModel(), hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events) == [
        "insert next-turn",
        "turn/start",
        "claim next-turn 1",
        "turn/end blocked",
    ]


async def test_second_pre_step_reject_blocks_after_one_request() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    hooks.pre_step_result = lambda ctx, batch: Reject() if ctx.step == 2 else None
    model = ScriptedModel([{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}])
    async with open_agent(session, model=model, tools=[EchoTool()], hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert model.calls == 1
    assert turn_ends(session.events) == ["blocked"]


async def test_pre_step_rewrite_to_empty_is_a_completed_turn_with_no_step() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    hooks.pre_step_result = []
    model = ScriptedModel()
    async with open_agent(session, model=model, hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events) == [
        "insert next-turn",
        "turn/start",
        "claim next-turn 1",
        "turn/end completed",
    ]
    assert model.calls == 0


async def test_pre_step_may_rewrite_the_batch() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    hooks.pre_step_result = lambda ctx, batch: [*batch, new_message("added by hook")]
    async with open_agent(session, model=ScriptedModel(), hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert user_texts(session.events) == ["go", "added by hook"]


async def test_pre_step_returning_garbage_is_a_turn_error() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    hooks.pre_step_result = ["not a message"]
    async with open_agent(session, model=ScriptedModel(), hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["error"]


async def test_every_seam_gets_the_turn_context_explicitly() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    tool = GatedTool()
    tool.gate("c1").set()
    approver = RecordingApprover()
    model = FakeModel([call("c1", "work"), finish("tool-calls")], [text("done"), finish()])
    async with open_agent(
        session, model=model, tools=[tool], approver=approver, hooks=hooks
    ) as agent:
        agent.followup("go")
        await agent.wait_idle()
    seen = [
        *(("pre_step", c) for c in hooks.contexts["pre_step"]),
        *(("prompt", c) for c in hooks.contexts["assemble_prompt"]),
        *(("stopping", c) for c in hooks.contexts["turn_stopping"]),
        *(("model", c) for c in model.contexts),
        *(("approval", c) for c in approver.contexts),
        *(("tool", c) for c in tool.contexts),
    ]
    assert {(k, c.turn, c.step) for k, c in seen} == {
        ("pre_step", 1, 1),
        ("pre_step", 1, 2),
        ("prompt", 1, 1),
        ("prompt", 1, 2),
        ("stopping", 1, 2),
        ("model", 1, 1),
        ("model", 1, 2),
        ("approval", 1, 1),
        ("tool", 1, 1),
    }
    views = {id(c.controller) for _, c in seen}
    assert len(views) == 1  # one controller (view) per turn, the same at every seam
    view = seen[0][1].controller
    assert view.cancel_called is False and view.cause is None
    assert not hasattr(view, "cancel")
    assert model.requests[1].system == "system prompt"
    assert [m["role"] for m in model.requests[1].messages] == ["user", "assistant", "tool"]


async def test_tool_call_is_flushed_before_the_body_and_turn_end_before_idle() -> None:
    session = GatedSession()
    seen_at_start: list[int] = []

    class Probe:
        name = "probe"
        parallel = True

        async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
            seen_at_start.append(len(session.flushes))
            await trio.lowlevel.checkpoint()
            return ToolOutcome("ok")

    model = FakeModel([call("c1", "probe"), finish("tool-calls")], [text("done"), finish()])
    async with open_agent(session, model=model, tools=[Probe()]) as agent:
        agent.followup("go")
        await agent.wait_idle()
        flushes_when_idle = list(session.flushes)
    events = session.events
    call_seq = next(e.seq for e in events if e.type == "tool/call")
    end_seq = next(e.seq for e in events if e.type == "turn/end")
    # The first flush saw the log up to and including tool/call, before the body started.
    assert flushes_when_idle[0] == call_seq + 1
    assert seen_at_start == [1]
    # The checkpoint after turn/end saw turn/end, and came before the agent reported idle.
    assert flushes_when_idle[1] == end_seq + 1


async def test_a_failed_flush_before_a_body_fails_that_call_only() -> None:
    session = GatedSession()
    session.fail_at = {0}
    tool = GatedTool()
    tool.gate("c2").set()
    model = FakeModel([call("c1", "work"), call("c2", "work"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[tool]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert tool.log == ["start c2", "stopped c2"]
    results = [s for s in shape(session.events) if s.startswith("tool/result")]
    assert results == ["tool/result c1 TOOL_FAILED", "tool/result c2 ok"]


async def test_a_failed_flush_after_turn_end_parks_queued_work_and_reports() -> None:
    session = GatedSession()
    hold = Wait()
    session.fail_at = {0}
    model = FakeModel([text("a"), hold, finish()])
    async with open_agent(session, model=model) as agent:
        seen = recorder(agent)
        agent.followup("one")
        await hold.reached.wait()
        agent.followup("two")
        hold.gate.set()
        await agent.wait_idle()
        assert turn_ends(session.events) == ["completed"]
        assert [type(e).__name__ for e in seen if type(e).__name__ == "AgentError"] == [
            "AgentError"
        ]
        assert len(session.inbox.next_turn) == 1


async def test_a_reused_call_id_fails_the_turn_not_the_session() -> None:
    # A model that reuses a call id of an earlier turn (some providers do) would break rule
    # I10: the turn ends BAD_CHUNK before the message is written, the log stays valid, the
    # text the user saw is kept, and the agent goes on (test_turn_fatal covers a refusal).
    session = Session.in_memory()
    model = FakeModel(
        [call("dup", "echo", text="a"), finish("tool-calls")],
        [text("ok"), finish()],
        [text("b"), call("dup", "echo", text="b"), finish("tool-calls")],
        [text("fine"), finish()],
    )
    async with open_agent(session, model=model, tools=[EchoTool()]) as agent:
        for message in ("one", "two", "three"):
            agent.followup(message)
            await agent.wait_idle()
    assert check_events(session.events).open_turn is None
    ends = [e.data["reason"] for e in session.events if e.type == "turn/end"]
    assert [end["kind"] for end in ends] == ["completed", "error", "completed"]
    assert ends[1]["error"]["code"] == "BAD_CHUNK" and "'dup'" in ends[1]["error"]["message"]
    kept = [e.data for e in session.events if e.type == "assistant/message" and e.data["turn"] == 2]
    visible = {"id": "a-2-1", "content": [{"type": "text", "text": "b"}]}
    assert kept == [{"turn": 2, "step": 1, "interrupted": True, "message": visible}]


async def test_a_session_closed_under_a_running_tool_fails_loudly() -> None:
    session = Session.in_memory()

    class Closer:
        name = "closer"
        parallel = True

        async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
            await session.aclose()
            ctx.output("stdout", "too late")  # refused: the session is closed
            return ToolOutcome("unreachable")  # pragma: no cover

    model = FakeModel([call("c1", "closer"), finish("tool-calls")])
    with pytest.RaisesGroup(SessionClosed, flatten_subgroups=True):
        async with open_agent(session, model=model, tools=[Closer()]) as agent:
            agent.followup("go")
            await agent.wait_idle()
    assert session.events[-1].type == "tool/call"  # nothing written after the refusal


async def test_runtime_event_stream_delivers_and_ends_on_close() -> None:
    session = Session.in_memory()
    got: list[RuntimeEvent] = []
    async with open_agent(session, model=ScriptedModel()) as agent:
        stream = agent.events()
        agent.followup("go")
        await agent.wait_idle()
    async for ev in stream:
        got.append(ev)
    assert [type(e).__name__ for e in got] == [
        "StatusChanged",
        "TurnStarted",
        "TurnEnded",
        "StatusChanged",
    ]
    assert isinstance(got[2], TurnEnded) and got[2].outcome.reason == "completed"
