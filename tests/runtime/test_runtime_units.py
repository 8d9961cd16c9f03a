"""Unit tests of the small pieces: causes, the controller, the scripted model, the transcript,
the chunk check and the in-process tools."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from trio_agent.log.events import Event
from trio_agent.models import (
    ModelError,
    ModelRequest,
    ScriptedModel,
    Transcript,
    check_chunk,
    split_text,
)
from trio_agent.runtime import CANCEL_KINDS, CancelCause, TurnContext, TurnController
from trio_agent.tools.base import Stream, ToolCall
from trio_agent.tools.builtin import EchoTool, SleepTool

# -- causes ---------------------------------------------------------------------------------------


def test_the_four_causes() -> None:
    assert [c.kind for c in (CancelCause.user(), CancelCause.parent(), CancelCause.disposed())] == [
        "user",
        "parent",
        "disposed",
    ]
    hook = CancelCause.hook("over budget")
    assert (hook.kind, hook.reason) == ("hook", "over budget")
    assert hook.describe() == "hook: over budget"
    assert {"user", "parent", "hook", "disposed"} == CANCEL_KINDS


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("legacy",), {}),
        (("USER",), {}),
        ((1,), {}),
        (("hook",), {}),
        (("hook", 3), {}),
        (("user", "why"), {}),
    ],
)
def test_causes_outside_the_closed_set_are_type_errors(args: Any, kwargs: Any) -> None:
    with pytest.raises(TypeError):
        CancelCause(*args, **kwargs)


def test_cause_cannot_be_subclassed_or_mutated() -> None:
    with pytest.raises(TypeError):

        class Mine(CancelCause):  # type: ignore[misc]
            pass

    with pytest.raises(AttributeError):
        CancelCause.user().kind = "parent"  # type: ignore[misc]


# -- controller -----------------------------------------------------------------------------------


async def test_controller_first_cause_wins_and_a_closed_one_ignores_cancel() -> None:
    c = TurnController()
    assert not c.cancel_called and c.cause is None and c.turn is None
    first = CancelCause.parent()
    assert c.cancel(first) is True
    assert c.cancel(CancelCause.user()) is False
    assert c.cause is first and c.scope.cancel_called
    closed = TurnController()
    closed.close()
    assert closed.cancel(CancelCause.user()) is False
    assert closed.cause is None and not closed.scope.cancel_called
    with pytest.raises(TypeError):
        TurnController().cancel("user")


def test_the_view_is_read_only_and_live() -> None:
    c = TurnController()
    view = c.view
    assert not hasattr(view, "cancel")
    c.bind(7)
    c.cancel(CancelCause.user())
    assert (view.cancel_called, view.cause) == (True, CancelCause.user())
    assert view.turn == 7
    with pytest.raises(AttributeError):
        view.cause = None  # type: ignore[misc]


async def test_a_controller_cancelled_before_entry_cancels_at_the_first_checkpoint() -> None:
    c = TurnController()
    c.cancel(CancelCause.user())
    reached = False
    with c.scope:
        await trio.lowlevel.checkpoint()
        reached = True  # pragma: no cover
    assert not reached and c.scope.cancelled_caught


# -- scripted model -------------------------------------------------------------------------------


def request(turn: int = 1, step: int = 1) -> ModelRequest:
    return ModelRequest(turn, step, "", (), ())


def ctx(turn: int = 1, step: int = 1) -> TurnContext:
    return TurnContext(turn, step, TurnController().view)


async def collect(model: ScriptedModel, turn: int = 1, step: int = 1) -> list[Any]:
    return [dict(c) async for c in model.stream(request(turn, step), ctx(turn, step))]


def test_split_text() -> None:
    assert split_text("Running the tests") == ["Running ", "the ", "tests"]
    assert split_text(" lead  and trail ") == [" lead  ", "and ", "trail "]
    assert split_text("   ") == ["   "]
    assert split_text("") == []
    assert "".join(split_text("a\nb  c")) == "a\nb  c"


async def test_scripted_model_plays_the_documented_format(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script: list[dict[str, Any]] = [
        {
            "text": "Running the tests",
            "tool_calls": [{"name": "bash", "arguments": {"command": "make test"}}],
            "chunk_delay": 0.02,
        },
        {"text": "All green."},
    ]
    json.dumps(script)  # plain JSON-able data, shareable by ports
    model = ScriptedModel(script)
    first = await collect(model, 3, 1)
    assert first == [
        {"type": "text-delta", "text": "Running "},
        {"type": "text-delta", "text": "the "},
        {"type": "text-delta", "text": "tests"},
        {
            "type": "tool-call",
            "id": "call-3-1-1",
            "name": "bash",
            "arguments": {"command": "make test"},
        },
        {"type": "finish", "reason": "tool-calls"},
    ]
    assert await collect(model, 3, 2) == [
        {"type": "text-delta", "text": "All "},
        {"type": "text-delta", "text": "green."},
        {"type": "finish", "reason": "stop"},
    ]
    assert await collect(model, 4, 1) == [
        {"type": "text-delta", "text": "Done."},
        {"type": "finish", "reason": "stop"},
    ]
    assert model.calls == 3


async def test_scripted_model_max_tokens_error_and_explicit_ids() -> None:
    model = ScriptedModel(
        [
            {"text": "cut", "finish": "max-tokens"},
            {"text": "oops", "error": {"code": "OVERLOADED", "message": "try later"}},
            {"tool_calls": [{"name": "x", "id": "mine"}]},
        ],
        final_text="bye",
    )
    assert (await collect(model))[-1] == {"type": "finish", "reason": "max-tokens"}
    assert (await collect(model))[-1] == {
        "type": "finish",
        "reason": "error",
        "error": {"code": "OVERLOADED", "message": "try later"},
    }
    assert (await collect(model))[0] == {
        "type": "tool-call",
        "id": "mine",
        "name": "x",
        "arguments": {},
    }
    assert (await collect(model))[0] == {"type": "text-delta", "text": "bye"}


async def test_a_zero_delay_is_still_a_checkpoint_before_every_chunk() -> None:
    model = ScriptedModel([{"text": "a b c"}])
    got: list[Any] = []
    with trio.CancelScope() as scope:
        async for chunk in model.stream(request(), ctx()):
            got.append(chunk)
            scope.cancel()
    assert got == [{"type": "text-delta", "text": "a "}]
    assert scope.cancelled_caught


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("text", "must be an object"),
        ({"txt": "x"}, "unknown key"),
        ({"text": 1}, "text must be a string"),
        ({"tool_calls": {}}, "tool_calls must be a list"),
        ({"tool_calls": [{"arguments": {}}]}, "non-empty string name"),
        ({"tool_calls": [{"name": "x", "arguments": []}]}, "arguments must be an object"),
        ({"tool_calls": [{"name": "x", "id": ""}]}, "id must be a non-empty"),
        ({"tool_calls": [{"name": "x", "extra": 1}]}, "allows only"),
        ({"finish": "length"}, "finish must be"),
        ({"error": {"code": 1}}, "error must be"),
        ({"error": {"code": "a", "message": "b"}, "finish": "stop"}, "no tool_calls"),
        ({"chunk_delay": -1}, "chunk_delay"),
        ({"chunk_delay": float("nan")}, "chunk_delay"),
    ],
)
def test_script_errors_name_the_entry(entry: Any, message: str) -> None:
    with pytest.raises(ValueError, match=f"script entry 1: .*{message}"):
        ScriptedModel([{"text": "ok"}, entry])


def test_model_level_chunk_delay_is_validated() -> None:
    with pytest.raises(ValueError, match="chunk_delay"):
        ScriptedModel(chunk_delay=-0.5)


# -- chunk check and transcript -------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunk",
    [
        None,
        {"text": "no type"},
        {"type": "text-delta"},
        {"type": "tool-call", "id": "c", "name": ""},
        {"type": "tool-call", "id": "c", "name": "n", "arguments": "x"},
        {"type": "finish"},
        {"type": "finish", "reason": "error"},
    ],
)
def test_bad_chunks_are_model_errors(chunk: Any) -> None:
    with pytest.raises(ModelError) as info:
        check_chunk(chunk)
    assert info.value.code == "BAD_CHUNK"


def test_other_chunk_types_pass() -> None:
    assert check_chunk({"type": "usage", "tokens": 3}) == {"type": "usage", "tokens": 3}


def test_transcript_follows_the_log_incrementally() -> None:
    events = [
        Event(
            0,
            0,
            "user/message",
            {"turn": 1, "step": 1, "message": {"id": "m", "text": "hi", "source": "followup"}},
        ),
        Event(
            1,
            0,
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "x"}},
        ),
        Event(
            2,
            0,
            "assistant/message",
            {"turn": 1, "step": 1, "message": {"id": "a", "content": []}, "interrupted": True},
        ),
        Event(
            3,
            0,
            "tool/result",
            {
                "turn": 1,
                "step": 1,
                "callId": "c",
                "isError": True,
                "content": "no",
                "error": {"code": "DENIED"},
            },
        ),
    ]
    t = Transcript()
    t.catch_up(events[:2])
    assert [m["role"] for m in t.messages] == ["user"]
    t.catch_up(events)
    assert t.messages[1] == {"role": "assistant", "id": "a", "content": [], "interrupted": True}
    assert t.messages[2]["code"] == "DENIED"


# -- builtin tools --------------------------------------------------------------------------------


class Ctx:
    turn = 1
    step = 1
    call_id = "c"
    controller = TurnController().view

    def __init__(self) -> None:
        self.out: list[tuple[str, str]] = []
        self.details: list[str] = []

    def output(self, stream: Stream, text: str) -> None:
        self.out.append((stream, text))

    def spawned(
        self, pgid: int, identity: str, *, containment: str | None = None, owner: str | None = None
    ) -> None:  # pragma: no cover
        raise AssertionError

    def abort_detail(self, text: str) -> None:
        self.details.append(text)

    async def flush(self) -> None:
        raise AssertionError


async def test_echo_and_sleep(autojump_clock: trio.testing.MockClock) -> None:
    c = Ctx()
    out = await EchoTool().run(ToolCall("c", "echo", {"text": "hi"}), c)
    assert (out.content, c.out) == ("hi", [("stdout", "hi")])
    bad = await EchoTool().run(ToolCall("c", "echo", {"text": 3}), c)
    assert bad.is_error and bad.error_code == "TOOL_FAILED"
    slept = await SleepTool().run(ToolCall("c", "sleep", {"seconds": 2}), c)
    assert slept.content == "slept 2s"
    assert (await SleepTool().run(ToolCall("c", "sleep", {"seconds": -1}), c)).is_error
    with trio.move_on_after(1):
        await SleepTool().run(ToolCall("c", "sleep", {"seconds": 10}), c)
    assert c.details == ["sleep of 10s was interrupted"]
