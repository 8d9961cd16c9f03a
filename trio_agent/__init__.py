"""trio_agent: what happens to an AI agent's turn on Esc, on ``kill -9``, and on reopening.

Layers, each importing only those below it (spec/README.md):

* :mod:`trio_agent.log` -- the pure core: format v1, ``LogChecker``, repair, truncate, fold;
* :mod:`trio_agent.store` -- durable JSONL sessions, write-behind, cold-only repair;
* :mod:`trio_agent.models`, :mod:`trio_agent.tools` -- the model and tool protocols, the
  scripted model, in-process tools and process-group subprocess tools;
* :mod:`trio_agent.runtime` -- the agent: per-turn controllers, typed cancel, the turn loop.

The names below are the public contract; the subpackages hold the rest.
"""

from .log import (
    ConsumedWork,
    Event,
    LogChecker,
    LogViolation,
    TruncateReport,
    fold_consumed_work,
    repair_closers,
    truncate_open_turn,
)
from .models import Model, ModelError, ModelRequest, ScriptedModel
from .runtime import (
    Agent,
    AgentError,
    AllowAll,
    Approver,
    CancelCause,
    Hooks,
    InboxDropped,
    Reject,
    RuntimeEvent,
    StatusChanged,
    TurnContext,
    TurnController,
    TurnEnded,
    TurnOutcome,
    TurnPrevented,
    TurnStarted,
    new_message,
    open_agent,
)
from .store import (
    JsonlStore,
    LiveTurnOpen,
    RepairReport,
    Session,
    SessionCorrupt,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StoreError,
    UnsupportedFormat,
    repair_file,
)
from .tools.base import Tool, ToolCall, ToolContext, ToolOutcome
from .tools.builtin import EchoTool, SleepTool
from .tools.subprocess_tool import BashTool, SubprocessTool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentError",
    "AllowAll",
    "Approver",
    "BashTool",
    "CancelCause",
    "ConsumedWork",
    "EchoTool",
    "Event",
    "Hooks",
    "InboxDropped",
    "JsonlStore",
    "LiveTurnOpen",
    "LogChecker",
    "LogViolation",
    "Model",
    "ModelError",
    "ModelRequest",
    "Reject",
    "RepairReport",
    "RuntimeEvent",
    "ScriptedModel",
    "Session",
    "SessionCorrupt",
    "SessionExists",
    "SessionLocked",
    "SessionNotFound",
    "SleepTool",
    "StatusChanged",
    "StoreError",
    "SubprocessTool",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolOutcome",
    "TruncateReport",
    "TurnContext",
    "TurnController",
    "TurnEnded",
    "TurnOutcome",
    "TurnPrevented",
    "TurnStarted",
    "UnsupportedFormat",
    "fold_consumed_work",
    "new_message",
    "open_agent",
    "repair_closers",
    "repair_file",
    "truncate_open_turn",
]
