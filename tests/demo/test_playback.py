"""Where playing a scenario stands: the pure step bookkeeping the driver moves along.

The commands only change the intent (how far to go, whether to play on); what the driver did
(begin, finish, fail) moves the playback. No trio: every transition is checked directly.
"""

from __future__ import annotations

from trio_agent.demo.engine import Run
from trio_agent.demo.playback import Playback, Scenario, Step
from trio_agent.demo.scenarios import SCENARIOS


async def nothing(run: Run) -> None:
    """An action that does nothing (the playback never runs actions)."""


SCENARIO = Scenario(
    name="two",
    title="Two steps",
    summary="A scenario of two steps.",
    setup=nothing,
    steps=(Step("First", "The first step.", nothing), Step("Second", "The second.", nothing)),
)


def test_step_asks_for_one_step_and_is_ignored_while_it_runs() -> None:
    p = Playback(2)
    assert not p.wants_step and not p.done
    assert p.step() and p.target == 1 and p.wants_step
    assert p.begin() == 0 and p.running == 0
    assert not p.step() and p.target == 1  # ignored while a step runs
    p.finish()
    assert (p.completed, p.running, p.wants_step) == (1, None, False)
    assert p.step() and p.begin() == 1
    p.finish()
    assert p.done and not p.step() and not p.play()


def test_play_runs_to_the_end_and_stops_there() -> None:
    p = Playback(2)
    assert p.play() and p.playing and p.target == 2
    assert not p.step()  # ignored while playing
    p.begin()
    p.finish()
    assert p.playing and p.wants_step
    p.begin()
    p.finish()
    assert p.done and not p.playing and not p.wants_step


def test_pause_stops_after_the_running_step() -> None:
    p = Playback(3)
    p.play()
    p.begin()
    p.pause()
    assert not p.playing and p.target == 1  # the running step still finishes
    p.finish()
    assert not p.wants_step
    p.pause()
    assert p.target == 1  # nothing running: stay where we are


def test_a_failure_stops_everything_and_refuses_commands() -> None:
    p = Playback(2)
    p.play()
    p.begin()
    p.fail("gave up after 30s waiting for a step")
    assert (p.error, p.running, p.playing) == ("gave up after 30s waiting for a step", None, False)
    assert not p.step() and not p.play()


def test_to_json_shows_the_steps_and_the_current_caption() -> None:
    p = Playback(2)
    shown = p.to_json(SCENARIO)
    assert shown["scenario"] == {"name": "two", "title": "Two steps", "summary": SCENARIO.summary}
    assert [s["state"] for s in shown["steps"]] == ["pending", "pending"]
    assert shown["current"] is None and not shown["done"] and not shown["ready"]
    p.ready = True
    p.step()
    p.begin()
    shown = p.to_json(SCENARIO)
    assert [s["state"] for s in shown["steps"]] == ["running", "pending"]
    assert shown["current"] == {"index": 0, "label": "First"} and shown["running"] == 0
    p.finish()
    shown = p.to_json(SCENARIO)  # between steps the caption is the last one done
    assert [s["state"] for s in shown["steps"]] == ["done", "pending"]
    assert shown["current"] == {"index": 0, "label": "First"} and shown["running"] is None
    assert shown["steps"][1] == {"label": "Second", "caption": "The second.", "state": "pending"}
    assert set(shown) == {
        "scenario",
        "steps",
        "current",
        "completed",
        "running",
        "playing",
        "ready",
        "done",
        "error",
    }


def test_every_scenario_is_played_by_its_own_step_count() -> None:
    for scenario in SCENARIOS.values():
        p = Playback(len(scenario.steps))
        p.play()
        for i in range(len(scenario.steps)):
            assert p.begin() == i
            p.finish()
        assert p.done and len(p.to_json(scenario)["steps"]) == len(scenario.steps)
