"""Seams a caller can plug into the turn loop: hooks and approvals (spec/cancel.md K9-K11).

Every seam receives the :class:`~trio_agent.runtime.controller.TurnContext` explicitly and
runs inside the turn's cancel scope, so a cancel reaches it at its next checkpoint as
``trio.Cancelled``. A seam that wants to stop its own turn calls
``agent.cancel(CancelCause.hook(reason))``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..tools.base import ToolCall
from .controller import TurnContext

__all__ = ["AllowAll", "Approver", "Hooks", "Reject", "new_message"]


@attrs.frozen(slots=True)
class Reject:
    """Returned by :meth:`Hooks.pre_step` to refuse the step: the turn ends ``blocked``."""

    reason: str = ""


def new_message(text: str, source: str = "hook") -> dict[str, Any]:
    """A fresh inbox/step message ``{id, text, source}`` (for hooks that rewrite a batch)."""
    if type(text) is not str or type(source) is not str:
        raise TypeError("a message needs str text and str source")
    return {"id": f"m-{uuid.uuid4().hex[:16]}", "text": text, "source": source}


class Hooks:
    """The loop's hooks. Subclass and override what you need; the defaults change nothing."""

    async def pre_step(
        self, ctx: TurnContext, messages: Sequence[Mapping[str, Any]]
    ) -> Sequence[Mapping[str, Any]] | Reject | None:
        """Called between steps with the claimed batch (``ctx.step`` is the step about to
        start). Return ``None`` to enter it as is, a (possibly empty) list of messages to enter
        instead, or :class:`Reject` to end the turn ``blocked``. Claimed input is consumed
        whatever this returns."""
        return None

    async def assemble_prompt(self, ctx: TurnContext) -> str:
        """The system prompt of the step's model request (after ``user/message``)."""
        return ""

    async def turn_stopping(self, ctx: TurnContext) -> None:
        """Called when a step ended the turn and nothing is steered in: the last chance to
        ``steer`` (another step) or to cancel (the turn ends ``aborted``)."""
        return None


class Approver(Protocol):
    """Decides whether a requested call may run. Every call of an agent with an approver gets
    an ``approval/asked`` / ``approval/decided`` bracket before its ``tool/call``."""

    async def approve(self, call: ToolCall, ctx: TurnContext) -> bool: ...


class AllowAll:
    """An approver that allows every call (the bracket is still logged)."""

    async def approve(self, call: ToolCall, ctx: TurnContext) -> bool:
        return True
