"""``AnthropicModel`` against a real HTTP server on 127.0.0.1 replaying the Messages API's
event stream (spec/models.md §AnthropicModel): text and tool_use blocks, the request mapping,
stop reasons, error and ping events, the shared error codes and bounds, and a cancel that
closes the socket."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from trio_agent.log import check_events
from trio_agent.models import AnthropicModel, Limits, ModelRequest
from trio_agent.models.anthropic_wire import request_body
from trio_agent.runtime import CancelCause, open_agent
from trio_agent.store import Session
from trio_agent.testing.provider import Play, Provider, anthropic_events, serve_provider
from trio_agent.tools.builtin import EchoTool

HANG_GUARD = 60


def model(provider: Provider, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(provider.url, "claude-test", api_key="sk-test", **kwargs)


async def run_turns(plays: list[Play], *messages: str, **kwargs: Any) -> tuple[Session, Provider]:
    session = Session.in_memory()
    async with serve_provider(plays) as provider:
        adapter = model(provider, **kwargs)
        async with open_agent(session, model=adapter, tools=[EchoTool()]) as agent:
            for message in messages:
                agent.followup(message)
                with trio.fail_after(HANG_GUARD):
                    await agent.wait_idle()
    assert check_events(session.events).open_turn is None
    return session, provider


def ends(session: Session) -> list[Any]:
    return [e.data["reason"] for e in session.events if e.type == "turn/end"]


async def test_a_tool_turn_over_the_messages_api() -> None:
    plays = [
        Play(named=True, events=anthropic_events(
            "Let me echo.", calls=(("toolu_01", "echo", '{"text": "hi there"}'),))),
        Play(named=True, events=anthropic_events("It said hi there.")),
    ]  # fmt: skip
    session, provider = await run_turns(plays, "say hi")
    assert ends(session) == [{"kind": "completed"}]
    calls = [e.data for e in session.events if e.type == "tool/call"]
    assert [(c["callId"], c["name"], c["arguments"]) for c in calls] == [
        ("call-1-1-1", "echo", {"text": "hi there"})
    ]
    chunks = [e.data["chunk"]["type"] for e in session.events if e.type == "assistant/chunk"]
    assert chunks.count("usage") == 4  # message_start and message_delta, both steps
    first, second = provider.requests
    assert first["model"] == "claude-test" and first["stream"] is True
    assert first["max_tokens"] == 4096 and first["tool_choice"] == {"type": "auto"}
    assert "system" not in first  # no system prompt was assembled: none is sent
    assert first["messages"] == [{"role": "user", "content": [{"type": "text", "text": "say hi"}]}]
    assert first["tools"][0]["name"] == "echo"
    assert first["tools"][0]["input_schema"]["required"] == ["text"]
    assistant, results = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": [
        {"type": "text", "text": "Let me echo."},
        {"type": "tool_use", "id": "toolu_01", "name": "echo",
         "input": {"text": "hi there"}}]}  # fmt: skip
    (result,) = results["content"]
    assert results["role"] == "user" and result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_01" and result["content"].startswith("hi there\n")


async def test_the_headers_carry_the_key_and_the_version() -> None:
    plays = [Play(named=True, events=anthropic_events("ok"))]
    session, provider = await run_turns(plays, "x")
    assert ends(session) == [{"kind": "completed"}]
    headers = provider.connections[0].headers
    assert headers["x-api-key"] == "sk-test" and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def test_the_request_mapping_merges_roles_and_puts_results_first() -> None:
    request = ModelRequest(
        turn=2, step=2, system="Be brief.",
        messages=(
            {"role": "user", "id": "m1", "text": "run two", "source": "user"},
            {"role": "assistant", "id": "a", "interrupted": False, "content": [
                {"type": "tool-call", "id": "call-1-1-1", "name": "echo",
                 "arguments": {"text": "a"}, "providerId": "toolu_a"},
                {"type": "tool-call", "id": "call-1-1-2", "name": "echo", "arguments": {}}]},
            {"role": "tool", "callId": "call-1-1-1", "content": "a", "isError": False,
             "code": None},
            {"role": "user", "id": "m2", "text": "and hurry", "source": "steer"},
            {"role": "tool", "callId": "call-1-1-2", "content": "", "isError": True,
             "code": "ABORTED"},
            {"role": "assistant", "id": "b", "interrupted": True,
             "content": [{"type": "text", "text": "I was "}]},
            {"role": "user", "id": "m3", "text": "go on", "source": "user"},
        ),
        tools=("echo",),
    )  # fmt: skip
    body = request_body(request, "m", max_tokens=100, tool_choice={"type": "auto"})
    assert body["system"] == "Be brief." and body["max_tokens"] == 100
    assert body["tools"] == [{"name": "echo", "description": "",
                              "input_schema": {"type": "object"}}]  # fmt: skip
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "run two"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_a", "name": "echo", "input": {"text": "a"}},
            {"type": "tool_use", "id": "call-1-1-2", "name": "echo", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a"},
            {"type": "tool_result", "tool_use_id": "call-1-1-2", "content": "(no output)",
             "is_error": True},
            {"type": "text", "text": "and hurry"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "I was"}]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
    ]  # fmt: skip


def error_event(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


START = anthropic_events("")[:2]  # message_start, ping
TEXT = anthropic_events("partial")[2:4]  # a text block start and its first delta

ERRORS = [
    (Play(status=529, body=b'{"type": "error", "error": {"type": "overloaded_error", '
          b'"message": "Overloaded"}}'), "HTTP_529", "Overloaded"),
    (Play(named=True, events=(*START, *TEXT, error_event("Overloaded", "overloaded_error"))),
     "PROVIDER_ERROR", "Overloaded (overloaded_error)"),
    (Play(named=True, events=(*START, *TEXT)), "INCOMPLETE", "so far: 4 events"),
    (Play(named=True, events=(*START, *TEXT, {"type": "message_stop"})), "INCOMPLETE",
     "message_stop arrived before any stop_reason"),
    (Play(named=True, events=(*START, *TEXT), then="drop"), "CONNECTION", "so far: 4 events"),
    (Play(named=True, events=(*START, {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": 5}})),
     "BAD_STREAM", "text"),
    (Play(named=True, events=anthropic_events(calls=(("t", "echo", "[1]"),))), "BAD_STREAM",
     "not a JSON object"),
    (Play(named=True, events=anthropic_events("no", stop="refusal")), "PROVIDER_ERROR",
     "refused"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("play", "code", "says"), ERRORS, ids=[f"{e[1]}-{i}" for i, e in enumerate(ERRORS)]
)
async def test_each_error_ends_the_turn_with_its_code(play: Play, code: str, says: str) -> None:
    plays = [play, Play(named=True, events=anthropic_events("fine"))]
    session, provider = await run_turns(plays, "one", "two")
    first, second = ends(session)
    assert first["kind"] == "error" and first["error"]["code"] == code, first
    assert says in first["error"]["message"] and provider.url in first["error"]["message"]
    assert second == {"kind": "completed"}


async def test_stop_reasons() -> None:
    plays = [Play(named=True, events=anthropic_events("cut", stop="max_tokens")),
             Play(named=True, events=anthropic_events("done", stop="stop_sequence"))]  # fmt: skip
    session, _ = await run_turns(plays, "one", "two")
    assert [e["kind"] for e in ends(session)] == ["max-tokens", "completed"]


async def test_pings_do_not_keep_the_idle_timeout_alive() -> None:
    pings = tuple({"type": "ping"} for _ in range(3))
    plays = [Play(named=True, events=(*START, *pings), then="hang")]
    session, _ = await run_turns(plays, "one", limits=Limits(idle=0.3))
    (end,) = ends(session)
    assert end["error"]["code"] == "TIMEOUT" and "no event for 0.3s" in end["error"]["message"]


async def test_a_reused_tool_use_id_gets_a_fresh_call_id() -> None:
    def calling() -> Play:
        return Play(named=True, events=anthropic_events(calls=(("toolu_same", "echo", "{}"),)))

    plays = [calling(), Play(named=True, events=anthropic_events("a")),
             calling(), Play(named=True, events=anthropic_events("b"))]  # fmt: skip
    session, provider = await run_turns(plays, "one", "two")
    assert ends(session) == [{"kind": "completed"}] * 2
    assert [e.data["callId"] for e in session.events if e.type == "tool/result"] == [
        "call-1-1-1", "call-2-1-1"]  # fmt: skip
    users = [m for m in provider.requests[3]["messages"] if m["role"] == "user"]
    results = [b["tool_use_id"] for m in users for b in m["content"] if "tool_use_id" in b]
    assert results == ["toolu_same", "toolu_same"]


async def test_cancel_mid_stream_closes_the_socket_and_keeps_the_prefix() -> None:
    plays = [Play(named=True, events=(*START, *TEXT), then="drip", drip_text="b"),
             Play(named=True, events=anthropic_events("fine"))]  # fmt: skip
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
            assert not conn.closed.is_set()
            assert agent.cancel(CancelCause.user())
            await conn.closed.wait()
            await agent.wait_idle()
            agent.followup("again")
            await agent.wait_idle()
        again = provider.requests[1]["messages"]
    assert check_events(session.events).open_turn is None
    kept = next(e.data for e in session.events if e.type == "assistant/message")
    text = kept["message"]["content"][0]["text"]
    assert kept["interrupted"] is True and text.startswith("parbbb")
    assert again[1] == {"role": "assistant", "content": [{"type": "text", "text": text}]}
