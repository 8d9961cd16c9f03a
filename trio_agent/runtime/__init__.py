"""The trio runtime: the agent, its driver, the per-turn controller, the turn/step loop,
tool scheduling and approvals (spec/cancel.md)."""

from ..cancel import CANCEL_KINDS, CancelCause, CancelKind, ControllerView
from .agent import DEFAULT_SHUTDOWN_TIMEOUT, Agent, EventStream, open_agent
from .controller import TurnContext, TurnController
from .events import (
    AgentError,
    InboxDropped,
    RuntimeEvent,
    Status,
    StatusChanged,
    TurnEnded,
    TurnOutcome,
    TurnPrevented,
    TurnStarted,
)
from .hooks import AllowAll, Approver, Hooks, Reject, new_message

__all__ = [
    "CANCEL_KINDS",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "Agent",
    "AgentError",
    "AllowAll",
    "Approver",
    "CancelCause",
    "CancelKind",
    "ControllerView",
    "EventStream",
    "Hooks",
    "InboxDropped",
    "Reject",
    "RuntimeEvent",
    "Status",
    "StatusChanged",
    "TurnContext",
    "TurnController",
    "TurnEnded",
    "TurnOutcome",
    "TurnPrevented",
    "TurnStarted",
    "new_message",
    "open_agent",
]
