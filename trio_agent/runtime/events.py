"""Runtime events: what an agent tells its observers (never written to the log).

The log says *what happened*; runtime events add *who asked for it*: every turn outcome and
every inbox drop carries the :class:`~trio_agent.cancel.CancelCause` that caused it,
which the log deliberately does not record (spec/cancel.md K4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from ..cancel import CancelCause

__all__ = [
    "AgentError",
    "InboxDropped",
    "RuntimeEvent",
    "Status",
    "StatusChanged",
    "TurnEnded",
    "TurnOutcome",
    "TurnPrevented",
    "TurnStarted",
]

Status = Literal["idle", "running"]
OutcomeKind = Literal["completed", "max-tokens", "blocked", "aborted", "error"]


@attrs.frozen(slots=True)
class TurnOutcome:
    """How a turn ended, at runtime.

    ``reason`` is the ``turn/end`` reason kind written to the log. ``cause`` is the first cancel
    cause of the turn's controller (the very object passed to ``cancel``), set exactly when
    ``reason`` is ``"aborted"``. ``error`` is ``{"code", "message"}`` when the turn ended
    ``error``, and also when a real failure raced the cancel of an aborted turn (the log keeps
    only ``aborted``; spec/cancel.md K19).
    """

    turn: int
    reason: OutcomeKind
    cause: CancelCause | None = None
    error: Mapping[str, str] | None = None


@attrs.frozen(slots=True)
class StatusChanged:
    """``running`` after a woken agent has its controller and before ``turn/start``;
    ``idle`` after the last ``turn/end`` of a run is durable."""

    status: Status


@attrs.frozen(slots=True)
class TurnStarted:
    turn: int


@attrs.frozen(slots=True)
class TurnEnded:
    outcome: TurnOutcome


@attrs.frozen(slots=True)
class TurnPrevented:
    """A controller was cancelled before its turn started: no turn was written.

    ``parked`` is how many queued messages stay in the inbox for a later wake.
    """

    cause: CancelCause
    parked: int


@attrs.frozen(slots=True)
class InboxDropped:
    """``cancel`` removed queued messages (a durable ``outcome: "canceled"`` splice)."""

    target: Literal["next-turn", "next-step"]
    messages: tuple[Mapping[str, Any], ...]
    cause: CancelCause


@attrs.frozen(slots=True)
class AgentError:
    """A failure that is not a turn outcome (a failed flush checkpoint, a hook that broke
    outside a turn). ``exception`` is the original exception."""

    message: str
    exception: BaseException | None = attrs.field(default=None, eq=False)


RuntimeEvent = StatusChanged | TurnStarted | TurnEnded | TurnPrevented | InboxDropped | AgentError
