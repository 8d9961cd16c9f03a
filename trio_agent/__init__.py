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
* :mod:`trio_agent.stop_signals` -- the signals that ask a command to stop, and which of them
  it heeds (one it was started with ignored, as under ``nohup``, stays ignored);
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
    stop_signals -
    procs        log
    store        log files procs
    tools        log cancel procs
    models       log cancel boundary
    runtime      log cancel failures store tools models
    testing      log cancel boundary procs store tools models runtime
    demo         log cancel boundary failures stop_signals procs store tools models runtime
    package      log cancel store tools models runtime
    cli          * (the command line may import any layer and the package)

A store looks for orphans on every cold open with ``trio_agent.procs.reap_orphans`` (below
both the store and the tools), unless its opener passes ``reap_orphans=None``.

The names below are the public contract; the subpackages hold the rest.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The public names, spelled once: ``__all__`` and the lazy imports below are read from
    # these lines (``_exports``), and type checkers read them as re-exports.
    from .cancel import CancelCause as CancelCause
    from .log import (
        ConsumedWork as ConsumedWork,
        Event as Event,
        Header as Header,
        LogChecker as LogChecker,
        LogViolation as LogViolation,
        Scan as Scan,
        TruncateReport as TruncateReport,
        fold_consumed_work as fold_consumed_work,
        repair_closers as repair_closers,
        scan_log as scan_log,
        truncate_open_turn as truncate_open_turn,
    )
    from .log.render import render_timeline as render_timeline
    from .models import (
        Model as Model,
        ModelError as ModelError,
        ModelRequest as ModelRequest,
        ScriptedModel as ScriptedModel,
    )
    from .runtime import (
        Agent as Agent,
        AgentError as AgentError,
        AllowAll as AllowAll,
        Approver as Approver,
        Hooks as Hooks,
        InboxDropped as InboxDropped,
        Reject as Reject,
        RuntimeEvent as RuntimeEvent,
        StatusChanged as StatusChanged,
        TurnContext as TurnContext,
        TurnController as TurnController,
        TurnEnded as TurnEnded,
        TurnOutcome as TurnOutcome,
        TurnPrevented as TurnPrevented,
        TurnStarted as TurnStarted,
        new_message as new_message,
        open_agent as open_agent,
    )
    from .store import (
        JsonlStore as JsonlStore,
        LiveTurnOpen as LiveTurnOpen,
        RepairReport as RepairReport,
        Session as Session,
        SessionCorrupt as SessionCorrupt,
        SessionExists as SessionExists,
        SessionLocked as SessionLocked,
        SessionNotFound as SessionNotFound,
        StoreError as StoreError,
        UnsupportedFormat as UnsupportedFormat,
        repair_file as repair_file,
    )
    from .tools.base import (
        Tool as Tool,
        ToolCall as ToolCall,
        ToolContext as ToolContext,
        ToolOutcome as ToolOutcome,
    )
    from .tools.builtin import EchoTool as EchoTool, SleepTool as SleepTool
    from .tools.subprocess_tool import BashTool as BashTool, SubprocessTool as SubprocessTool


def _exports() -> dict[str, str]:
    """Public name -> the submodule defining it, read from the ``TYPE_CHECKING`` imports
    above: the one place the names are spelled."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    return {
        alias.name: "." * node.level + (node.module or "")
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


#: Public name -> the submodule defining it. Imported on first use (PEP 562), so the file
#: commands (``trio-agent check``) start without importing trio, the store or the runtime.
_EXPORTS: dict[str, str] = _exports()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_agent' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = sorted(_EXPORTS)
