"""Subprocess tools: a command run contained, as its own PID namespace or process group
(spec/tools.md §10, §11).

``SubprocessTool`` adapts :func:`~trio_agent.tools.run_group.run_group` to the ``Tool``
protocol of :mod:`trio_agent.tools.base`; ``BashTool`` is the ``bash -c <command>`` instance.
Every sentence a result or an abort detail says about stopping is one the kernel or the
tool's own ``/proc`` scans proved (spec/tools.md §11).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..procs.containment import ContainmentUnavailable
from .base import ToolCall, ToolContext, ToolOutcome
from .run_group import GroupResult, ProcessOptions, Spawned, run_group

__all__ = ["ArgvBuilder", "BadArguments", "BashTool", "ProcessOptions", "SubprocessTool"]

TOOL_FAILED = "TOOL_FAILED"

#: What the process-group fallback can and cannot prove (spec/tools.md §10).
FALLBACK_CAVEAT = (
    "every process carrying its marker was stopped; a process that cleared its environment "
    "could have survived"
)


class BadArguments(ValueError):
    """Raised by an argv builder when the call's arguments cannot make a command line."""


ArgvBuilder = Callable[[Mapping[str, Any]], Sequence[str]]


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _processes(n: int, adjective: str = "") -> str:
    noun = "process" if n == 1 else "processes"
    return f"{n} {adjective} {noun}" if adjective else f"{n} {noun}"


def _what(result: GroupResult) -> str:
    """What was stopped, named by its containment."""
    if result.containment == "pid-namespace":
        return f"the PID namespace of process {result.pgid}"
    return f"process group {result.pgid}"


def _stopping(result: GroupResult, grace: float) -> str:
    """How the call's processes were stopped, in words (shared by timeout and cancel)."""
    n = _processes(len(result.members_seen))
    namespace = result.containment == "pid-namespace"
    if not result.term_sent:
        text = "its processes had already exited"
    elif result.kill_needed:
        kill = "its PID namespace was killed" if namespace else "SIGKILL was needed"
        text = f"SIGTERM sent to {n}; some ignored it for the {grace:g}s grace, so {kill}"
    else:
        text = f"SIGTERM sent to {n}; all exited within the {grace:g}s grace, no SIGKILL needed"
    if namespace:
        # bwrap reports the command's status as a shell does (128 + a signal's number), and
        # only when the command ended by itself, not by the namespace's end.
        if result.exit_code is not None and not result.kill_needed:
            text += f"; the command exited with status {result.exit_code}"
        if result.namespace_gone:
            text += "; its PID namespace is gone (the kernel ended every process in it)"
        return text
    if result.exit_signal is not None:
        text += f"; the command was ended by {_signal_name(result.exit_signal)}"
    elif result.exit_code is not None:
        text += f"; the command exited with code {result.exit_code}"
    return f"{text}; {FALLBACK_CAVEAT}"


def _caveats(result: GroupResult, max_output_bytes: int) -> list[str]:
    notes = []
    if result.stray_members:
        notes.append(
            f"stopped {_processes(len(result.stray_members), 'background')} "
            "the command left running"
        )
    if result.escapees:
        notes.append(
            f"stopped {_processes(len(result.escapees), 'escaped')} that had left the group "
            "(setsid, setpgid or a daemonizing fork)"
        )
    if result.truncated:
        notes.append(
            f"output truncated after {max_output_bytes} bytes "
            f"(stdout {result.stdout_bytes} bytes, stderr {result.stderr_bytes} bytes)"
        )
    if result.pipes_held:
        notes.append("a process outside the group kept the output pipes open; reading stopped")
    if result.survivors:
        pids = ", ".join(map(str, result.survivors))
        notes.append(f"could not kill pids {pids} (stuck in uninterruptible sleep)")
    return notes


class SubprocessTool:
    """Runs a command contained (spec/tools.md §2–§8, §10, §11).

    ``argv`` is a fixed command line or a builder from the call's arguments; a builder
    reports unusable arguments by raising :class:`BadArguments`, which becomes a
    ``TOOL_FAILED`` outcome rather than an exception. How calls run (grace, timeout, output
    bounds, cwd, env, containment) is one :class:`ProcessOptions`, given whole as
    ``options`` or field by field as keywords (``BashTool(containment="required")``).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str] | ArgvBuilder,
        *,
        parallel: bool = False,
        options: ProcessOptions | None = None,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        #: What a model is told about the tool (spec/models.md §Tools).
        self.description = description or f"Run {name}."
        self.parameters: Mapping[str, Any] = parameters or {"type": "object"}
        if isinstance(argv, str):
            # A str is a Sequence too; splitting it into characters would be a silent bug.
            raise TypeError(f"tool {name!r}: argv must be a list of str or a builder, not a str")
        if options is not None and settings:
            raise TypeError(f"tool {name!r}: give options or its fields, not both")
        self._name = name
        self._argv = argv
        self._parallel = parallel
        self.options = options if options is not None else ProcessOptions(**settings)

    @property
    def name(self) -> str:
        return self._name

    @property
    def parallel(self) -> bool:
        return self._parallel

    def _build_argv(self, arguments: Mapping[str, Any]) -> list[str]:
        argv = list(self._argv) if isinstance(self._argv, Sequence) else self._argv(arguments)
        if not argv or not all(isinstance(a, str) for a in argv):
            # A builder bug, not the model's fault: let the loop report it as a failure.
            raise TypeError(f"tool {self._name!r}: argv must be non-empty str items: {argv!r}")
        return list(argv)

    def _failed(self, text: str) -> ToolOutcome:
        return ToolOutcome(content=text, is_error=True, error_code=TOOL_FAILED)

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome:
        """Run the command for ``call`` (spec/tools.md §11).

        Every path ends with all of the call's processes gone: a return carries the summary,
        a cancel records what was observed via ``ctx.abort_detail`` before the exception
        propagates.
        """
        try:
            argv = self._build_argv(call.arguments)
        except BadArguments as exc:
            return self._failed(f"{self._name}: bad arguments: {exc}")
        grace, max_output = self.options.grace, self.options.max_output_bytes

        def on_spawned(spawned: Spawned) -> None:
            ctx.spawned(
                spawned.pgid, spawned.identity, containment=spawned.containment, owner=spawned.owner
            )

        def on_abort(result: GroupResult) -> None:
            # Only a cancel or a failing callback gets here; both leave everything stopped.
            head = f"stopped {_what(result)}: {_stopping(result, grace)}"
            ctx.abort_detail("; ".join([head, *_caveats(result, max_output)]))

        try:
            result = await run_group(
                argv,
                on_spawned=on_spawned,
                on_output=ctx.output,
                on_abort=on_abort,
                ready=ctx.flush,
                options=self.options,
            )
        except ContainmentUnavailable as exc:
            return self._failed(f"{self._name}: not run: {exc}")
        except OSError as exc:
            # Raised by the spawn itself (no such program, bad cwd): nothing was started.
            reason = exc.strerror or str(exc)
            return self._failed(f"{self._name}: could not start {argv[0]!r}: {reason}")
        return self._outcome(result)

    def _outcome(self, result: GroupResult) -> ToolOutcome:
        notes = _caveats(result, self.options.max_output_bytes)
        if result.timed_out:
            timeout = self.options.timeout or 0
            head = f"timed out after {timeout:g}s; {_stopping(result, self.options.grace)}"
            return self._failed("; ".join([head, *notes]))
        if result.exit_signal is not None:
            head = f"killed by {_signal_name(result.exit_signal)}"
        elif result.exit_code is not None:
            head = f"exit code {result.exit_code}"
        else:
            head = "exit status unknown: the command could not be reaped"
        text = "; ".join([head, *notes])
        if result.exit_code != 0:
            return self._failed(text)
        return ToolOutcome(content=text)


def _bash_argv(arguments: Mapping[str, Any]) -> list[str]:
    if "command" not in arguments:
        raise BadArguments("missing required argument 'command' (a string)")
    command = arguments["command"]
    if not isinstance(command, str):
        raise BadArguments(f"'command' must be a string, got {type(command).__name__}")
    return ["bash", "-c", command]


class BashTool(SubprocessTool):
    """``bash``: arguments ``{"command": str}``, runs ``bash -c command`` (spec/tools.md §11).

    Takes a :class:`ProcessOptions` as ``options`` or its fields as keywords."""

    def __init__(self, *, options: ProcessOptions | None = None, **settings: Any) -> None:
        super().__init__(
            "bash",
            _bash_argv,
            description=(
                "Run a bash command line and answer with its exit status and what it printed "
                "(stdout and stderr, bounded)."
            ),
            parameters={
                "type": "object",
                "properties": {"command": {"type": "string", "description": "run by bash -c"}},
                "required": ["command"],
            },
            options=options,
            **settings,
        )
