"""A refusal of the session makes the turn loop fatal for good; a chunk refused under rule
I0 is the model's fault and is not fatal (spec/cancel.md K14, K20)."""

from __future__ import annotations

import pytest

from trio_agent.log.errors import LogViolation
from trio_agent.models import ModelError, ScriptedModel
from trio_agent.runtime.hooks import Hooks
from trio_agent.runtime.turn import TurnRunner
from trio_agent.store import Session


def runner_in_a_step() -> TurnRunner:
    session = Session.in_memory()
    runner = TurnRunner(session, ScriptedModel(), {}, None, Hooks(), lambda event: None)
    runner.append("turn/start", {"turn": 1})
    runner.append("step/start", {"turn": 1, "step": 1})
    return runner


def test_a_chunk_refused_under_i0_fails_the_turn_but_is_not_fatal() -> None:
    runner = runner_in_a_step()
    with pytest.raises(ModelError) as info:
        runner._append_chunk(1, 1, {"type": "usage", "tokens": {1, 2}})  # a set is not JSON
    assert info.value.code == "BAD_CHUNK"
    assert runner.fatal is None
    runner._append_chunk(1, 1, {"type": "text-delta", "text": "fine"})
    assert runner.session.events[-1].type == "assistant/chunk"


def test_fatal_is_sticky() -> None:
    runner = runner_in_a_step()
    with pytest.raises(LogViolation):
        runner._append_chunk(2, 1, {"type": "text-delta", "text": "x"})  # not the open turn
    first = runner.fatal
    assert isinstance(first, LogViolation)
    before = len(runner.session.events)
    with pytest.raises(RuntimeError, match="already failed"):
        runner._append_chunk(1, 1, {"type": "text-delta", "text": "x"})
    with pytest.raises(RuntimeError, match="already failed"):
        runner.append("step/end", {"turn": 1, "step": 1})
    assert runner.fatal is first and len(runner.session.events) == before
