"""Subprocess tools: a command run as its own process group (spec/tools.md §11).

``SubprocessTool`` adapts :func:`~trio_agent.tools.procgroup.run_group` to the ``Tool``
protocol of :mod:`trio_agent.tools.base`; ``BashTool`` is the ``bash -c <command>`` instance.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .base import ToolCall, ToolContext, ToolOutcome
from .procgroup import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_GRACE,
    DEFAULT_MAX_OUTPUT_BYTES,
    GroupResult,
    run_group,
)

__all__ = ["ArgvBuilder", "BadArguments", "BashTool", "SubprocessTool"]

TOOL_FAILED = "TOOL_FAILED"


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


def _stopping(result: GroupResult, grace: float) -> str:
    """How the group was stopped, in words (shared by timeout and cancel reports)."""
    n = _processes(len(result.members_seen))
    if not result.term_sent:
        text = "the process group had already exited"
    elif result.kill_needed:
        text = (
            f"SIGTERM sent to {n}; some ignored it for the {grace:g}s grace, so SIGKILL was needed"
        )
    else:
        text = f"SIGTERM sent to {n}; all exited within the {grace:g}s grace, no SIGKILL needed"
    if result.exit_signal is not None:
        text += f"; the command was ended by {_signal_name(result.exit_signal)}"
    elif result.exit_code is not None:
        text += f"; the command exited with code {result.exit_code}"
    return text


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
    """Runs a command as its own process group (spec/tools.md §2–§8, §11).

    ``argv`` is a fixed command line or a builder from the call's arguments; a builder
    reports unusable arguments by raising :class:`BadArguments`, which becomes a
    ``TOOL_FAILED`` outcome rather than an exception.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str] | ArgvBuilder,
        *,
        parallel: bool = False,
        grace: float = DEFAULT_GRACE,
        timeout: float | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        #: What a model is told about the tool (spec/models.md §Tools).
        self.description = description or f"Run {name}."
        self.parameters: Mapping[str, Any] = parameters or {"type": "object"}
        if isinstance(argv, str):
            # A str is a Sequence too; splitting it into characters would be a silent bug.
            raise TypeError(f"tool {name!r}: argv must be a list of str or a builder, not a str")
        self._name = name
        self._argv = argv
        self._parallel = parallel
        self.grace = grace
        self.timeout = timeout
        self.chunk_bytes = chunk_bytes
        self.max_output_bytes = max_output_bytes
        self.cwd = cwd
        self.env = env

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

        Every path ends with the whole group gone: a return carries the summary, a cancel
        records what was observed via ``ctx.abort_detail`` before the exception propagates.
        """
        try:
            argv = self._build_argv(call.arguments)
        except BadArguments as exc:
            return self._failed(f"{self._name}: bad arguments: {exc}")

        def on_abort(result: GroupResult) -> None:
            # Only a cancel or a failing callback gets here; both leave the group stopped.
            head = f"stopped process group {result.pgid}: {_stopping(result, self.grace)}"
            ctx.abort_detail("; ".join([head, *_caveats(result, self.max_output_bytes)]))

        try:
            result = await run_group(
                argv,
                on_spawned=ctx.spawned,
                on_output=ctx.output,
                on_abort=on_abort,
                ready=ctx.flush,
                grace=self.grace,
                timeout=self.timeout,
                chunk_bytes=self.chunk_bytes,
                max_output_bytes=self.max_output_bytes,
                cwd=self.cwd,
                env=self.env,
            )
        except OSError as exc:
            # Raised by the spawn itself (no such program, bad cwd): nothing was started.
            return self._failed(f"{self._name}: could not start {argv[0]!r}: {exc.strerror}")
        return self._outcome(result)

    def _outcome(self, result: GroupResult) -> ToolOutcome:
        notes = _caveats(result, self.max_output_bytes)
        if result.timed_out:
            head = f"timed out after {self.timeout or 0:g}s; {_stopping(result, self.grace)}"
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
    """``bash``: arguments ``{"command": str}``, runs ``bash -c command`` (spec/tools.md §11)."""

    def __init__(
        self,
        *,
        grace: float = DEFAULT_GRACE,
        timeout: float | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            "bash",
            _bash_argv,
            description=(
                "Run a bash command line in its own process group and answer with its exit "
                "status and what it printed (stdout and stderr, bounded)."
            ),
            parameters={
                "type": "object",
                "properties": {"command": {"type": "string", "description": "run by bash -c"}},
                "required": ["command"],
            },
            grace=grace,
            timeout=timeout,
            chunk_bytes=chunk_bytes,
            max_output_bytes=max_output_bytes,
            cwd=cwd,
            env=env,
        )
