"""Properties over random sequences of inbox calls, cancels and scheduling points.

For every sequence: every append is valid (the session checks each one), the fold of the log
reports ``dropped_unrun`` exactly when the runtime reported dropping queued work after the
last turn that accounted for its input, and the agent always comes back to idle.
"""

from __future__ import annotations

import os
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings, strategies as st
from support.runtime.fakes import turn_ends

from trio_agent.log import check_events, fold_consumed_work
from trio_agent.models import ScriptedModel
from trio_agent.runtime import (
    CancelCause,
    InboxDropped,
    RuntimeEvent,
    StatusChanged,
    TurnEnded,
    TurnPrevented,
    open_agent,
)
from trio_agent.store import Session
from trio_agent.tools.builtin import EchoTool, SleepTool

EXAMPLES = int(os.environ.get("TRIO_AGENT_FUZZ_EXAMPLES", "60"))

SCRIPT: list[dict[str, Any]] = [
    {"text": "looking", "tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]},
    {
        "text": "two at once",
        "tool_calls": [
            {"name": "sleep", "arguments": {"seconds": 0}},
            {"name": "echo", "arguments": {"text": "b"}},
        ],
    },
    {"text": "cut off", "finish": "max-tokens"},
    {"text": "done here"},
]

op = st.one_of(
    st.tuples(st.sampled_from(["followup", "steer", "inject", "cancel", "cancel_keep", "settle"])),
    st.tuples(st.just("yield"), st.integers(0, 40)),
)


def runtime_says_dropped(seen: list[RuntimeEvent]) -> bool:
    """From runtime events alone: was queued work dropped after the last finished turn?

    Every turn this runtime starts claims at least one queued message (a turn starts only for
    pending work, and no hook rewrites the batch here), so every ``TurnEnded`` accounts.
    """
    dropped = False
    for event in seen:
        if isinstance(event, InboxDropped):
            dropped = True
        elif isinstance(event, TurnEnded):
            dropped = False
    return dropped


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    ops=st.lists(op, max_size=30), causes=st.lists(st.sampled_from(["user", "parent"]), min_size=1)
)
async def test_fold_reports_drops_exactly_when_the_runtime_dropped(
    ops: list[Any], causes: list[str]
) -> None:
    session = Session.in_memory()
    model = ScriptedModel(SCRIPT * 3)
    seen: list[RuntimeEvent] = []
    async with open_agent(session, model=model, tools=[EchoTool(), SleepTool()]) as agent:
        agent.subscribe(seen.append)
        for n, (name, *args) in enumerate(ops):
            cause = (
                CancelCause.user() if causes[n % len(causes)] == "user" else CancelCause.parent()
            )
            if name in ("followup", "steer", "inject"):
                getattr(agent, name)(f"{name} {n}")
            elif name == "cancel":
                agent.cancel(cause)
            elif name == "cancel_keep":
                agent.cancel(cause, keep_inbox=True)
            elif name == "settle":
                await agent.wait_idle()
            else:
                for _ in range(args[0]):
                    await trio.lowlevel.checkpoint()
            assert fold_consumed_work(session.events).dropped_unrun is runtime_says_dropped(seen)
        await agent.wait_idle()
        assert agent.status == "idle"
        assert fold_consumed_work(session.events).dropped_unrun is runtime_says_dropped(seen)
    check_events(session.events)
    assert session.open_turn is None
    # Turn outcomes at runtime match the log one for one, and aborted ones carry a cause.
    outcomes = [e.outcome for e in seen if isinstance(e, TurnEnded)]
    assert [o.reason for o in outcomes] == turn_ends(session.events)
    assert all((o.cause is not None) == (o.reason == "aborted") for o in outcomes)
    # Status alternates running / idle, starting with running.
    statuses = [e.status for e in seen if isinstance(e, StatusChanged)]
    assert statuses == ["running", "idle"] * (len(statuses) // 2)
    # A prevented controller never wrote a turn: turns == TurnStarted count.
    assert len(outcomes) == sum(1 for e in session.events if e.type == "turn/start")
    assert all(e.cause is not None for e in seen if isinstance(e, TurnPrevented))
