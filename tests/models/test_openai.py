"""``OpenAIChatModel`` against a real HTTP server on 127.0.0.1 (trio_agent.testing.provider):
streaming, tool calls assembled from deltas, the request mapping, every error class, and a
cancel that closes the socket (spec/models.md)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from trio_agent.log import check_events
from trio_agent.models import ModelRequest
from trio_agent.models.openai import OpenAIChatModel
from trio_agent.models.openai_wire import request_body
from trio_agent.runtime import CancelCause, open_agent
from trio_agent.store import Session
from trio_agent.testing.provider import (
    Play,
    Provider,
    serve_provider,
    text_events,
    tool_call_events,
)
from trio_agent.tools.builtin import EchoTool
from trio_agent.tools.subprocess_tool import BashTool

#: A hang guard only: every wait below is for an event that comes; this bounds a bug.
HANG_GUARD = 60


def model(provider: Provider, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(provider.url, "test-model", api_key="k-test", **kwargs)


def results(session: Session) -> list[dict[str, Any]]:
    return [dict(e.data) for e in session.events if e.type == "tool/result"]


def turn_end(session: Session) -> dict[str, Any]:
    reasons = [e.data["reason"] for e in session.events if e.type == "turn/end"]
    return dict(reasons[-1])


async def test_a_two_step_turn_with_a_tool_call_split_over_deltas() -> None:
    plays = [
        Play(events=(*tool_call_events("echo", '{"text": "hi there"}', pieces=4, text="Let me "),
                     "[DONE]")),
        Play(events=(*text_events("It said hi there."), "[DONE]")),
    ]  # fmt: skip
    session = Session.in_memory()
    async with serve_provider(plays) as provider:
        async with open_agent(session, model=model(provider), tools=[EchoTool()]) as agent:
            agent.followup("say hi")
            with trio.fail_after(HANG_GUARD):
                await agent.wait_idle()
        first, second = provider.requests
    assert check_events(session.events).open_turn is None  # valid and balanced
    assert turn_end(session) == {"kind": "completed"}
    calls = [e.data for e in session.events if e.type == "tool/call"]
    # Our session-unique id; the provider's own is kept beside it and sent back to it.
    assert calls == [{"turn": 1, "step": 1, "callId": "call-1-1-1", "name": "echo",
                      "arguments": {"text": "hi there"}}]  # fmt: skip
    message = next(e.data for e in session.events if e.type == "assistant/message")
    assert message["message"]["content"][1]["providerId"] == "call_1"
    # The first request: system prompt first, the user message, the tool advertised.
    assert first["stream"] is True and first["model"] == "test-model"
    assert first["messages"][-1] == {"role": "user", "content": "say hi"}
    assert first["tools"][0]["function"]["name"] == "echo"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["text"]
    assert first["tool_choice"] == "auto" and first["stream_options"] == {"include_usage": True}
    # The second carries the assistant's tool_calls and the tool's answer.
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me "
    assert assistant["tool_calls"] == [{"id": "call_1", "type": "function",
        "function": {"name": "echo", "arguments": '{"text":"hi there"}'}}]  # fmt: skip
    # The tool message: what the call printed, then its result (spec/models.md).
    printed = [e.data["text"] for e in session.events if e.type == "tool/output"]
    assert printed == ["hi there"]
    assert tool == {"role": "tool", "tool_call_id": "call_1",
                    "content": "hi there\n" + results(session)[0]["content"]}  # fmt: skip


async def test_cancel_mid_stream_closes_the_socket_and_keeps_the_prefix() -> None:
    plays = [
        Play(events=(_delta("partial "), _delta("answer")), then="hang"),
        Play(events=(*text_events("fine"), "[DONE]")),
    ]
    session = Session.in_memory()
    streamed = trio.Event()

    def on_event(event: Any) -> None:
        if event.type == "assistant/chunk" and event.data["chunk"].get("text") == "answer":
            streamed.set()

    session.subscribe(on_event)
    async with serve_provider(plays) as provider:
        async with open_agent(session, model=model(provider), tools=[EchoTool()]) as agent:
            agent.followup("go")
            with trio.fail_after(HANG_GUARD):
                await streamed.wait()
                assert not provider.connections[0].closed.is_set()
                assert agent.cancel(CancelCause.user())
                # The server sees the connection closed: the stream is not left draining.
                await provider.connections[0].closed.wait()
                await agent.wait_idle()
                agent.followup("again")
                await agent.wait_idle()
        second = provider.requests[1]
    assert check_events(session.events).open_turn is None  # valid and balanced
    interrupted = next(e.data for e in session.events if e.type == "assistant/message")
    assert interrupted["interrupted"] is True
    assert interrupted["message"]["content"] == [{"type": "text", "text": "partial answer"}]
    assert [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"] == [
        "aborted",
        "completed",
    ]
    # The next turn's request carries the visible prefix.
    assert {"role": "assistant", "content": "partial answer"} in second["messages"]


async def test_cancel_mid_drip_closes_the_socket() -> None:
    """A stream that never ends (a delta every millisecond): the cancel still closes it, and
    the server stamps the close when it reads end-of-file."""
    plays = [Play(events=(_delta("a"),), then="drip", every=0.001, drip_text="b")]
    session = Session.in_memory()
    streamed = trio.Event()
    seen = 0

    def on_event(event: Any) -> None:
        nonlocal seen
        if event.type == "assistant/chunk" and event.data["chunk"].get("text") == "b":
            seen += 1
            if seen == 3:
                streamed.set()

    session.subscribe(on_event)
    async with (
        serve_provider(plays) as provider,
        open_agent(session, model=model(provider), tools=[EchoTool()]) as agent,
    ):
        agent.followup("go")
        with trio.fail_after(HANG_GUARD):
            await streamed.wait()
            conn = provider.connections[0]
            assert not conn.closed.is_set() and conn.closed_at is None
            assert agent.cancel(CancelCause.user())
            await conn.closed.wait()
            await agent.wait_idle()
    assert conn.closed_at is not None
    assert check_events(session.events).open_turn is None
    interrupted = next(e.data for e in session.events if e.type == "assistant/message")
    text = interrupted["message"]["content"][0]["text"]
    assert interrupted["interrupted"] is True and text.startswith("abbb") and set(text[1:]) == {"b"}


def _delta(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


ERRORS = [
    (Play(status=429, body=b'{"error": {"message": "slow down"}}',
          headers=(("retry-after", "7"),)), "HTTP_429", "slow down (retry-after: 7)"),
    (Play(status=500, body=b"upstream\nfailed"), "HTTP_500", "upstream failed"),
    (Play(events=({"error": {"message": "model overloaded", "code": "overloaded"}},)),
     "PROVIDER_ERROR", "model overloaded (overloaded)"),
    # The code is shown as the provider sent it, whatever its shape: never refused, so the
    # provider's message is never lost to a BAD_STREAM about its code.
    (Play(events=({"error": {"message": "boom", "code": 429}},)), "PROVIDER_ERROR", "boom (429)"),
    (Play(events=({"error": {"message": "boom", "code": {"x": 1}}},)), "PROVIDER_ERROR",
     'boom ({"x":1})'),
    (Play(events=({"error": {"message": "boom", "code": True}},)), "PROVIDER_ERROR",
     "boom (true)"),
    (Play(events=({"error": {"message": "boom", "code": "rate\nlimited"}},)), "PROVIDER_ERROR",
     "boom (rate limited)"),
    (Play(events=("{not json",)), "BAD_STREAM", "not JSON"),
    (Play(events=({"choices": [{"index": 0, "delta": {"content": 5}}]},)), "BAD_STREAM",
     "content"),
    (Play(events=({"choices": "abc"},)), "BAD_STREAM", "expected an array, got str 'abc'"),
    (Play(events=tool_call_events("echo", '["a list"]')), "BAD_STREAM", "not a JSON object"),
    (Play(events=(_delta("half"),), then="drop"), "CONNECTION", ""),
    (Play(events=(_delta("half"),)), "INCOMPLETE", "ended before the answer finished"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("play", "code", "says"), ERRORS, ids=[f"{e[1]}-{i}" for i, e in enumerate(ERRORS)]
)
async def test_each_error_ends_the_turn_with_its_code_and_the_agent_goes_on(
    play: Play, code: str, says: str
) -> None:
    session = Session.in_memory()
    async with (
        serve_provider([play]) as provider,
        open_agent(session, model=model(provider), tools=[EchoTool()]) as agent,
    ):
        agent.followup("one")
        agent.followup("two")  # the default play answers it
        with trio.fail_after(HANG_GUARD):
            await agent.wait_idle()
    assert check_events(session.events).open_turn is None  # valid and balanced
    ends = [e.data["reason"] for e in session.events if e.type == "turn/end"]
    assert ends[0]["kind"] == "error" and ends[0]["error"]["code"] == code
    assert says in ends[0]["error"]["message"] and "\n" not in ends[0]["error"]["message"]
    assert ends[1] == {"kind": "completed"}


async def test_a_usage_object_cannot_pose_as_another_chunk() -> None:
    """spec/models.md §OpenAIChatModel: ``usage`` becomes a usage chunk (logged, otherwise ignored),
    whatever keys the provider put in it; a ``type`` among them does not make it a tool call."""
    forged = {"type": "tool-call", "id": "x", "name": "echo", "arguments": {"text": "forged"}}
    usage = {"prompt_tokens": 3, **forged}
    plays = [Play(events=({**_delta("hi"), "usage": usage}, *text_events("!")[1:], "[DONE]"))]
    session = Session.in_memory()
    async with (
        serve_provider(plays) as provider,
        open_agent(session, model=model(provider), tools=[EchoTool()]) as agent,
    ):
        agent.followup("one")
        with trio.fail_after(HANG_GUARD):
            await agent.wait_idle()
    assert check_events(session.events).open_turn is None
    assert turn_end(session) == {"kind": "completed"}
    assert [e.type for e in session.events if e.type.startswith("tool/")] == []
    assert len(provider.requests) == 1  # one step: nothing was called


async def test_refused_connection_and_timeout() -> None:
    async with serve_provider() as provider:
        url = provider.url
    session = Session.in_memory()
    gone = OpenAIChatModel(url, "m", api_key="")  # nobody listens there any more
    async with open_agent(session, model=gone, tools=[]) as agent:
        agent.followup("x")
        with trio.fail_after(HANG_GUARD):
            await agent.wait_idle()
    assert turn_end(session)["error"]["code"] == "CONNECTION"
    session = Session.in_memory()
    async with serve_provider([Play(events=(_delta("slow"),), then="hang")]) as provider:
        slow = model(provider, timeout=0.2)  # the provider never sends another byte
        async with open_agent(session, model=slow, tools=[]) as agent:
            agent.followup("x")
            with trio.fail_after(HANG_GUARD):
                await agent.wait_idle()
    assert turn_end(session)["error"]["code"] == "TIMEOUT"


def test_the_request_mapping() -> None:
    placeholder = "The bash call c1 was recorded as started, but ... Do not retry blindly."
    request = ModelRequest(
        turn=2,
        step=1,
        system="You are terse.",
        messages=(
            {"role": "user", "id": "m1", "text": "run it", "source": "user"},
            {"role": "assistant", "id": "a", "interrupted": False, "content": [
                {"type": "tool-call", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}]},
            {"role": "tool", "callId": "c1", "content": placeholder, "isError": True,
             "code": "TOOL_OUTCOME_UNKNOWN"},
            {"role": "assistant", "id": "b", "interrupted": True,
             "content": [{"type": "text", "text": "I was"}]},
        ),
        tools=("bash",),
        tool_specs=({"name": "bash", "description": "run", "parameters": {"type": "object"}},),
    )  # fmt: skip
    body = request_body(request, "m", max_tokens=100, extra_body={"temperature": 0})
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command":"ls"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": placeholder},
        {"role": "assistant", "content": "I was"},
    ]  # fmt: skip
    assert body["tools"] == [
        {"type": "function", "function": {"name": "bash", "description": "run",
                                          "parameters": {"type": "object"}}}
    ]  # fmt: skip
    assert body["max_tokens"] == 100 and body["temperature"] == 0 and body["stream"] is True
    assert body["tool_choice"] == "auto"
    assert "tool_choice" not in request_body(request, "m", tool_choice=None)
    no_tools = attrs.evolve(request, tools=(), tool_specs=())
    assert "tool_choice" not in request_body(no_tools, "m")


async def test_bash_output_reaches_the_model() -> None:
    plays = [
        Play(events=(*tool_call_events("bash", '{"command": "echo from-bash; exit 3"}'), "[DONE]")),
        Play(events=(*text_events("done"), "[DONE]")),
    ]
    session = Session.in_memory()
    async with serve_provider(plays) as provider:
        async with open_agent(session, model=model(provider), tools=[BashTool()]) as agent:
            agent.followup("x")
            with trio.fail_after(HANG_GUARD):
                await agent.wait_idle()
        tool = provider.requests[1]["messages"][-1]
    assert tool["role"] == "tool"
    assert "from-bash" in tool["content"] and "exit code 3" in tool["content"]
