"""The agent's run state: status, the live controller, the run's latest one, the wake latch.

:class:`RunState` holds the four things the cancel rules of spec/cancel.md K1-K8 talk about,
and every transition between them is one method citing its rule. It awaits nothing, emits
nothing and touches no session: :class:`~trio_agent.runtime.agent.Agent` calls it, then emits
the runtime event and wakes the driver. (Its controllers own a ``trio.CancelScope``, which is
created and cancelled without a running trio loop; the state itself never enters one.)

* ``status``: ``"idle"`` or ``"running"``; a woken agent is running before its turn starts.
* ``controller``: the live controller (the running turn's, or the next turn's once woken);
  the one ``cancel`` reaches.
* ``activity``: the controller of the run's latest turn, kept after its hand-off, so that a
  send while that turn unwinds knows it lands *after an abort* (K8).
* ``latch``: a wake sent after an abort, replayed when the run ends (K8).
"""

from __future__ import annotations

from typing import Literal

from ..cancel import CancelCause
from .controller import TurnController
from .events import Status

__all__ = ["RunState", "Target"]

Target = Literal["next-turn", "next-step"]


class RunState:
    """The run state of one agent (see the module docstring)."""

    __slots__ = ("activity", "controller", "latch", "status")

    def __init__(self) -> None:
        self.status: Status = "idle"
        self.controller: TurnController | None = None
        self.activity: TurnController | None = None
        self.latch = False

    # -- reads ----------------------------------------------------------------------------------

    @property
    def after_abort(self) -> bool:
        """K8: the run's latest controller is cancelled and the agent is not idle yet."""
        activity = self.activity
        return self.status == "running" and activity is not None and activity.cancel_called

    @staticmethod
    def steer_target(after_abort: bool) -> Target:
        """K8: a steer after an abort is queued next-turn (its own turn), else next-step."""
        return "next-turn" if after_abort else "next-step"

    # -- transitions ----------------------------------------------------------------------------

    def start(self) -> TurnController:
        """K1: waking an idle agent creates the turn's controller at once, and the agent is
        running from this call on (the driver starts the turn afterwards)."""
        controller = TurnController()
        self.controller = self.activity = controller
        self.status = "running"
        return controller

    def wake(self, after_abort: bool) -> bool:
        """K1, K8: a waking call (``followup``, ``steer``; the caller has checked that the
        agent is not closing, K22). True when the agent is idle: the caller starts a run
        (:meth:`start`). A running agent's run takes the message itself (K21), unless the run
        was aborted: then the wake is latched (:meth:`latch_wake`), replayed when it ends."""
        if self.status == "idle":
            return True
        if after_abort:
            self.latch_wake()
        return False

    def latch_wake(self) -> None:
        """K8: a wake after an abort is latched, unless the cancel's cause is ``disposed``
        (the caller has already checked the agent is not shutting down)."""
        activity = self.activity
        cause = activity.cause if activity is not None else None
        if cause is not None and cause.kind != "disposed":
            self.latch = True

    def forget_latch(self) -> None:
        """K5 step 1 (a cancel that clears the inbox) and K13 (a lost session): no replay."""
        self.latch = False

    def cancel(self, cause: CancelCause) -> bool:
        """K5 step 2 / K3: cancel the live controller, if any; True if this call did it (an
        idle agent has none, so an idle cancel arms nothing, K5)."""
        controller = self.controller
        return controller is not None and controller.cancel(cause)

    def handoff(self, controller: TurnController, aborted: bool) -> None:
        """K7: the turn's work stopped, its ``turn/end`` comes next. Close its controller; if
        it was not cancelled install the next turn's (K1), else the run ends (K8: parked)."""
        controller.close()
        if aborted:
            self.controller = None
        else:
            self.controller = self.activity = TurnController()

    def prevent(self, controller: TurnController) -> CancelCause:
        """K2: a controller cancelled before its ``turn/start`` is discarded; no turn is
        written. Returns its cause (for ``TurnPrevented``)."""
        self.controller = None
        controller.close()
        assert controller.cause is not None
        return controller.cause

    def go_idle(self) -> bool:
        """K3, K8: the run is over. Its controllers are closed and dropped, the agent is idle;
        returns whether a latched wake is to be replayed."""
        self.retire()
        self.status = "idle"
        return self.take_latch()

    def retire(self) -> None:
        """K3: close the live controller (a stale reference then ignores ``cancel``) and drop
        both references."""
        controller = self.controller
        if controller is not None:
            controller.close()
        self.controller = self.activity = None

    def take_latch(self) -> bool:
        """K8: consume the latch (a replay starts one run, once)."""
        replay, self.latch = self.latch, False
        return replay

    def abandon(self) -> None:
        """The driver task ended without finishing its run (its nursery is torn down): nobody
        may wait for an idle that would never come. The controllers go at :meth:`stop`."""
        self.status = "idle"

    def stop(self) -> None:
        """The agent is closed: idle, nothing live."""
        self.status = "idle"
        self.retire()
