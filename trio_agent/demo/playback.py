"""A scenario's steps and where playing them stands: pure, no trio, no I/O.

A :class:`Scenario` is a setup and a tuple of :class:`Step` (a label, the caption saying what
the step adds to the log or drops from it, and the action run on a
:class:`~trio_agent.demo.engine.Run`). A :class:`Playback` holds where playing them stands:
how many steps are done, which one runs, how far the user asked to go (``step``: one more,
``play``: all of them, ``pause``: stop after the running one), and whether the run failed.
The :class:`~trio_agent.demo.engine.Driver` runs the actions and moves the playback along (this
module never imports the engine: a scenario is generic in what its actions run on);
:meth:`Playback.to_json` is the part of the snapshot that shows the steps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs

__all__ = ["Action", "Playback", "Scenario", "Step"]

#: What an action runs on: the engine's ``Run`` (this module does not import the engine,
#: which imports it).
RunT = TypeVar("RunT")

#: One step's work, run on the scenario's run.
Action = Callable[[RunT], Awaitable[None]]


@attrs.frozen
class Step(Generic[RunT]):
    label: str
    caption: str
    action: Action[RunT]


@attrs.frozen
class Scenario(Generic[RunT]):
    name: str
    title: str
    summary: str
    setup: Action[RunT]
    steps: tuple[Step[RunT], ...]


@attrs.define
class Playback:
    """Where playing ``total`` steps stands (see the module docstring).

    The commands (:meth:`step`, :meth:`play`, :meth:`pause`) only change the intent
    (:attr:`target`, :attr:`playing`) and say whether the driver should look again; the
    driver reports what it did with :meth:`begin`, :meth:`finish` and :meth:`fail`.
    """

    total: int
    completed: int = 0
    #: Run steps until this many are done.
    target: int = 0
    #: The index of the step running now.
    running: int | None = None
    playing: bool = False
    #: The scenario's setup has finished.
    ready: bool = False
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.completed >= self.total

    @property
    def wants_step(self) -> bool:
        """More steps are asked for than are done: between steps, the driver begins the next."""
        return self.completed < self.target

    # -- commands ----------------------------------------------------------------------------------

    def step(self) -> bool:
        """Ask for the next step (ignored while one runs, when playing, done or failed)."""
        if self.running is None and not self.playing and not self.done and self.error is None:
            self.target = self.completed + 1
            return True
        return False

    def play(self) -> bool:
        """Ask for every remaining step (ignored when done or failed)."""
        if not self.done and self.error is None:
            self.playing = True
            self.target = self.total
            return True
        return False

    def pause(self) -> None:
        """Stop after the running step, if any."""
        self.playing = False
        self.target = self.completed + (1 if self.running is not None else 0)

    # -- what the driver did -----------------------------------------------------------------------

    def begin(self) -> int:
        """The next step starts running; return its index."""
        self.running = self.completed
        return self.running

    def finish(self) -> None:
        """The running step finished (playing stops after the last one)."""
        self.running = None
        self.completed += 1
        if self.done:
            self.playing = False

    def fail(self, error: str) -> None:
        """The run cannot go on: nothing runs or plays any more."""
        self.error = error
        self.running = None
        self.playing = False

    # -- the snapshot ------------------------------------------------------------------------------

    def to_json(self, scenario: Scenario[Any]) -> dict[str, Any]:
        """The scenario, its steps (``done``, ``running`` or ``pending``) and the current one:
        the running step, else the last one done."""
        current = self.running if self.running is not None else self.completed - 1
        steps = []
        for i, step in enumerate(scenario.steps):
            state = "done" if i < self.completed else "running" if i == self.running else "pending"
            steps.append({"label": step.label, "caption": step.caption, "state": state})
        caption = None
        if 0 <= current < len(scenario.steps):
            caption = {"index": current, "label": scenario.steps[current].label}
        return {
            "scenario": {
                "name": scenario.name,
                "title": scenario.title,
                "summary": scenario.summary,
            },
            "steps": steps,
            "current": caption,
            "completed": self.completed,
            "running": self.running,
            "playing": self.playing,
            "ready": self.ready,
            "done": self.done,
            "error": self.error,
        }
