"""The tool protocol: what the turn loop hands a tool, and what a tool hands back.

A tool body runs inside the turn's nursery, so it is cancelled by trio's ordinary
cooperative cancellation when the turn's controller is cancelled (spec/cancel.md, "Tools").
A body that is cancelled must not return until everything it started has stopped; the
loop writes ``tool/result{ABORTED}`` only after ``run`` has raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import attrs

from ..cancel import ControllerView

Stream = Literal["stdout", "stderr"]


@attrs.frozen
class ToolCall:
    """One requested call, as the model asked for it (the ``tool-call`` content block)."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@attrs.frozen
class ToolOutcome:
    """What a finished body reports; the loop turns it into ``tool/result``."""

    content: str
    is_error: bool = False
    #: Only ``TOOL_FAILED`` is meaningful from a tool; the other codes belong to the loop/repair.
    error_code: str | None = None


class ToolContext(Protocol):
    """Handed to ``Tool.run``. Appends go through the session, outside the turn's cancel scope."""

    @property
    def turn(self) -> int: ...

    @property
    def step(self) -> int: ...

    @property
    def call_id(self) -> str: ...

    @property
    def controller(self) -> ControllerView: ...

    def output(self, stream: Stream, text: str) -> None:
        """Append one ``tool/output`` event (synchronous, never blocks)."""

    def spawned(
        self, pgid: int, identity: str, *, containment: str | None = None, owner: str | None = None
    ) -> None:
        """Append ``tool/spawned``; called once, right after the call's processes exist, with
        the containment they got and the runtime that owns them (spec/log.md §``tool/spawned``)."""

    def abort_detail(self, text: str) -> None:
        """Record what was observed while stopping (goes into the ``ABORTED`` result's content)."""

    async def flush(self) -> None:
        """Make everything appended so far durable (a checkpoint; may raise a write error).

        A subprocess tool awaits it after ``spawned`` and before letting the process run, so
        crash recovery can always find the group (spec/tools.md, "Spawn gate")."""


class Tool(Protocol):
    """A tool. ``parallel`` tools of one step may run concurrently; others run alone."""

    @property
    def name(self) -> str: ...

    @property
    def parallel(self) -> bool: ...

    async def run(self, call: ToolCall, ctx: ToolContext) -> ToolOutcome: ...
