"""The pure parts of the harness: tearing, the crash and repair checks, the reference model."""

from __future__ import annotations

from typing import Any

import pytest

from trio_agent.log import OUTCOME_UNKNOWN_TEXT, Header, encode_event, encode_header
from trio_agent.log.events import Event
from trio_agent.testing.checks import (
    DurableLog,
    HarnessViolation,
    check_crash_bytes,
    check_live_bytes,
    check_reopened,
    tear_last_line,
)
from trio_agent.testing.plan import (
    FINAL_ENTRY,
    MENU,
    entry_kind,
    expected_chunks,
    plan_entry,
    unstarted_text,
)
from trio_agent.testing.refmodel import (
    Controller,
    MessageState,
    ModelViolation,
    ReferenceModel,
    Status,
)


def ev(seq: int, type_: str, **data: Any) -> dict[str, Any]:
    return {"seq": seq, "time": 0, "type": type_, "data": data}


MSG = {"id": "m1", "text": "go", "source": "followup"}
INJECTED = {"id": "m2", "text": "a", "source": "inject"}
FOLLOWED = {"id": "m2", "text": "b", "source": "followup"}
CALL = {"type": "tool-call", "id": "c1", "name": "job", "arguments": {}}
TURN = [
    ev(0, "agent/inbox/spliced", target="next-turn", start=0, inserted=[MSG]),
    ev(1, "turn/start", turn=1),
    ev(2, "agent/inbox/spliced", target="next-turn", start=0, removedCount=1, inserted=[]),
    ev(3, "step/start", turn=1, step=1),
    ev(4, "user/message", turn=1, step=1, message=MSG),
    ev(5, "assistant/message", turn=1, step=1, message={"id": "a", "content": [CALL]}),
    ev(6, "tool/call", turn=1, step=1, callId="c1", name="job", arguments={}),
]


def file_of(events: list[dict[str, Any]]) -> bytes:
    lines = [encode_header(Header(id="s", created_at=0))]
    lines += [encode_event(Event(e["seq"], e["time"], e["type"], e["data"])) for e in events]
    return b"".join(lines)


def test_tearing_cuts_only_an_unacknowledged_last_line() -> None:
    data = file_of(TURN)
    torn = tear_last_line(data, acked=len(TURN) - 1, tear=5)
    assert len(torn) < len(data) and not torn.endswith(b"\n")
    assert data.startswith(torn)
    assert tear_last_line(data, acked=len(TURN), tear=5) == data  # acknowledged: on disk
    assert tear_last_line(data, acked=0, tear=None) == data
    header_only = file_of([])
    assert tear_last_line(header_only, acked=0, tear=3) == header_only


def test_crash_bytes_must_hold_every_acknowledged_event_unchanged() -> None:
    data = file_of(TURN[:4])
    assert check_crash_bytes(data, TURN, acked=4) == TURN[:4]
    with pytest.raises(HarnessViolation, match="acknowledged"):
        check_crash_bytes(data, TURN, acked=5)
    changed = [*TURN[:3], ev(3, "step/start", turn=1, step=1) | {"time": 9}]
    with pytest.raises(HarnessViolation, match="not what the process wrote"):
        check_crash_bytes(data, changed, acked=0)
    with pytest.raises(HarnessViolation, match="valid log prefix"):
        check_crash_bytes(file_of([TURN[1], TURN[1]]), TURN, acked=0)


def placeholder(code: str, text: str) -> dict[str, Any]:
    return ev(
        7,
        "tool/result",
        turn=1,
        step=1,
        callId="c1",
        isError=True,
        content=text.format(name="job", call_id="c1"),
        error={"code": code},
    )


def test_reopen_must_append_exactly_the_repair_closers() -> None:
    good = [
        placeholder("TOOL_OUTCOME_UNKNOWN", OUTCOME_UNKNOWN_TEXT),
        ev(8, "step/end", turn=1, step=1),
        ev(9, "turn/end", turn=1, reason={"kind": "interrupted"}),
    ]
    assert check_reopened(TURN, TURN + good) == good
    turn_first = [good[0], {**good[2], "seq": 8}, {**good[1], "seq": 9}]
    with pytest.raises(HarnessViolation, match="repair says"):
        check_reopened(TURN, TURN + turn_first)
    with pytest.raises(HarnessViolation, match="changed the durable prefix"):
        check_reopened(TURN, TURN[:-1] + good)


def test_a_live_log_only_grows() -> None:
    durable = DurableLog()
    assert durable.check(file_of(TURN[:2]), TURN, acked=2) == 2
    assert durable.check(file_of(TURN[:5]), TURN, acked=5) == 5
    with pytest.raises(HarnessViolation, match="changed or disappeared"):
        durable.check(file_of(TURN[:3]), TURN, acked=3)
    with pytest.raises(HarnessViolation, match="torn"):
        DurableLog().check(file_of(TURN)[:-3], TURN, acked=0)


def test_a_settled_live_log_holds_every_acknowledged_event_and_no_torn_line() -> None:
    """A cleanly shut-down session must have all it acknowledged on disk (restart asks for
    every event), the bytes a prefix of memory, and no torn line (no write is in flight)."""
    data = file_of(TURN[:4])
    assert check_live_bytes(data, TURN, acked=4) == 4
    with pytest.raises(HarnessViolation, match="5 events were acknowledged durable, only 4"):
        check_live_bytes(data, TURN, acked=5)
    with pytest.raises(HarnessViolation, match="torn final line"):
        check_live_bytes(data[:-3], TURN, acked=0)
    changed = [*TURN[:3], ev(3, "step/start", turn=1, step=1) | {"time": 9}]
    with pytest.raises(HarnessViolation, match="disk and memory differ"):
        check_live_bytes(data, changed, acked=0)


def test_the_plan_bounds_every_turn() -> None:
    assert plan_entry(["job"], 4, 1) == MENU["job"]
    assert plan_entry(["job", "talk"], 1, 2) == MENU["talk"]
    assert plan_entry(["job"], 1, 3) == FINAL_ENTRY
    assert [entry_kind(MENU[n]) for n in ("talk", "job", "cut", "fail")] == [
        "completed",
        None,
        "max-tokens",
        "error",
    ]


def act(op: str, phase: str, **fields: Any) -> dict[str, Any]:
    return {"k": "act", "op": op, "phase": phase, **fields}


def rt(type_: str, **fields: Any) -> dict[str, Any]:
    return {"k": "rt", "type": type_, **fields}


def event(e: dict[str, Any]) -> dict[str, Any]:
    return {"k": "event", "event": e}


WAKE = [
    act("followup", "begin", text="go"),
    event(TURN[0]),
    rt("status", status="running"),
    act("followup", "end", id="m1"),
    event(TURN[1]),
    event(TURN[2]),
    event(TURN[3]),
    event(TURN[4]),
]


def feed(model: ReferenceModel, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        model.apply(entry)


def test_the_model_follows_a_woken_turn() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    assert model.controller is Controller.BOUND and model.messages["m1"] is MessageState.ENTERED
    model.check_quiescent(
        {
            "status": "running",
            "inbox": {"next-turn": [], "next-step": []},
            "controller": {"turn": 1, "cancelled": False},
        }
    )


def test_the_model_counts_an_event_it_has_no_rule_for_and_moves_on() -> None:
    """``tool/spawned`` (a port's real tool started a process group; our harness world's tools
    start none) changes nothing the model follows: it counts the event, and nothing else."""
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    spawned = ev(5, "tool/spawned", turn=1, step=1, callId="c1", pgid=4242, identity="x")
    model.apply(event(spawned))
    assert model.events == 6
    assert model.controller is Controller.BOUND and model.messages["m1"] is MessageState.ENTERED
    with pytest.raises(ModelViolation, match="event seq 5 but the model counted 6"):
        model.apply(event(spawned))


def chunks(seq: int, *pieces: dict[str, Any]) -> list[dict[str, Any]]:
    """Chunks of turn 1 step 1 (which started at time 0), a virtual second apart."""
    return [
        event(
            ev(seq + n, "assistant/chunk", turn=1, step=1, chunk=chunk) | {"time": 1000 * (n + 1)}
        )
        for n, chunk in enumerate(pieces)
    ]


#: What the ``talk`` entry streams at turn 1 step 1, seq 5-7 (spec/cancel.md §The scripted
#: model), then its message (seq 8).
TALK = [
    *chunks(
        5,
        {"type": "text-delta", "text": "all "},
        {"type": "text-delta", "text": "good"},
        {"type": "finish", "reason": "stop"},
    ),
    event(
        ev(
            8,
            "assistant/message",
            turn=1,
            step=1,
            message={"id": "a-1-1", "content": [{"type": "text", "text": "all good"}]},
        )
    ),
]


def test_the_model_refuses_an_abort_nobody_asked_for() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE + TALK)
    feed(model, [event(ev(9, "step/end", turn=1, step=1))])
    with pytest.raises(ModelViolation, match="no cancel reached it"):
        model.apply(event(ev(10, "turn/end", turn=1, reason={"kind": "aborted"})))


def test_the_scripted_chunks_follow_the_spec() -> None:
    assert expected_chunks(MENU["pair"], 2, 1) == [
        {"type": "text-delta", "text": "two "},
        {"type": "text-delta", "text": "things"},
        {"type": "tool-call", "id": "call-2-1-1", "name": "sleep", "arguments": {"seconds": 1}},
        {"type": "tool-call", "id": "call-2-1-2", "name": "job", "arguments": {}},
        {"type": "finish", "reason": "tool-calls"},
    ]
    assert expected_chunks(MENU["cut"], 1, 1)[-1] == {"type": "finish", "reason": "max-tokens"}
    assert expected_chunks({"text": "  "}, 1, 1) == [
        {"type": "text-delta", "text": "  "},
        {"type": "finish", "reason": "stop"},
    ]


def test_the_model_refuses_a_step_that_did_not_log_its_finish_chunk() -> None:
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, *TALK[:2]])
    with pytest.raises(ModelViolation, match="2 of the 3 chunks"):
        model.apply(event(ev(7, "step/end", turn=1, step=1)))
    # Its message, logged without the finish chunk and without a cancel, is refused first.
    model = ReferenceModel(["talk"])
    message = {**TALK[3], "event": {**TALK[3]["event"], "seq": 7}}
    feed(model, [*WAKE, *TALK[:2]])
    with pytest.raises(ModelViolation, match="before the stream's finish chunk"):
        model.apply(message)


def message_of(seq: int, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return event(ev(seq, "assistant/message", turn=1, step=1, message=message, **extra))


def test_the_message_is_the_one_its_chunks_make() -> None:
    """K14: id a-<turn>-<step>, the text, no interrupted flag without a cut."""
    feed(ReferenceModel(["talk"]), [*WAKE, *TALK])  # the right one passes
    text = [{"type": "text", "text": "all good"}]
    for wrong in (
        message_of(8, {"id": "a-1", "content": text}),
        message_of(8, {"id": "a-1-1", "content": [{"type": "text", "text": "all"}]}),
        message_of(8, {"id": "a-1-1", "content": text}, interrupted=True),
    ):
        model = ReferenceModel(["talk"])
        feed(model, [*WAKE, *TALK[:3]])
        with pytest.raises(ModelViolation, match=r"assistant/message is .* it must be .*K14"):
            model.apply(wrong)


def test_a_step_must_log_its_message() -> None:
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, *TALK[:3]])
    with pytest.raises(ModelViolation, match="ended without an assistant/message"):
        model.apply(event(ev(8, "step/end", turn=1, step=1)))


def test_a_cut_stream_keeps_its_visible_text_interrupted() -> None:
    """K14: a cancel after visible text leaves exactly that text, interrupted, no calls."""
    hit = [
        act("cancel", "begin", cause="user", keep_inbox=True),
        act("cancel", "end", hit=True, turn=1),
    ]
    visible = {"id": "a-1-1", "content": [{"type": "text", "text": "all "}]}
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, TALK[0], *hit, message_of(6, visible, interrupted=True)])
    model.apply(event(ev(7, "step/end", turn=1, step=1)))
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, TALK[0], *hit])
    with pytest.raises(ModelViolation, match=r"must be .* interrupted"):
        model.apply(message_of(6, visible))
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, TALK[0], *hit])
    with pytest.raises(ModelViolation, match="visible text of its cut stream"):
        model.apply(event(ev(6, "step/end", turn=1, step=1)))
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, *hit])
    with pytest.raises(ModelViolation, match="no visible text streamed"):
        model.apply(message_of(5, visible, interrupted=True))


def test_the_model_refuses_a_chunk_the_model_did_not_stream() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    with pytest.raises(ModelViolation, match="scripted model streams"):
        feed(model, [*chunks(5, {"type": "text-delta", "text": "all good"}), TALK[3]])


def test_every_differing_chunk_of_a_step_is_reported_at_once() -> None:
    """K14: a port learns every chunk text of the step from one failing run."""
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    wrong = chunks(
        5,
        {"type": "text-delta", "text": "all"},
        {"type": "text-delta", "text": " good"},
        {"type": "finish", "reason": "stop"},
    )
    feed(model, wrong)  # nothing yet: the stream has not ended
    with pytest.raises(ModelViolation) as info:
        model.apply(TALK[3])
    text = str(info.value)
    assert "turn 1 step 1" in text and "2 of them" in text, text
    assert 'seq 5: chunk 1 is {"type":"text-delta","text":"all"}' in text
    assert '"text":"all "' in text and '"text":"good"' in text
    assert "seq 7" not in text  # the finish chunk was right


def test_the_model_refuses_a_dispatch_without_its_approval_bracket() -> None:
    model = ReferenceModel(["job"])
    feed(model, WAKE)
    call = ev(5, "tool/call", turn=1, step=1, callId="call-1-1-1", name="job", arguments={})
    with pytest.raises(ModelViolation, match="approval bracket"):
        model.apply(event(call))
    model = ReferenceModel(["job"])
    asked = {"turn": 1, "step": 1, "id": "approval-call-1-1-1"}
    feed(
        model,
        [
            *WAKE,
            event(ev(5, "approval/asked", **asked, callId="call-1-1-1", toolName="job")),
            event(ev(6, "approval/decided", **asked, outcome="allowed")),
            event({**call, "seq": 7}),
        ],
    )


def test_the_model_refuses_a_message_with_the_wrong_source() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    model.apply(act("steer", "begin", text="a"))
    wrong = {**INJECTED, "source": "followup"}
    with pytest.raises(ModelViolation, match="source"):
        model.apply(
            event(ev(5, "agent/inbox/spliced", target="next-step", start=0, inserted=[wrong]))
        )


def test_a_held_reply_shows_the_cancelled_controller() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    feed(model, [act("cancel", "begin", cause="user", keep_inbox=True)])
    feed(model, [act("cancel", "end", hit=True, turn=1)])
    state = {
        "status": "running",
        "inbox": {"next-turn": [], "next-step": []},
        "controller": {"turn": 1, "cancelled": True},
    }
    model.check_quiescent(state, held=True)
    with pytest.raises(ModelViolation, match="cancelled but has not ended"):
        model.check_quiescent(state)
    with pytest.raises(ModelViolation, match="cancelled=False"):
        model.check_quiescent({**state, "controller": {"turn": 1, "cancelled": False}}, held=True)
    feed(model, [act("cancel", "begin", cause="user", keep_inbox=True)])
    with pytest.raises(ModelViolation, match="hit=True"):
        model.apply(act("cancel", "end", hit=True, turn=1))


def test_the_model_refuses_an_idle_cancel_that_hits() -> None:
    model = ReferenceModel(["talk"])
    model.apply(act("cancel", "begin", cause="user", keep_inbox=True))
    with pytest.raises(ModelViolation, match="no live controller"):
        model.apply(act("cancel", "end", hit=True, turn=None))


def test_the_model_refuses_a_cancel_that_keeps_part_of_the_queue() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE)
    feed(
        model,
        [
            act("inject", "begin", text="a"),
            event(ev(5, "agent/inbox/spliced", target="next-step", start=0, inserted=[INJECTED])),
            act("inject", "end", id="m2"),
            act("cancel", "begin", cause="user", keep_inbox=False),
        ],
    )
    with pytest.raises(ModelViolation, match="did not drop"):
        model.apply(act("cancel", "end", hit=True, turn=1))


def test_the_model_refuses_interrupted_outside_repair() -> None:
    model = ReferenceModel(["talk"])
    feed(model, WAKE + TALK)
    feed(model, [event(ev(9, "step/end", turn=1, step=1))])
    with pytest.raises(ModelViolation, match="outside crash repair"):
        model.apply(event(ev(10, "turn/end", turn=1, reason={"kind": "interrupted"})))


def hook(name: str, turn: int, step: int) -> dict[str, Any]:
    return {"k": "hook", "name": name, "turn": turn, "step": step}


def test_every_hook_gets_the_turn_and_step_it_runs_for() -> None:
    """K9: pre_step gets the step about to start, prompt assembly the open step."""
    before_step = WAKE[:6]  # the wake, turn/start, the claim: step 1 is about to start
    feed(ReferenceModel(["talk"]), [*before_step, hook("pre_step", 1, 1), *WAKE[6:]])
    with pytest.raises(ModelViolation, match="K9: the pre_step hook got turn 1 step 0"):
        feed(ReferenceModel(["talk"]), [*before_step, hook("pre_step", 1, 0)])
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, hook("assemble_prompt", 1, 1)])
    with pytest.raises(ModelViolation, match="K9: the assemble_prompt hook got turn 1 step 2"):
        model.apply(hook("assemble_prompt", 1, 2))


def inject_then_followup() -> list[dict[str, Any]]:
    """An inject while idle (it parks in next-step), then a followup that wakes turn 1."""
    return [
        act("inject", "begin", text="a"),
        event(ev(0, "agent/inbox/spliced", target="next-step", start=0, inserted=[INJECTED])),
        act("inject", "end", id="m2"),
        act("followup", "begin", text="go"),
        event(ev(1, "agent/inbox/spliced", target="next-turn", start=0, inserted=[MSG])),
        rt("status", status="running"),
        act("followup", "end", id="m1"),
        event(ev(2, "turn/start", turn=1)),
    ]


def claim(seq: int, target: str) -> dict[str, Any]:
    return event(
        ev(seq, "agent/inbox/spliced", target=target, start=0, removedCount=1, inserted=[])
    )


def test_next_step_input_is_claimed_before_the_turns_message() -> None:
    """K12: the batch is the next-step messages, then the turn's message."""
    model = ReferenceModel(["talk"])
    feed(model, [*inject_then_followup(), claim(3, "next-step"), claim(4, "next-turn")])
    assert model.exercised["K12 next-step input is claimed before the turn's message"] == 1
    model = ReferenceModel(["talk"])
    feed(model, [*inject_then_followup(), claim(3, "next-turn")])
    with pytest.raises(ModelViolation, match=r"K12: a step claims all of next-step first"):
        model.apply(claim(4, "next-step"))


PAIR_CALLS = [
    {"type": "tool-call", "id": "call-1-1-1", "name": "sleep", "arguments": {"seconds": 1}},
    {"type": "tool-call", "id": "call-1-1-2", "name": "job", "arguments": {}},
]


def asked(seq: int, call: str, name: str) -> list[dict[str, Any]]:
    approval = {"turn": 1, "step": 1, "id": f"approval-{call}"}
    return [
        event(ev(seq, "approval/asked", **approval, callId=call, toolName=name)),
        event(ev(seq + 1, "approval/decided", **approval, outcome="allowed")),
    ]


def test_a_non_parallel_call_waits_for_the_calls_before_it() -> None:
    """K15: `pair` is a sleep (parallel), then a job (a group of its own)."""
    stream = pair_until_dispatch()
    slept = event(
        ev(
            14,
            "tool/result",
            turn=1,
            step=1,
            callId="call-1-1-1",
            isError=False,
            content="slept 1s",
        )
    )
    model = ReferenceModel(["pair"])
    feed(model, [*WAKE, *stream, slept, *asked(15, "call-1-1-2", "job")])
    assert model.exercised["K15 a non-parallel call waits for the calls before it"] == 1
    model = ReferenceModel(["pair"])
    feed(model, [*WAKE, *stream])
    with pytest.raises(
        ModelViolation, match=r"call-1-1-2 \(job\) is prepared while \['call-1-1-1'\]"
    ):
        feed(model, asked(14, "call-1-1-2", "job"))


def test_runtime_events_name_the_cancels_cause() -> None:
    """K4: InboxDropped, TurnEnded and TurnPrevented name the cause passed to cancel."""
    queued = [
        *WAKE,
        act("inject", "begin", text="a"),
        event(ev(5, "agent/inbox/spliced", target="next-step", start=0, inserted=[INJECTED])),
        act("inject", "end", id="m2"),
        act("cancel", "begin", cause="parent", keep_inbox=False),
        event(
            ev(
                6,
                "agent/inbox/spliced",
                target="next-step",
                start=0,
                removedCount=1,
                inserted=[],
                outcome="canceled",
            )
        ),
    ]
    model = ReferenceModel(["talk"])
    feed(model, queued)
    with pytest.raises(ModelViolation, match="K4: InboxDropped names the cause 'user'"):
        model.apply(rt("dropped", target="next-step", ids=["m2"], cause="user"))
    model = ReferenceModel(["talk"])
    feed(
        model,
        [
            *queued,
            rt("dropped", target="next-step", ids=["m2"], cause="parent"),
            act("cancel", "end", hit=True, turn=1),
            event(ev(7, "step/end", turn=1, step=1)),
            event(ev(8, "turn/end", turn=1, reason={"kind": "aborted"})),
        ],
    )
    with pytest.raises(ModelViolation, match="K4: TurnEnded names the cause 'user'"):
        model.apply(rt("turn-ended", turn=1, reason="aborted", cause="user"))
    woken = WAKE[:4]  # the followup woke a controller; its turn has not started
    model = ReferenceModel(["talk"])
    feed(model, [*woken, act("cancel", "begin", cause="parent", keep_inbox=True)])
    feed(model, [act("cancel", "end", hit=True, turn=None)])
    with pytest.raises(ModelViolation, match="K4: TurnPrevented names the cause 'user'"):
        model.apply(rt("prevented", cause="user", parked=1))


def pair_until_dispatch() -> list[dict[str, Any]]:
    """Turn 1 step 1 of `pair` up to its message (seq 5-10), then the sleep call's bracket and
    tool/call (seq 11-13)."""
    return [
        *chunks(
            5,
            {"type": "text-delta", "text": "two "},
            {"type": "text-delta", "text": "things"},
            *PAIR_CALLS,
            {"type": "finish", "reason": "tool-calls"},
        ),
        message_of(
            10, {"id": "a-1-1", "content": [{"type": "text", "text": "two things"}, *PAIR_CALLS]}
        ),
        *asked(11, "call-1-1-1", "sleep"),
        event(
            ev(
                13,
                "tool/call",
                turn=1,
                step=1,
                callId="call-1-1-1",
                name="sleep",
                arguments={"seconds": 1},
            )
        ),
    ]


def trap_cancel(where: str) -> list[dict[str, Any]]:
    return [
        act("cancel", "begin", cause="user", keep_inbox=True, where=where),
        act("cancel", "end", hit=True, turn=1),
    ]


def test_no_call_is_prepared_after_a_cancel_reached_the_turn() -> None:
    """K6: a cancel that landed after the assistant message (from its observer) leaves every
    call unprepared: no approval/asked, no tool/call."""
    message = pair_until_dispatch()[:6]
    model = ReferenceModel(["pair"])
    feed(model, [*WAKE, *message, *trap_cancel("assistant/message:observer")])
    assert model.exercised["K6 no call is prepared after the cancel"] == 1
    with pytest.raises(ModelViolation, match=r"asks for the approval of call-1-1-1 .*\(K6"):
        feed(model, asked(11, "call-1-1-1", "sleep"))


def test_a_call_cancelled_in_its_dispatch_flush_never_starts() -> None:
    """K17: after a cancel at tool/call:flushed the call writes no output, and its result is
    ABORTED with the "before its body started" text, nothing else."""

    def result(content: str) -> dict[str, Any]:
        return event(
            ev(
                14,
                "tool/result",
                turn=1,
                step=1,
                callId="call-1-1-1",
                isError=True,
                content=content,
                error={"code": "ABORTED"},
            )
        )

    before = [*WAKE, *pair_until_dispatch(), *trap_cancel("tool/call:flushed")]
    model = ReferenceModel(["pair"])
    feed(model, [*before, result(unstarted_text("sleep"))])
    assert model.exercised["K17 a cancel in the dispatch flush starts no body"] == 1
    model = ReferenceModel(["pair"])
    feed(model, before)
    with pytest.raises(ModelViolation, match=r"cancelled in the flush after its tool/call.*K17"):
        model.apply(result("The sleep call was cancelled while it ran; it has stopped."))
    model = ReferenceModel(["pair"])
    feed(model, before)
    output = ev(14, "tool/output", turn=1, step=1, callId="call-1-1-1", stream="stdout", text="x")
    with pytest.raises(ModelViolation, match=r"tool/output of call-1-1-1.*its body ran"):
        model.apply(event(output))


RACE_CALLS = [
    {"type": "tool-call", "id": "call-1-1-1", "name": "sleep", "arguments": {"seconds": 2}},
    {"type": "tool-call", "id": "call-1-1-2", "name": "sleep", "arguments": {"seconds": 1}},
]


def race_until_bodies() -> list[dict[str, Any]]:
    """Turn 1 step 1 of `race` up to both dispatches (seq 5-16): two parallel sleeps, the
    second shorter, so its body finishes first."""
    dispatched: list[dict[str, Any]] = []
    for seq, call in ((11, RACE_CALLS[0]), (14, RACE_CALLS[1])):
        dispatched += [
            *asked(seq, str(call["id"]), "sleep"),
            event(
                ev(
                    seq + 2,
                    "tool/call",
                    turn=1,
                    step=1,
                    callId=call["id"],
                    name="sleep",
                    arguments=call["arguments"],
                )
            ),
        ]
    return [
        *chunks(
            5,
            {"type": "text-delta", "text": "two "},
            {"type": "text-delta", "text": "naps"},
            *RACE_CALLS,
            {"type": "finish", "reason": "tool-calls"},
        ),
        message_of(
            10, {"id": "a-1-1", "content": [{"type": "text", "text": "two naps"}, *RACE_CALLS]}
        ),
        *dispatched,
    ]


def test_results_are_committed_in_request_order() -> None:
    """K16: of two parallel calls the later one finishes first, and its result waits."""

    def slept(seq: int, call: str, seconds: int) -> dict[str, Any]:
        content = f"slept {seconds}s"
        return event(
            ev(seq, "tool/result", turn=1, step=1, callId=call, isError=False, content=content)
        )

    model = ReferenceModel(["race"])
    feed(model, [*WAKE, *race_until_bodies(), slept(17, "call-1-1-1", 2)])
    feed(model, [slept(18, "call-1-1-2", 1)])
    assert model.exercised["K16 results are committed in request order"] == 1
    model = ReferenceModel(["race"])
    feed(model, [*WAKE, *race_until_bodies()])
    with pytest.raises(
        ModelViolation, match=r"call-1-1-2 is committed before the results of \['call-1-1-1'\]"
    ):
        model.apply(slept(17, "call-1-1-2", 1))


def test_a_clear_refused_inside_an_observer_still_cancels() -> None:
    """K5: a cancel that must clear a non-empty inbox, issued inside a session observer,
    has its first splice refused: nothing is dropped, the controller is still cancelled, and
    the error propagates (the journal's ``error``)."""
    queued = [
        *WAKE,
        act("followup", "begin", text="b"),
        event(ev(5, "agent/inbox/spliced", target="next-turn", start=0, inserted=[FOLLOWED])),
        act("followup", "end", id="m2"),
        act("cancel", "begin", cause="user", keep_inbox=False, where="finish:observer"),
    ]
    refused = "ReentrantAppend: append from an observer is refused"
    model = ReferenceModel(["talk"])
    feed(model, [*queued, act("cancel", "end", hit=True, turn=1, error=refused)])
    assert model.exercised["K5 a clear refused inside an observer still cancels"] == 1
    assert model.queues["next-turn"] == ["m2"] and model.controller_cancelled
    model = ReferenceModel(["talk"])
    feed(model, queued)
    with pytest.raises(ModelViolation, match=r"observer, with \[\('next-turn', \['m2'\]\)\]"):
        model.apply(act("cancel", "end", hit=True, turn=1))
    model = ReferenceModel(["talk"])
    feed(model, queued)
    with pytest.raises(ModelViolation, match=r"cancel returned hit=False"):
        model.apply(act("cancel", "end", hit=False, turn=1, error=refused))
    model = ReferenceModel(["talk"])
    feed(model, [*WAKE, act("cancel", "begin", cause="user", keep_inbox=False, where="now:x")])
    with pytest.raises(ModelViolation, match=r"had nothing to refuse"):
        model.apply(act("cancel", "end", hit=True, turn=1, error=refused))


def test_a_new_agent_needs_the_session_open_and_the_second_agent_refused() -> None:
    """K24: ``new_agent`` leaves the agent (as a shutdown does, K22) and opens another on the
    same session: a second agent opened meanwhile is refused, and the session is not closed."""
    refused = "RuntimeError: session 's' already has an agent"
    model = ReferenceModel(["talk"])
    feed(model, [act("new_agent", "begin", second=refused), act("new_agent", "end", closed=False)])
    assert model.exercised["K24 a second agent on a session is refused"] == 1
    assert model.exercised["K24 leaving an agent keeps the session open and flushed"] == 1
    assert not model.closing and model.status is Status.IDLE
    model = ReferenceModel(["talk"])
    with pytest.raises(ModelViolation, match=r"K24: a second agent was opened"):
        model.apply(act("new_agent", "begin", second=None))
    model = ReferenceModel(["talk"])
    model.apply(act("new_agent", "begin", second=refused))
    with pytest.raises(ModelViolation, match=r"K24: leaving the agent closed the session"):
        model.apply(act("new_agent", "end", closed=True))
