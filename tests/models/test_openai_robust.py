"""``OpenAIChatModel`` against the shapes real servers send (spec/models.md §Call ids,
§OpenAIChatModel, §Errors): whatever arrives ends as a normal answer or a ``turn/end{error}``
with a documented code, never a crashed session; and what the user saw is kept."""

from __future__ import annotations

from typing import Any

import trio

from trio_agent.log import check_events
from trio_agent.models import OpenAIChatModel
from trio_agent.runtime import open_agent
from trio_agent.store import Session
from trio_agent.testing.provider import Play, Provider, serve_provider, text_events
from trio_agent.tools.builtin import EchoTool

HANG_GUARD = 60


def model(provider: Provider, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(provider.url, "m", api_key="", **kwargs)


def choice(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def repeating_call(name: str, arguments: str, call_id: str, pieces: int = 3) -> list[Any]:
    """llama-cpp-python's shape: every fragment repeats the id and the whole name."""
    step = -(-len(arguments) // pieces)
    parts = [arguments[i : i + step] for i in range(0, len(arguments), step)]
    return [
        choice({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                "function": {"name": name, "arguments": part}}]})
        for part in parts
    ]  # fmt: skip


async def run_turns(plays: list[Play], *messages: str, **kwargs: Any) -> tuple[Session, Provider]:
    session = Session.in_memory()
    async with serve_provider(plays) as provider:
        adapter = model(provider, **kwargs)
        async with open_agent(session, model=adapter, tools=[EchoTool()]) as agent:
            for message in messages:
                agent.followup(message)
                with trio.fail_after(HANG_GUARD):
                    await agent.wait_idle()
    assert check_events(session.events).open_turn is None  # valid and balanced
    return session, provider


def ends(session: Session) -> list[Any]:
    return [e.data["reason"] for e in session.events if e.type == "turn/end"]


def messages_of(session: Session) -> list[Any]:
    return [e.data for e in session.events if e.type == "assistant/message"]


async def test_a_name_and_id_repeated_in_every_fragment_are_taken_once() -> None:
    call = repeating_call("echo", '{"text": "once"}', "call_0")
    plays = [
        Play(events=(*call, choice({}, "tool_calls"), "[DONE]")),
        Play(events=(*text_events("ok"), "[DONE]")),
    ]
    session, provider = await run_turns(plays, "go")
    assert ends(session) == [{"kind": "completed"}]
    calls = [e.data for e in session.events if e.type == "tool/call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("echo", {"text": "once"})]
    # Step 2 sends the assistant message as servers accept it: "" beside tool_calls, and
    # the provider's own id back to it, in the call and in the tool message.
    assistant, tool = provider.requests[1]["messages"][-2:]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == "call_0"
    assert tool["tool_call_id"] == "call_0"


async def test_a_provider_that_reuses_its_call_id_every_turn() -> None:
    """The same ``call_Xy12`` in two turns used to crash the session (I10); now each call
    gets a session-unique id and the provider keeps seeing its own."""

    def calling() -> Play:
        return Play(events=(*repeating_call("echo", '{"text": "t"}', "call_Xy12", pieces=1),
                            choice({}, "tool_calls"), "[DONE]"))  # fmt: skip

    plays = [calling(), Play(events=(*text_events("one"), "[DONE]")),
             calling(), Play(events=(*text_events("two"), "[DONE]"))]  # fmt: skip
    session, provider = await run_turns(plays, "first", "second")
    assert ends(session) == [{"kind": "completed"}] * 2
    ids = [e.data["callId"] for e in session.events if e.type == "tool/result"]
    assert ids == ["call-1-1-1", "call-2-1-1"]
    blocks = [b for m in messages_of(session) for b in m["message"]["content"]]
    assert [b.get("providerId") for b in blocks if b["type"] == "tool-call"] == ["call_Xy12"] * 2
    last = provider.requests[3]["messages"]
    sent = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", ())]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert sent == answered == ["call_Xy12", "call_Xy12"]


async def test_two_calls_of_one_answer_sharing_an_id_are_sent_back_under_ours() -> None:
    shared = [
        choice({"tool_calls": [{"index": i, "id": "dup", "type": "function",
                                "function": {"name": "echo", "arguments": '{"text": "x"}'}}]})
        for i in range(2)
    ]  # fmt: skip
    plays = [Play(events=(*shared, choice({}, "tool_calls"), "[DONE]")),
             Play(events=(*text_events("ok"), "[DONE]"))]  # fmt: skip
    session, provider = await run_turns(plays, "go")
    assert ends(session) == [{"kind": "completed"}]
    messages = provider.requests[1]["messages"]
    assert [c["id"] for c in messages[-3]["tool_calls"]] == ["call-1-1-1", "call-1-1-2"]
    assert [m["tool_call_id"] for m in messages[-2:]] == ["call-1-1-1", "call-1-1-2"]


async def test_done_without_a_finish_reason_is_a_cut_answer_and_the_text_is_kept() -> None:
    cut = (choice({"content": "Half an "}), choice({"content": "answer"}), "[DONE]")
    plays = [Play(events=cut),
             Play(events=(*text_events("again"), "[DONE]"))]  # fmt: skip
    session, provider = await run_turns(plays, "one", "two")
    first, second = ends(session)
    assert first["kind"] == "error" and first["error"]["code"] == "INCOMPLETE"
    assert "[DONE] arrived before any finish_reason" in first["error"]["message"]
    assert provider.url in first["error"]["message"]
    assert "so far: 3 events" in first["error"]["message"]
    assert second == {"kind": "completed"}
    kept = messages_of(session)[0]
    assert kept["interrupted"] is True
    assert kept["message"]["content"] == [{"type": "text", "text": "Half an answer"}]
    # The next turn's transcript carries what the user saw.
    assert {"role": "assistant", "content": "Half an answer"} in provider.requests[1]["messages"]


async def test_an_empty_body_after_the_headers_says_nothing_arrived_and_where() -> None:
    session, provider = await run_turns([Play(events=())], "one")
    (end,) = ends(session)
    assert end["error"]["code"] == "INCOMPLETE"
    message = end["error"]["message"]
    assert message.startswith(f"{provider.url}/chat/completions: ")
    assert "the response ended before the answer finished" in message
    assert message.endswith("(so far: nothing arrived)")


async def test_the_server_dying_mid_stream_keeps_the_visible_text() -> None:
    plays = [Play(events=(choice({"content": "I was saying"}),), then="drop"),
             Play(events=(*text_events("again"), "[DONE]"))]  # fmt: skip
    session, provider = await run_turns(plays, "one", "two")
    first = ends(session)[0]
    assert first["error"]["code"] == "CONNECTION"
    assert (
        provider.url in first["error"]["message"] and "so far: 1 event" in first["error"]["message"]
    )
    assert messages_of(session)[0]["interrupted"] is True
    assert {"role": "assistant", "content": "I was saying"} in provider.requests[1]["messages"]


async def test_usage_after_the_finish_reason_is_logged() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    plays = [Play(events=(*text_events("hi"), {"choices": [], "usage": usage}, "[DONE]"))]
    session, provider = await run_turns(plays, "one")
    assert ends(session) == [{"kind": "completed"}]
    chunks = [e.data["chunk"] for e in session.events if e.type == "assistant/chunk"]
    assert chunks[-2:] == [{"type": "usage", **usage}, {"type": "finish", "reason": "stop"}]
    assert provider.requests[0]["stream_options"] == {"include_usage": True}


async def test_a_failure_after_the_finish_reason_loses_nothing() -> None:
    plays = [Play(events=text_events("whole"), then="drop")]
    session, _ = await run_turns(plays, "one")
    assert ends(session) == [{"kind": "completed"}]
    assert messages_of(session)[0]["message"]["content"] == [{"type": "text", "text": "whole"}]


async def test_tool_choice_is_settable() -> None:
    plays = [Play(events=(*text_events("a"), "[DONE]")), Play(events=(*text_events("b"), "[DONE]"))]
    _, provider = await run_turns(plays, "one", tool_choice="required")
    assert provider.requests[0]["tool_choice"] == "required"
    _, provider = await run_turns(plays[1:], "one", tool_choice=None, include_usage=False)
    assert "tool_choice" not in provider.requests[0]
    assert "stream_options" not in provider.requests[0]


async def test_steps_per_turn_are_bounded() -> None:
    from trio_agent.models import Limits

    call = repeating_call("echo", '{"text": "again"}', "c", pieces=1)
    looping = Play(events=(*call, choice({}, "tool_calls"), "[DONE]"))
    session = Session.in_memory()
    async with serve_provider([], default=looping) as provider:
        limited = model(provider, limits=Limits(steps=3))
        async with open_agent(session, model=limited, tools=[EchoTool()]) as agent:
            agent.followup("loop")
            with trio.fail_after(HANG_GUARD):
                await agent.wait_idle()
        assert len(provider.requests) == 3  # the fourth step made no request
    (end,) = ends(session)
    assert end["error"]["code"] == "LIMIT" and "Limits.steps" in end["error"]["message"]
    assert check_events(session.events).open_turn is None
