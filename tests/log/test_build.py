"""Every event constructor of ``trio_agent.log.build`` yields data the log's schema accepts
(spec/log.md), under the type it names."""

from __future__ import annotations

import pytest

from trio_agent.log import build
from trio_agent.log.build import Draft
from trio_agent.log.schema import validate_data

MESSAGE = {"id": "m-1", "text": "hi", "source": "followup"}

DRAFTS: dict[str, Draft] = {
    "turn_start": build.turn_start(1),
    "turn_end": build.turn_end(1, "completed"),
    "turn_end_error": build.turn_end(1, "error", {"code": "UNKNOWN", "message": "boom"}),
    "step_start": build.step_start(1, 1),
    "step_end": build.step_end(1, 2),
    "inbox_inserted": build.inbox_inserted("next-turn", 0, MESSAGE),
    "inbox_claimed": build.inbox_claimed("next-step", 2),
    "inbox_cleared": build.inbox_cleared("next-turn", 1),
    "user_message": build.user_message(1, 1, MESSAGE),
    "assistant_chunk": build.assistant_chunk(1, 1, {"type": "text-delta", "text": "a"}),
    "assistant_message": build.assistant_message(
        1,
        1,
        "a-1-1",
        [
            {"type": "text", "text": "a"},
            {"type": "tool-call", "id": "c1", "name": "bash", "arguments": {}},
        ],
    ),
    "assistant_message_interrupted": build.assistant_message(
        1, 1, "a-1-1", [{"type": "text", "text": "a"}], interrupted=True
    ),
    "approval_asked": build.approval_asked(1, 1, "approval-c1", "c1", "bash"),
    "approval_decided": build.approval_decided(1, 1, "approval-c1", "allowed"),
    "tool_call": build.tool_call(1, 1, "c1", "bash", {"cmd": "true"}),
    "tool_output": build.tool_output(1, 1, "c1", "stdout", "x"),
    "tool_spawned": build.tool_spawned(1, 1, "c1", 42, "boot:1"),
    "tool_result": build.tool_result(1, 1, "c1", "ok", is_error=False, code=None),
    "tool_result_error": build.tool_result(1, 1, "c1", "no", is_error=False, code="DENIED"),
}


def test_every_constructor_is_exercised() -> None:
    named = {name.split("_error")[0].split("_interrupted")[0] for name in DRAFTS}
    assert named == set(build.__all__) - {"Draft"}


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_a_constructor_builds_data_the_schema_accepts(name: str) -> None:
    type_, data = DRAFTS[name]
    assert name.startswith(type_.replace("agent/", "").replace("/", "_").split("_spliced")[0])
    validate_data(type_, data)


def test_an_error_code_makes_a_result_an_error_and_interrupted_is_only_written_when_true() -> None:
    assert DRAFTS["tool_result_error"][1]["isError"] is True
    assert DRAFTS["tool_result_error"][1]["error"] == {"code": "DENIED"}
    assert "interrupted" not in DRAFTS["assistant_message"][1]
    assert DRAFTS["assistant_message_interrupted"][1]["interrupted"] is True
    assert "error" not in DRAFTS["turn_end"][1]["reason"]
