"""The cancel decisions of spec/cancel.md and the original system's cancel / re-entry scenarios,
as they apply.

Each test names the rule of spec/cancel.md it pins (K…).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from support.runtime.fakes import (
    FakeModel,
    GatedSession,
    GatedTool,
    SeamHooks,
    Wait,
    call,
    finish,
    shape,
    text,
    turn_ends,
    user_texts,
)
from support.runtime.running import hanging, record, running_turn

from trio_agent.log import fold_consumed_work
from trio_agent.log.splice import SpliceKind, splice_kind
from trio_agent.models import ScriptedModel
from trio_agent.runtime import (
    CancelCause,
    InboxDropped,
    RuntimeEvent,
    StatusChanged,
    TurnController,
    TurnEnded,
    TurnOutcome,
    TurnPrevented,
    open_agent,
)
from trio_agent.store import Session


def outcomes(seen: list[RuntimeEvent]) -> list[TurnOutcome]:
    return [e.outcome for e in seen if isinstance(e, TurnEnded)]


# -- K4: causes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["user", None, {"kind": "user"}, 1, CancelCause])
async def test_anything_but_a_cancel_cause_is_a_type_error(bad: Any) -> None:
    async with open_agent(Session.in_memory(), model=ScriptedModel()) as agent:
        with pytest.raises(TypeError):
            agent.cancel(bad)
        with pytest.raises(TypeError):
            agent.cancel(CancelCause.user(), keep_inbox=1)  # type: ignore[arg-type]


async def test_the_first_cause_wins_and_is_the_very_object() -> None:
    # cancel(parent) then cancel(user): the runtime cause is that parent object.
    async with running_turn("go") as run:
        session, agent = run.session, run.agent
        seen = run.seen
        parent = CancelCause.parent()
        assert agent.cancel(parent) is True
        assert agent.cancel(CancelCause.user()) is False
        assert agent.controller is not None and agent.controller.cause is parent
        await agent.wait_idle()
    (outcome,) = outcomes(seen)
    assert outcome.reason == "aborted" and outcome.cause is parent
    assert session.events[-1].data == {"turn": 1, "reason": {"kind": "aborted"}}


async def test_a_user_cancel_keeps_its_cause_when_disposal_follows() -> None:
    # leaving open_agent while the user's cancel unwinds does not overwrite it.
    tool = GatedTool()
    tool.fail_on_cancel = False
    user = CancelCause.user()
    async with running_turn("go", tool=tool) as run:
        agent = run.agent
        seen = run.seen
        agent.cancel(user)
    (outcome,) = outcomes(seen)
    assert outcome.cause is user


@pytest.mark.parametrize(
    "cause",
    [CancelCause.user(), CancelCause.parent(), CancelCause.hook("budget"), CancelCause.disposed()],
)
async def test_causes_reach_runtime_observers_and_never_the_log(cause: CancelCause) -> None:
    session = Session.in_memory()
    model, hold = hanging()
    async with open_agent(session, model=model) as agent:
        seen = record(agent)
        stream = agent.events()
        agent.followup("queued")  # this one is claimed by turn 1
        await hold.reached.wait()
        agent.followup("dropped")
        agent.cancel(cause)
        await agent.wait_idle()
    dropped = [e for e in seen if isinstance(e, InboxDropped)]
    assert len(dropped) == 1 and dropped[0].cause is cause
    assert [m["text"] for m in dropped[0].messages] == ["dropped"]
    assert outcomes(seen)[0].cause is cause
    streamed = []
    async for ev in stream:
        streamed.append(ev)
    assert streamed == seen
    # The log never names the cause, in any event.
    raw = repr([dict(e.data) for e in session.events])
    assert cause.kind not in raw.replace("'kind': 'aborted'", "")
    if cause.reason:
        assert cause.reason not in raw


# -- K5: idle cancel arms nothing -----------------------------------------------------------------


async def test_idle_cancel_arms_nothing() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        assert agent.cancel(CancelCause.user()) is False
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events)[0] == "insert next-turn"
    assert turn_ends(session.events) == ["completed"]


async def test_idle_cancel_clears_staged_context_and_keep_inbox_writes_nothing() -> None:
    # K5: an idle cancel clears the inbox (durably);
    # with keep_inbox it writes nothing at all.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.inject("context")
        agent.cancel(CancelCause.user(), keep_inbox=True)
        assert shape(session.events) == ["insert next-step"]
        agent.cancel(CancelCause.user())
        assert shape(session.events) == ["insert next-step", "drop next-step 1"]
        agent.cancel(CancelCause.user())  # nothing left: a no-op splice is not logged
        assert len(session.events) == 2


async def test_clear_order_is_next_step_then_next_turn() -> None:
    async with running_turn("run") as run:
        session, agent = run.session, run.agent
        agent.followup("turn item")
        agent.inject("step item")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    drops = [s for s in shape(session.events) if s.startswith("drop")]
    assert drops == ["drop next-step 1", "drop next-turn 1"]


# -- K2: same-tick cancel -------------------------------------------------------------------------


async def test_two_waking_sends_in_one_tick_then_cancel() -> None:
    # Adapted: no turn at all (DSH: one empty aborted turn); both items dropped.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        seen = record(agent)
        agent.followup("a")
        agent.followup("b")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert shape(session.events) == ["insert next-turn", "insert next-turn", "drop next-turn 2"]
    assert [type(e).__name__ for e in seen] == [
        "StatusChanged",
        "InboxDropped",
        "TurnPrevented",
        "StatusChanged",
    ]
    assert fold_consumed_work(session.events).dropped_unrun is True


async def test_iterators_see_events_in_the_order_they_happened() -> None:
    # A listener's cancel emits InboxDropped/TurnPrevented while StatusChanged("running") is
    # being delivered; an iterator still receives running first.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        stream = agent.events()
        agent.subscribe(
            lambda ev: agent.cancel(CancelCause.user()) if ev == StatusChanged("running") else None
        )
        agent.followup("go")
        await agent.wait_idle()
    names = [type(ev).__name__ async for ev in stream]
    assert names == ["StatusChanged", "InboxDropped", "TurnPrevented", "StatusChanged"]


async def test_cancel_from_the_running_listener_writes_no_turn() -> None:
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:

        def on(ev: RuntimeEvent) -> None:
            if ev == StatusChanged("running"):
                agent.cancel(CancelCause.disposed())

        agent.subscribe(on)
        agent.followup("go")
        await agent.wait_idle()
    assert "turn/start" not in shape(session.events)


async def test_running_listener_that_cancels_then_sends_runs_only_the_second() -> None:
    # the post-cancel send is latched and replays; a later send is a second turn.
    session = Session.in_memory()
    model = ScriptedModel()
    async with open_agent(session, model=model) as agent:
        once = True

        def on(ev: RuntimeEvent) -> None:
            nonlocal once
            if ev == StatusChanged("running") and once:
                once = False
                agent.cancel(CancelCause.user())
                agent.followup("B")

        agent.subscribe(on)
        agent.followup("A")
        await agent.wait_idle()
        assert user_texts(session.events) == ["B"]
        agent.followup("C")
        await agent.wait_idle()
    assert model.calls == 2
    assert turn_ends(session.events) == ["completed", "completed"]


async def test_send_cancel_send_in_one_tick() -> None:
    # Adapted: A is dropped before any turn (DSH: A's turn ends aborted); B runs.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.followup("A")
        agent.cancel(CancelCause.user())
        agent.followup("B")
        await agent.wait_idle()
        agent.followup("C")
        await agent.wait_idle()
    assert user_texts(session.events) == ["B", "C"]
    assert turn_ends(session.events) == ["completed", "completed"]


# -- K8: wake latch and parking -------------------------------------------------------------------


async def test_keep_inbox_parks_queued_work_until_a_later_wake() -> None:
    # the queued item stays, does not run by itself, and runs before the new message.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.followup("queued")
        agent.cancel(CancelCause.user(), keep_inbox=True)
        await agent.wait_idle()
        await trio.testing.wait_all_tasks_blocked()
        assert agent.status == "idle"
        assert user_texts(session.events) == ["first"]
        assert [m["text"] for m in session.inbox.next_turn] == ["queued"]
        agent.followup("new")
        await agent.wait_idle()
    assert user_texts(session.events) == ["first", "queued", "new"]
    assert turn_ends(session.events) == ["aborted", "completed", "completed"]


async def test_a_wake_after_a_keep_inbox_cancel_is_latched_and_replays() -> None:
    # sent while the aborted turn unwinds, it runs after the turn closes.
    tool = GatedTool()
    async with running_turn(tool=tool) as run:
        session, agent = run.session, run.agent
        seen = run.seen
        agent.cancel(CancelCause.user(), keep_inbox=True)
        agent.followup("after")  # the body has not stopped yet: the wake is latched
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted", "completed"]
    assert user_texts(session.events) == ["first", "after"]
    statuses = [e.status for e in seen if isinstance(e, StatusChanged)]
    assert statuses == ["running", "idle", "running", "idle"]


async def test_a_plain_cancel_drops_a_latched_wake() -> None:
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.user(), keep_inbox=True)
        agent.followup("latched")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
        assert turn_ends(session.events) == ["aborted"]
        agent.followup("later")
        await agent.wait_idle()
    assert user_texts(session.events) == ["first", "later"]


async def test_a_steer_after_an_abort_becomes_its_own_turn() -> None:
    # K8: a steer after an abort targets next-turn.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.user())
        agent.steer("redirect")
        await agent.wait_idle()
    steer = next(
        e
        for e in session.events
        if e.type == "agent/inbox/spliced"
        and e.data["inserted"]
        and e.data["inserted"][0]["text"] == "redirect"
    )
    assert steer.data["target"] == "next-turn"
    assert turn_ends(session.events) == ["aborted", "completed"]
    starts = [e.data["turn"] for e in session.events if e.type == "user/message"]
    assert starts == [1, 2]


async def test_a_steer_during_a_turn_then_cancel_is_never_entered() -> None:
    # the steer is dropped by the cancel and no follow-up turn starts.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.steer("more")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert user_texts(session.events) == ["first"]
    assert turn_ends(session.events) == ["aborted"]


async def test_running_turn_plus_queued_tail_cancel_drops_the_tail() -> None:
    async with running_turn("first", "tail") as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted"]
    assert user_texts(session.events) == ["first"]
    assert shape(session.events)[-4:] == [
        "drop next-turn 1",
        "assistant/message interrupted text",
        "step/end",
        "turn/end aborted",
    ]
    # The drop happened inside turn 1, whose aborted turn/end accounts for it (fold rule C4):
    # the fold reports no work dropped after the last accounting turn.
    assert fold_consumed_work(session.events).dropped_unrun is False


async def test_a_latched_steer_whose_item_is_gone_replays_nothing() -> None:
    # adapted (there is no remove call; a keep_inbox-less cancel is what removes it):
    # the latch is reset and nothing replays, so no empty extra turn appears.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        seen = run.seen
        agent.cancel(CancelCause.user(), keep_inbox=True)
        agent.steer("late")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted"]
    assert [e.status for e in seen if isinstance(e, StatusChanged)] == ["running", "idle"]


async def test_disposed_never_latches() -> None:
    # a wake during a disposal's unwind is parked, not replayed.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.disposed(), keep_inbox=True)
        agent.followup("during unwind")
        await agent.wait_idle()
        assert turn_ends(session.events) == ["aborted"]
        assert [m["text"] for m in session.inbox.next_turn] == ["during unwind"]
    assert len(run.model.requests) == 1


async def test_wait_idle_follows_a_replay_started_by_the_idle_listener() -> None:
    # A waiter registered before follows any run started meanwhile.
    session = Session.in_memory()
    model = ScriptedModel()
    async with open_agent(session, model=model) as agent:
        sent = False

        def on(ev: RuntimeEvent) -> None:
            nonlocal sent
            if ev == StatusChanged("idle") and not sent:
                sent = True
                agent.followup("from the idle listener")

        agent.subscribe(on)
        agent.followup("go")
        await agent.wait_idle()
        assert agent.status == "idle"
    assert turn_ends(session.events) == ["completed", "completed"]


async def test_idle_listener_sends_cancels_and_sends_again() -> None:
    # the pre-cancel message is dropped before any turn; the post-cancel one is
    # latched behind the cancelled (never started) run and replays.
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        done = False

        def on(ev: RuntimeEvent) -> None:
            nonlocal done
            if ev == StatusChanged("idle") and not done:
                done = True
                agent.followup("before cancel")
                agent.cancel(CancelCause.user())
                agent.followup("after cancel")

        agent.subscribe(on)
        agent.followup("go")
        await agent.wait_idle()
    assert user_texts(session.events) == ["go", "after cancel"]
    assert turn_ends(session.events) == ["completed", "completed"]
    assert "drop next-turn 1" in shape(session.events)


async def test_wait_idle_resolves_after_a_same_tick_cancel() -> None:
    async with open_agent(Session.in_memory(), model=ScriptedModel()) as agent:
        agent.followup("go")
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
        assert agent.status == "idle"


async def test_a_cancelled_turn_does_not_leak_into_the_next() -> None:
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
        agent.followup("second")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted", "completed"]


# -- K3 / K7: controllers -------------------------------------------------------------------------


async def test_one_fresh_controller_per_turn_and_at_most_one_live() -> None:
    session = Session.in_memory()
    seen_controllers: list[TurnController] = []
    hooks = SeamHooks()

    def grab(ctx: Any, batch: Any) -> None:
        assert agent.controller is not None
        assert agent.controller.view is ctx.controller
        seen_controllers.append(agent.controller)

    hooks.pre_step_result = grab
    async with open_agent(session, model=ScriptedModel(), hooks=hooks) as agent:
        agent.followup("a")
        agent.followup("b")
        await agent.wait_idle()
    assert len(seen_controllers) == 2 and seen_controllers[0] is not seen_controllers[1]
    assert [c.turn for c in seen_controllers] == [1, 2]
    assert all(c.closed for c in seen_controllers)
    assert agent.controller is None


async def test_the_reference_is_dropped_before_turn_end_is_appended() -> None:
    session = Session.in_memory()
    seen: dict[str, Any] = {}
    async with open_agent(session, model=ScriptedModel()) as agent:
        agent.followup("go")
        turn_controller = agent.controller

        def on_event(e: Any) -> None:
            if e.type == "turn/end":
                seen["live"] = agent.controller
                seen["closed"] = turn_controller is not None and turn_controller.closed
                seen["hit"] = turn_controller is not None and turn_controller.cancel(
                    CancelCause.user()
                )

        session.subscribe(on_event)
        await agent.wait_idle()
    assert seen["live"] is not turn_controller
    assert seen["closed"] is True and seen["hit"] is False
    assert turn_ends(session.events) == ["completed"]


async def test_a_cancel_after_turn_end_cannot_affect_that_turn() -> None:
    # From an observer of turn/end: the turn stays completed, its outcome has no cause; with
    # keep_inbox the queued next turn is prevented and parked (K8).
    session = Session.in_memory()
    async with open_agent(session, model=ScriptedModel()) as agent:
        seen = record(agent)

        def on_event(e: Any) -> None:
            if e.type == "turn/end" and e.data["turn"] == 1:
                agent.cancel(CancelCause.user(), keep_inbox=True)

        session.subscribe(on_event)
        agent.followup("one")
        agent.followup("two")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["completed"]
    assert outcomes(seen) == [TurnOutcome(1, "completed", None, None)]
    assert [e.parked for e in seen if isinstance(e, TurnPrevented)] == [1]


async def test_a_stale_controller_cannot_cancel_a_new_turn() -> None:
    session = Session.in_memory()
    model = FakeModel([text("one"), finish()], [text("x"), hold := Wait(), finish()])
    async with open_agent(session, model=model) as agent:
        agent.followup("first")
        stale = agent.controller
        await agent.wait_idle()
        agent.followup("second")
        await hold.reached.wait()
        assert stale is not None and stale is not agent.controller
        assert stale.cancel(CancelCause.user()) is False
        assert stale.cause is None
        assert agent.controller is not None and not agent.controller.cancel_called
        hold.gate.set()
        await agent.wait_idle()
    assert turn_ends(session.events) == ["completed", "completed"]


# -- K19: anything ending a cancelled turn is aborted ---------------------------------------------


async def test_a_failure_racing_the_cancel_is_recorded_aborted() -> None:
    tool = GatedTool()
    tool.fail_on_cancel = True
    async with running_turn("go", tool=tool) as run:
        session, agent = run.session, run.agent
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert shape(session.events)[-3:] == ["tool/result c1 ABORTED", "step/end", "turn/end aborted"]
    result = next(e for e in session.events if e.type == "tool/result")
    assert "ValueError: broke while stopping" in result.data["content"]


async def test_a_model_that_turns_the_cancel_into_an_error_still_aborts() -> None:
    class Rude:
        async def stream(self, request: Any, ctx: Any) -> Any:
            yield text("x")
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                raise RuntimeError("I do not like being cancelled") from None

    session = Session.in_memory()
    async with open_agent(session, model=Rude()) as agent:
        agent.followup("go")
        await trio.testing.wait_all_tasks_blocked()
        agent.cancel(CancelCause.user())
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted"]
    assert agent.last_outcome is not None
    assert agent.last_outcome.error == {
        "code": "UNKNOWN",
        "message": "RuntimeError: I do not like being cancelled",
    }


async def test_a_turn_stopping_hook_that_cancels_ends_aborted_after_one_step() -> None:
    session = Session.in_memory()
    hooks = SeamHooks()
    model = ScriptedModel()
    async with open_agent(session, model=model, hooks=hooks) as agent:
        hooks.on_turn_stopping = lambda ctx: agent.cancel(CancelCause.hook("enough"))
        agent.followup("go")
        await agent.wait_idle()
    assert model.calls == 1
    assert turn_ends(session.events) == ["aborted"]
    assert agent.last_outcome is not None and agent.last_outcome.cause == CancelCause.hook("enough")


async def test_a_pre_step_hook_that_steers_then_fails() -> None:
    # Adapted: the turn ends error with no request; the steer stays queued and, since
    # only a cancel parks work (K21), the driver runs it in the next turn.
    session = Session.in_memory()
    hooks = SeamHooks()
    model = ScriptedModel()
    failed = False

    def steer_and_fail(ctx: Any, batch: Any) -> None:
        nonlocal failed
        if not failed:
            failed = True
            agent.steer("steered")
            raise RuntimeError("hook failed")

    hooks.pre_step_result = steer_and_fail
    async with open_agent(session, model=model, hooks=hooks) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert turn_ends(session.events) == ["error", "completed"]
    assert user_texts(session.events) == ["steered"]
    assert model.calls == 1


async def test_a_send_from_inside_the_model_call_runs_as_the_next_turn() -> None:
    session = Session.in_memory()

    class Sending:
        async def stream(self, request: Any, ctx: Any) -> Any:
            if request.turn == 1:
                agent.followup("from the model")
            await trio.lowlevel.checkpoint()
            yield text("ok")
            yield finish()

    async with open_agent(session, model=Sending()) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert user_texts(session.events) == ["go", "from the model"]
    assert turn_ends(session.events) == ["completed", "completed"]


async def test_a_cancel_in_a_session_observer_with_a_full_inbox_still_cancels() -> None:
    # K5: the clear is refused inside a session observer (observers must not
    # append), but the live turn is cancelled anyway; the queued item stays.
    async with running_turn() as run:
        session, agent = run.session, run.agent
        agent.followup("queued")

        def on_event(e: Any) -> None:
            if e.type == "agent/inbox/spliced" and splice_kind(e.data) is SpliceKind.INSERT:
                agent.cancel(CancelCause.user())

        session.subscribe(on_event)
        agent.inject("trigger")  # its insert is observed; the observer cancels
        await agent.wait_idle()
    assert turn_ends(session.events) == ["aborted"]
    assert len(session.inbox.next_turn) == 1


# -- K21, K5, K16 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["turn-ended listener", "checkpoint flush", "idle listener"])
async def test_no_wake_is_lost_while_the_driver_winds_down(where: str) -> None:
    # K8, K21: a followup sent at any point of the driver's exit runs.
    session = GatedSession()
    if where == "checkpoint flush":
        session.hold_at = 0
    async with open_agent(session, model=ScriptedModel()) as agent:
        sent = False

        def send_once() -> None:
            nonlocal sent
            if not sent:
                sent = True
                agent.followup("late")

        def on(ev: RuntimeEvent) -> None:
            if where == "turn-ended listener" and isinstance(ev, TurnEnded):
                send_once()
            if where == "idle listener" and ev == StatusChanged("idle"):
                send_once()

        agent.subscribe(on)
        agent.followup("first")
        if where == "checkpoint flush":
            await session.reached.wait()
            send_once()
            session.gate.set()
        await agent.wait_idle()
    assert user_texts(session.events) == ["first", "late"]


async def test_cancel_clears_before_it_aborts() -> None:
    # K5 (clear, then cancel): observers of the drop still see the controller uncancelled.
    session = Session.in_memory()
    model, hold = hanging()
    async with open_agent(session, model=model) as agent:
        states: list[bool] = []
        agent.subscribe(
            lambda ev: (
                states.append(agent.controller.cancel_called)  # type: ignore[union-attr]
                if isinstance(ev, InboxDropped)
                else None
            )
        )
        agent.followup("first")
        await hold.reached.wait()
        agent.followup("queued")
        agent.cancel(CancelCause.user())
        assert agent.controller is not None and agent.controller.cancel_called
        await agent.wait_idle()
    assert states == [False]


async def test_an_internal_failure_answers_every_call() -> None:
    # K16: the scheduler fails before any call starts; each call still gets a result (with
    # a not-dispatched code) before step/end, and the turn ends error.
    class Broken(GatedTool):
        @property
        def parallel(self) -> bool:
            raise RuntimeError("no idea")

        @parallel.setter
        def parallel(self, value: bool) -> None:
            pass

    session = Session.in_memory()
    model = FakeModel([call("c1", "work"), call("c2", "broken"), finish("tool-calls")])
    async with open_agent(session, model=model, tools=[GatedTool(), Broken("broken")]) as agent:
        agent.followup("go")
        await agent.wait_idle()
    assert shape(session.events)[-4:] == [
        "tool/result c1 ABORTED_BEFORE_DISPATCH",
        "tool/result c2 ABORTED_BEFORE_DISPATCH",
        "step/end",
        "turn/end error UNKNOWN",
    ]
    result = next(e for e in session.events if e.type == "tool/result")
    assert "did not start because the step failed" in result.data["content"]
