"""trio_agent: what happens to an AI agent's turn on Esc, on ``kill -9``, and on reopening.

Layers, bottom first:

* :mod:`trio_agent.log` -- the pure core: format v1, ``LogChecker``, repair, truncate, fold;
* :mod:`trio_agent.cancel` -- the cancel vocabulary: ``CancelCause``, ``ControllerView``;
* :mod:`trio_agent.boundary` -- strict cattrs converters for the messages that cross a process
  boundary (provider payloads, the harness protocol, the demo's reports and websocket);
* :mod:`trio_agent.files` -- a session's files, trio-free: their names, the one wording that
  refuses a path that is not a regular file, the momentary shared-lock probe;
* :mod:`trio_agent.procs` -- a tool call's processes as the kernel sees them: the ``/proc``
  census, kernel containment (a PID namespace, or the process-group fallback), termination,
  and cold recovery's look for orphans;
* :mod:`trio_agent.store` -- durable JSONL sessions, write-behind, cold-only repair;
* :mod:`trio_agent.models`, :mod:`trio_agent.tools` -- the model and tool protocols, the
  scripted model, in-process tools and contained subprocess tools;
* :mod:`trio_agent.runtime` -- the agent: per-turn controllers, typed cancel, the turn loop;
* :mod:`trio_agent.testing`, :mod:`trio_agent.demo` -- the conformance kit and the demo;
* :mod:`trio_agent.spec_files` -- where the installed ``spec/`` (vectors, schemas) is;
* :mod:`trio_agent.failures` -- an exception as one line: the leaves of exception groups;
* the command line (``cli``, a package of one module per command, and ``__main__``) on top.

The layer table. A module imports only modules of its own layer and of the layers listed
for it (``-``: none); every import counts, relative or absolute, at module level or inside a
function, under ``TYPE_CHECKING`` too. ``tests/test_exports.py`` reads this table and fails on
any other import. ``package`` is this module (the public names below)::

    log          -
    cancel       -
    boundary     -
    files        -
    spec_files   -
    failures     -
    procs        log
    store        log files procs
    tools        log cancel procs
    models       log cancel boundary
    runtime      log cancel failures store tools models
    testing      log cancel boundary procs store tools models runtime
    demo         log cancel boundary failures procs store tools models runtime
    package      log cancel store tools models runtime
    cli          * (the command line may import any layer and the package)

A store looks for orphans on every cold open with ``trio_agent.procs.reap_orphans`` (below
both the store and the tools), unless its opener passes ``reap_orphans=None``.

The names below are the public contract; the subpackages hold the rest.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cancel import CancelCause
    from .log import (
        ConsumedWork,
        Event,
        Header,
        LogChecker,
        LogViolation,
        Scan,
        TruncateReport,
        fold_consumed_work,
        repair_closers,
        scan_log,
        truncate_open_turn,
    )
    from .log.render import render_timeline
    from .models import Model, ModelError, ModelRequest, ScriptedModel
    from .runtime import (
        Agent,
        AgentError,
        AllowAll,
        Approver,
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

#: Public name -> the submodule defining it. Imported on first use (PEP 562), so the file
#: commands (``trio-agent check``) start without importing trio, the store or the runtime.
_EXPORTS: dict[str, str] = {
    "Agent": ".runtime",
    "AgentError": ".runtime",
    "AllowAll": ".runtime",
    "Approver": ".runtime",
    "BashTool": ".tools.subprocess_tool",
    "CancelCause": ".cancel",
    "ConsumedWork": ".log",
    "EchoTool": ".tools.builtin",
    "Event": ".log",
    "Header": ".log",
    "Hooks": ".runtime",
    "InboxDropped": ".runtime",
    "JsonlStore": ".store",
    "LiveTurnOpen": ".store",
    "LogChecker": ".log",
    "LogViolation": ".log",
    "Model": ".models",
    "ModelError": ".models",
    "ModelRequest": ".models",
    "Reject": ".runtime",
    "RepairReport": ".store",
    "RuntimeEvent": ".runtime",
    "Scan": ".log",
    "ScriptedModel": ".models",
    "Session": ".store",
    "SessionCorrupt": ".store",
    "SessionExists": ".store",
    "SessionLocked": ".store",
    "SessionNotFound": ".store",
    "SleepTool": ".tools.builtin",
    "StatusChanged": ".runtime",
    "StoreError": ".store",
    "SubprocessTool": ".tools.subprocess_tool",
    "Tool": ".tools.base",
    "ToolCall": ".tools.base",
    "ToolContext": ".tools.base",
    "ToolOutcome": ".tools.base",
    "TruncateReport": ".log",
    "TurnContext": ".runtime",
    "TurnController": ".runtime",
    "TurnEnded": ".runtime",
    "TurnOutcome": ".runtime",
    "TurnPrevented": ".runtime",
    "TurnStarted": ".runtime",
    "UnsupportedFormat": ".store",
    "fold_consumed_work": ".log",
    "new_message": ".runtime",
    "open_agent": ".runtime",
    "render_timeline": ".log.render",
    "repair_closers": ".log",
    "repair_file": ".store",
    "scan_log": ".log",
    "truncate_open_turn": ".log",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_agent' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


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
    "Header",
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
    "Scan",
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
    "render_timeline",
    "repair_closers",
    "repair_file",
    "scan_log",
    "truncate_open_turn",
]
