"""``TurnController``: the cancel wire of one turn, and the context every seam receives.

One controller per turn (spec/cancel.md K1-K3). It owns the turn's :class:`trio.CancelScope`,
created up front so that a cancel issued before the turn starts already reaches it, and it
records the first cause it is given (first wins). The agent drops its reference to a turn's
controller before that turn's ``turn/end`` is appended and closes it; a closed controller
ignores ``cancel``, so a stale reference cannot reach any later turn, which has its own.

Seams never get the controller itself: they get a :class:`TurnContext` whose ``controller``
is a read-only view (``cancel_called``, ``cause``, ``turn``). Cancelling is the agent's job
(``agent.cancel``); a hook that wants to stop its turn calls that with a ``hook`` cause.
"""

from __future__ import annotations

from typing import final

import attrs
import trio

from ..cancel import CancelCause, ControllerView, require_cause

__all__ = ["TurnContext", "TurnController"]


@final
class TurnController:
    """The cancel wire of one turn: a cancel scope plus the first cause that cancelled it."""

    __slots__ = ("_cause", "_closed", "_scope", "_turn", "_view")

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._cause: CancelCause | None = None
        self._turn: int | None = None
        self._closed = False
        self._view = _View(self)

    @property
    def cancel_called(self) -> bool:
        """True once a cause was recorded (the scope is then cancelled)."""
        return self._cause is not None

    @property
    def cause(self) -> CancelCause | None:
        """The first cause given to :meth:`cancel` (the very object), or ``None``."""
        return self._cause

    @property
    def turn(self) -> int | None:
        """The turn this controller governs, once its ``turn/start`` is written."""
        return self._turn

    @property
    def closed(self) -> bool:
        """True once the turn handed off (its ``turn/end`` is being or has been written)."""
        return self._closed

    @property
    def view(self) -> ControllerView:
        """The read-only view handed to seams."""
        return self._view

    def cancel(self, cause: CancelCause) -> bool:
        """Record ``cause`` and cancel the scope; return True if this call did it.

        The first cause wins; a later call changes nothing. A closed controller ignores the
        call (its turn is over), which is what makes a stale reference harmless.
        """
        require_cause(cause)
        if self._closed or self._cause is not None:
            return False
        self._cause = cause
        self._scope.cancel(reason=cause.describe())
        return True

    # -- used by the agent only -----------------------------------------------------------------

    @property
    def scope(self) -> trio.CancelScope:
        return self._scope

    def bind(self, turn: int) -> None:
        self._turn = turn

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        state = "closed" if self._closed else "live"
        cause = "" if self._cause is None else f" cancelled by {self._cause.describe()}"
        return f"<TurnController turn={self._turn} {state}{cause}>"


@final
class _View:
    __slots__ = ("_controller",)

    def __init__(self, controller: TurnController) -> None:
        self._controller = controller

    @property
    def cancel_called(self) -> bool:
        return self._controller.cancel_called

    @property
    def cause(self) -> CancelCause | None:
        return self._controller.cause

    @property
    def turn(self) -> int | None:
        return self._controller.turn

    def __repr__(self) -> str:
        return f"<controller view of {self._controller!r}>"


@attrs.frozen(slots=True)
class TurnContext:
    """What every seam of a turn receives, explicitly (spec/cancel.md K9).

    ``step`` is the step the seam belongs to (for the pre-step hook: the step about to start).
    """

    turn: int
    step: int
    controller: ControllerView
