"""Recorded shapes of the servers people run (spec/models.md §Compatibility), each replayed by
the loopback provider to ``OpenAIChatModel``: the turn ends as the table says and the log
stays valid. Each test names the server whose shape it replays."""

from __future__ import annotations

from typing import Any

import trio

from trio_agent.log import check_events
from trio_agent.models import OpenAIChatModel
from trio_agent.runtime import open_agent
from trio_agent.store import Session
from trio_agent.testing.provider import Play, serve_provider
from trio_agent.tools.builtin import EchoTool

HANG_GUARD = 60
DONE = "[DONE]"


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [choice], **extra}  # fmt: skip


def answer(text: str) -> Play:
    return Play(events=(chunk({"role": "assistant", "content": text}), chunk({}, "stop"), DONE))


async def replay(*plays: Play, turns: int = 1) -> tuple[Session, list[dict[str, Any]]]:
    session = Session.in_memory()
    async with serve_provider(list(plays)) as provider:
        model = OpenAIChatModel(provider.url, "m", api_key="")
        async with open_agent(session, model=model, tools=[EchoTool()]) as agent:
            for n in range(turns):
                agent.followup(f"message {n + 1}")
                with trio.fail_after(HANG_GUARD):
                    await agent.wait_idle()
        requests = provider.requests
    assert check_events(session.events).open_turn is None
    return session, requests


def ends(session: Session) -> list[Any]:
    return [e.data["reason"] for e in session.events if e.type == "turn/end"]


def calls(session: Session) -> list[tuple[str, Any, Any]]:
    return [(e.data["name"], e.data["arguments"], e.data["callId"])
            for e in session.events if e.type == "tool/call"]  # fmt: skip


def chunks(session: Session) -> list[Any]:
    return [e.data["chunk"] for e in session.events if e.type == "assistant/chunk"]


async def test_openai() -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}
    shape = Play(events=(
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"tool_calls": [{"index": 0, "id": "call_qY", "type": "function",
                               "function": {"name": "echo", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"te'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'xt":"a"}'}}]}),
        chunk({}, "tool_calls"),
        {**chunk({}), "choices": [], "usage": usage},
        DONE,
    ))  # fmt: skip
    session, requests = await replay(shape, answer("done"))
    assert ends(session) == [{"kind": "completed"}]
    assert calls(session) == [("echo", {"text": "a"}, "call-1-1-1")]
    assert {"type": "usage", **usage} in chunks(session)
    assert requests[1]["messages"][-2]["tool_calls"][0]["id"] == "call_qY"


async def test_openai_error_mid_stream() -> None:
    shape = Play(events=(chunk({"content": "Part"}),
                         {"error": {"message": "The server had an error", "type": "server_error",
                                    "code": None}}))  # fmt: skip
    session, _ = await replay(shape)
    (end,) = ends(session)
    assert end["error"]["code"] == "PROVIDER_ERROR"
    assert "The server had an error" in end["error"]["message"]


async def test_vllm_error_after_the_headers_both_shapes() -> None:
    current = Play(events=(chunk({"content": "x"}),
                           {"error": {"message": "engine dead", "type": "InternalServerError",
                                      "param": None, "code": 500}}, DONE))  # fmt: skip
    bare = {"object": "error", "message": "out of memory", "type": "InternalServerError",
            "param": None, "code": 500}  # fmt: skip
    older = Play(events=(bare, DONE))
    session, _ = await replay(current, older, turns=2)
    first, second = ends(session)
    assert first["error"]["code"] == second["error"]["code"] == "PROVIDER_ERROR"
    assert "engine dead (500)" in first["error"]["message"]
    assert "out of memory (500)" in second["error"]["message"]


async def test_vllm_tool_call_ids() -> None:
    shape = Play(events=(
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"id": "chatcmpl-tool-9f", "type": "function", "index": 0,
                               "function": {"name": "echo"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"text": "v"}'}}]}),
        chunk({}, "tool_calls"), DONE,
    ))  # fmt: skip
    session, requests = await replay(shape, answer("ok"))
    assert calls(session) == [("echo", {"text": "v"}, "call-1-1-1")]
    assert requests[1]["messages"][-1]["tool_call_id"] == "chatcmpl-tool-9f"


async def test_llama_cpp_server() -> None:
    shape = Play(events=(
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "Kx3", "type": "function",
             "function": {"name": "echo", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"text"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "l"}'}}]}),
        chunk({}, "tool_calls", usage={"completion_tokens": 9, "prompt_tokens": 40,
                                       "total_tokens": 49},
              timings={"prompt_n": 40, "predicted_per_second": 31.5}),
        DONE,
    ))  # fmt: skip
    session, _ = await replay(shape, answer("ok"))
    assert ends(session) == [{"kind": "completed"}]
    assert calls(session) == [("echo", {"text": "l"}, "call-1-1-1")]


async def test_llama_cpp_python_repeats_and_cut_stream() -> None:
    def fragment(arguments: str) -> dict[str, Any]:
        function = {"name": "echo", "arguments": arguments}
        call = {"index": 0, "id": "call__0_echo_cmpl-3e", "type": "function", "function": function}
        return chunk({"tool_calls": [call]})

    repeats = Play(events=(fragment('{"text": '), fragment('"r"}'), chunk({}, "tool_calls"), DONE))
    cut = Play(events=(chunk({"content": "I will"}), chunk({"content": " now"}), DONE))
    session, requests = await replay(repeats, answer("ran"), cut, turns=2)
    first, second = ends(session)
    assert first == {"kind": "completed"}
    assert calls(session) == [("echo", {"text": "r"}, "call-1-1-1")]
    assistant = requests[1]["messages"][-2]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "echo"
    assert second["error"]["code"] == "INCOMPLETE"
    kept = [e.data for e in session.events if e.type == "assistant/message"][-1]
    assert kept["interrupted"] is True and kept["message"]["content"][0]["text"] == "I will now"


async def test_ollama_whole_calls_without_index_and_stop() -> None:
    def whole(call_id: str, text: str) -> dict[str, Any]:
        return {"id": call_id, "type": "function",
                "function": {"name": "echo", "arguments": f'{{"text":"{text}"}}'}}  # fmt: skip

    shape = Play(events=(
        chunk({"role": "assistant", "content": "", "tool_calls": [whole("call_a", "1")]}),
        chunk({"role": "assistant", "content": "", "tool_calls": [whole("call_b", "2")]}),
        chunk({"role": "assistant", "content": ""}, "stop"), DONE,
    ))  # fmt: skip
    session, _ = await replay(shape, answer("both"))
    assert ends(session) == [{"kind": "completed"}]
    assert [c[:2] for c in calls(session)] == [("echo", {"text": "1"}), ("echo", {"text": "2"})]
    finishes = [c for c in chunks(session) if c["type"] == "finish"]
    assert finishes[0] == {"type": "finish", "reason": "tool-calls"}


async def test_ollama_id_reused_across_turns() -> None:
    call = {"id": "call_0", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    again = Play(events=(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), DONE))
    session, _ = await replay(again, answer("a"), again, answer("b"), turns=2)
    assert ends(session) == [{"kind": "completed"}] * 2
    assert [c[2] for c in calls(session)] == ["call-1-1-1", "call-2-1-1"]


async def test_lm_studio() -> None:
    shape = Play(events=(
        chunk({"role": "assistant", "content": "Sure. "}),
        chunk({"tool_calls": [{"index": 0, "id": "365174485", "type": "function",
                               "function": {"name": "echo", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "type": "function",
                               "function": {"arguments": '{"text":"s"}'}}]}),
        chunk({}, "tool_calls"), DONE,
    ))  # fmt: skip
    session, _ = await replay(shape, answer("ok"))
    assert calls(session) == [("echo", {"text": "s"}, "call-1-1-1")]


async def test_litellm_index_zero_and_object_arguments() -> None:
    def call(call_id: str, city: str) -> dict[str, Any]:
        return {"index": 0, "id": call_id, "type": "function",
                "function": {"name": "echo", "arguments": {"text": city}}}  # fmt: skip

    shape = Play(events=(chunk({"tool_calls": [call("call_1", "Paris")]}),
                         chunk({"tool_calls": [call("call_2", "Rome")]}),
                         chunk({}, "stop"), DONE))  # fmt: skip
    session, requests = await replay(shape, answer("ok"))
    assert [c[:2] for c in calls(session)] == [
        ("echo", {"text": "Paris"}),
        ("echo", {"text": "Rome"}),
    ]
    sent = requests[1]["messages"][-3]["tool_calls"]
    assert [c["id"] for c in sent] == ["call_1", "call_2"]


async def test_openrouter_comments_and_error_event() -> None:
    comments = b": OPENROUTER PROCESSING\n\n" * 3
    failed = {**chunk({"content": ""}, "error"),
              "error": {"code": 502, "message": "Provider disconnected"}}  # fmt: skip
    shape = Play(preamble=comments, events=(chunk({"content": "Hel"}), failed, DONE))
    session, _ = await replay(shape, Play(preamble=comments, events=answer("fine").events),
                              turns=2)  # fmt: skip
    first, second = ends(session)
    assert first["error"]["code"] == "PROVIDER_ERROR"
    assert "Provider disconnected (502)" in first["error"]["message"]
    assert second == {"kind": "completed"}
